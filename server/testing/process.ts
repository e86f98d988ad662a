/**
 * The real server as a child process (`node dist/server.mjs`), for tests that
 * must kill, restart or inspect the process itself.
 */

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testLogDir } from './log-capture';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SERVER = join(ROOT, 'dist', 'server.mjs');

/**
 * Set by scripts/test.sh after `npm run build`: dist/ is fresh, and test
 * files running side by side must not rewrite what another is starting.
 */
export const PREBUILT = process.env.LEASEHOLD_TEST_PREBUILT === '1';

let built = PREBUILT;
/** Bundle server/main.ts into dist/server.mjs (under a second), once per test process, so tests never run a stale build. */
export function ensureServerBuilt(): void {
  if (built) return;
  const r = spawnSync('npm', ['run', '--silent', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm run build:server failed');
  built = true;
}

export interface ServerProcess {
  proc: ChildProcess;
  url: string;
  /** What the process printed so far (stdout and stderr; the last MiB). */
  output(): string;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

/** Kill every server this test process started. */
export function killServers(): void {
  for (const p of children) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
}

/** No drain pause on SIGTERM unless a test asks for one (tests/drain). */
const BASE_ENV: Record<string, string> = { NODE_ENV: 'production', LEASEHOLD_CONSOLE: 'off', HOST: '127.0.0.1', PORT: '0', LEASEHOLD_DRAIN_MS: '0' };

let launched = 0;

/**
 * Start `node <args>` with the production environment plus `env`, keeping
 * (the tail of) what it prints; under a capturing run, every request line
 * too, all of it into the run's log directory (server/testing/log-capture.ts).
 */
function launch(args: string[], env: Record<string, string>): { proc: ChildProcess; output: () => string } {
  const dir = testLogDir();
  const capture = dir ? { LEASEHOLD_ACCESS_LOG: 'on', LEASEHOLD_LOG_LEVEL: 'debug' } : {};
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...BASE_ENV, ...capture, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(proc);
  const file = dir ? createWriteStream(join(dir, `proc-${process.pid}-${++launched}.log`)) : undefined;
  let out = '';
  const keep = (d: Buffer) => {
    file?.write(d);
    out = (out + d.toString()).slice(-1_048_576);
  };
  proc.once('close', () => file?.end());
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  return { proc, output: () => out };
}

/**
 * Start a Node server process (`node <args>`) and resolve once it prints
 * `listening on http://…`. Used for Leasehold itself and for the benchmark's
 * floor server.
 */
export function spawnListening(name: string, args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const { proc, output } = launch(args, env);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms:\n${output()}`)), timeoutMs);
    const onExit = (code: number | null, sig: string | null) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? sig}) before listening:\n${output()}`));
    };
    proc.once('exit', onExit);
    proc.stdout!.on('data', function watch() {
      const m = /listening on (http:\/\/[^\s,)"]+)/.exec(output());
      if (!m) return;
      proc.stdout!.off('data', watch);
      proc.off('exit', onExit);
      clearTimeout(timer);
      resolve({ proc, url: new URL(m[1]!).origin, output });
    });
  });
}

/** Run `node dist/server.mjs` (API only unless env says otherwise) on a free port; resolves once it listens. */
export function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  ensureServerBuilt();
  return spawnListening('server', [SERVER], env);
}

/** Run the server expecting it to exit at once; resolves with its exit code and output. */
export function runServerToExit(env: Record<string, string>, timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  ensureServerBuilt();
  const { proc, output } = launch([SERVER], env);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not exit within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output: output() });
    });
  });
}

/** Send a signal and wait for the process to exit; resolves with its exit code, or rejects after `timeoutMs`. */
export function stopServer(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
    const timer = setTimeout(() => reject(new Error(`server still running ${timeoutMs} ms after ${signal}`)), timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    proc.kill(signal);
  });
}

/**
 * Runs a script's main to its end and exits: 0 when it resolves; 1 when it
 * throws, after printing the error (every server it started is killed on exit).
 */
export function runMain(main: () => Promise<void>, label = 'bench'): void {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(`${label}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      process.exit(1);
    },
  );
}
