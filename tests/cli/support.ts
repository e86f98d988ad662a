/**
 * Running the built `leasehold` command against a real test server: the CLI
 * is built once per test file with the same esbuild step as the package's
 * `bin` (scripts/build-cli.mjs), then run as a child process, so the tests
 * see what users get, stdin, stdout, stderr, signals and exit codes included.
 */

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../server/testing/process';
import { startTestServer, type TestServer } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';

export interface CliRun {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code (128 + n when ended by signal n) once the process ends. */
  readonly exited: Promise<number>;
  /** Resolves once `pattern` appears on stdout or stderr (rejects after `timeoutMs`). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

export class CliHarness {
  readonly dir = mkdtempSync(join(tmpdir(), 'leasehold-cli-'));
  readonly bin = join(this.dir, 'cli.mjs');
  /** XDG_CONFIG_HOME for every run: `login` writes here, never to the real home. */
  readonly configHome = join(this.dir, 'config');
  #terminals = 0;

  constructor(readonly server: TestServer) {
    const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-cli.mjs'), this.bin], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`building the CLI failed: ${built.stderr}`);
  }

  /** The environment a scripted user has: the server and its admin token, no colour, a private config folder. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
    const env: Record<string, string | undefined> = { PATH: process.env.PATH, HOME: this.dir, XDG_CONFIG_HOME: this.configHome, LEASEHOLD_URL: this.server.url, LEASEHOLD_TOKEN: this.server.token, NO_COLOR: '1' };
    for (const [k, v] of Object.entries(extra)) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    return env;
  }

  /** Starts `leasehold …args`; `input` is written to stdin (then closed) unless `keepStdin`. */
  start(args: readonly string[], opts: { env?: Record<string, string | undefined>; input?: string; keepStdin?: boolean } = {}): CliRun {
    const child = spawn(process.execPath, [this.bin, ...args], { env: this.env(opts.env) as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    const run = track(child);
    if (opts.input !== undefined) child.stdin!.write(opts.input);
    if (!opts.keepStdin) child.stdin!.end();
    return run;
  }

  /**
   * Starts `leasehold …args` on a pseudo-terminal of `columns` × `rows`, as
   * a person at a terminal runs it: `script` (util-linux) gives it one, so
   * stdout and stderr are a TTY and both arrive, as the terminal would get
   * them, on `stdout`. Check `HAS_SCRIPT` first.
   */
  startInTerminal(args: readonly string[], opts: { columns: number; rows: number; env?: Record<string, string | undefined> }): TerminalRun {
    const id = `tty-${++this.#terminals}`;
    const ttyFile = join(this.dir, `${id}.tty`);
    const pidFile = join(this.dir, `${id}.pid`);
    // No echo, so that typed keys (Ctrl-C) do not show up in the output. The
    // shell execs the CLI, so the pid it writes is the CLI's.
    const command = [`stty cols ${opts.columns} rows ${opts.rows} -echo`, `tty > ${shellQuote(ttyFile)}`, `echo $$ > ${shellQuote(pidFile)}`, `exec ${[process.execPath, this.bin, ...args].map(shellQuote).join(' ')}`].join(' && ');
    const child = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
      env: this.env({ TERM: 'xterm-256color', SHELL: '/bin/sh', ...opts.env }) as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const run = track(child) as TerminalRun;
    const ready = async (file: string): Promise<string> => waitFor(`${file} from the terminal's shell`, () => (existsSync(file) ? readFileSync(file, 'utf8').trim() : ''));
    return Object.assign(run, {
      async resize(columns: number, rows: number): Promise<void> {
        // Setting the size of the terminal is what a window resize does: the
        // kernel sends SIGWINCH to the program in the foreground.
        const r = spawnSync('stty', ['-F', await ready(ttyFile), 'cols', String(columns), 'rows', String(rows)], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`stty failed: ${r.stderr}`);
      },
      type(text: string): void {
        child.stdin!.write(text);
      },
      async pid(): Promise<number> {
        return Number(await ready(pidFile));
      },
      kill(): void {
        // script does not pass a signal on: end the CLI itself, then script.
        if (existsSync(pidFile)) {
          try {
            process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
          } catch {
            // already gone
          }
        }
        child.kill('SIGKILL');
      },
    });
  }

  /** Runs `leasehold …args` to its end. */
  async run(args: readonly string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const r = this.start(args, opts);
    const code = await r.exited;
    return { code, stdout: r.stdout, stderr: r.stderr };
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A CLI run on a pseudo-terminal (`CliHarness.startInTerminal`). */
export interface TerminalRun extends CliRun {
  /** Resizes the terminal, as dragging the window's corner does (the CLI gets SIGWINCH). */
  resize(columns: number, rows: number): Promise<void>;
  /** Types on the terminal: `\x03` is Ctrl-C. */
  type(text: string): void;
  /** The CLI's process id. */
  pid(): Promise<number>;
  /** Ends the CLI and the terminal at once, whatever state they are in (for cleanup after a failed test). */
  kill(): void;
}

/** Whether `script` from util-linux is installed to give a command a pseudo-terminal. */
export const HAS_SCRIPT = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') === true;

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Collects a child's output and lets a test wait for a pattern in it. */
function track(child: ChildProcess): CliRun {
  const watchers = new Set<() => void>();
  const run: CliRun = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => {
      child.once('close', (code, signal) => resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)));
    }),
    waitFor(pattern, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(run.stdout) || pattern.test(run.stderr)) {
            watchers.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`timed out waiting for ${pattern}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`));
        }, timeoutMs);
        watchers.add(check);
        check();
      });
    },
  };
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    run.stdout += d;
    for (const w of [...watchers]) w();
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    run.stderr += d;
    for (const w of [...watchers]) w();
  });
  return run;
}

/** Parses `--json` list output: one JSON document per line. */
export function jsonLines<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

/** Table output as rows of cells (split on runs of two or more spaces). */
export function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.trim().split(/\s{2,}/));
}

/** A real server and the built CLI pointed at it; `stop` ends both. */
export async function startCli(): Promise<{ s: TestServer; cli: CliHarness; stop(): Promise<void> }> {
  const s = await startTestServer();
  const cli = new CliHarness(s);
  return {
    s,
    cli,
    async stop() {
      cli.close();
      await s.close();
    },
  };
}
