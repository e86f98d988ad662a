/**
 * Doc examples cannot rot: every fenced `ts`/`tsx` block of README.md and
 * docs/*.md is compiled, as a reader would, against the built package
 * (`leasehold/client`, `leasehold/react`, `leasehold/widget.css`) under the
 * settings `tsc --init` writes (NodeNext, strict, exactOptionalPropertyTypes,
 * noUncheckedIndexedAccess). Blocks whose first line says "a complete
 * program" are also compiled to ES2022 and run on this Node against a real
 * server.
 *
 * Fragments continue the prose around them: `prelude.d.ts` below declares
 * what the surrounding text has already set up (a `client`, a `session`, an
 * `observer`) and the application's own functions the examples call
 * (`renderPage`, `writeDownstream`, `rebalance`). Names the SDK exports are
 * never declared there: a block must import what it uses.
 */

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from '../../server/testing/harness';
import { ROOT } from '../../server/testing/process';
import { buildSdk, docBlocks, docFiles, TSC, tscInit, type DocBlock } from './examples';

const PRELUDE = `import type { InventoryObserver, LeaseView, ObservedChange, Session, LeaseholdClient } from 'leasehold/client';
declare global {
  /** Made as in "The client" (docs/sdk.md). */
  const client: LeaseholdClient;
  /** Opened as in "Workers: sessions and leases". */
  const session: Session;
  /** Made as in "Fleet managers: observing the inventory". */
  const observer: InventoryObserver;
  /** An embed token the page was given (client.createEmbedToken). */
  const embedToken: string;
  /** The application's own work. */
  function renderPage(doc: string, page: number, opts: { signal: AbortSignal; fencingToken: number }): Promise<void>;
  function writeDownstream(opts: { fencingToken: number; signal: AbortSignal }): Promise<void>;
  function rebalance(view: ReadonlyMap<string, LeaseView>, changes: readonly ObservedChange[]): void;
}
`;

let dir: string;
const blocks: DocBlock[] = docFiles().flatMap((f) => docBlocks(f));
const fileOf = new Map<DocBlock, string>();

function nameFor(b: DocBlock): string {
  return `${b.file.replace(/[^\w.-]+/g, '_')}_L${b.line}.${b.lang === 'tsx' ? 'tsx' : 'ts'}`;
}

/** A project like a reader's: the package and the type packages in node_modules, the tsconfig from tsc --init. */
function project(name: string, target?: string): string {
  const p = join(dir, name);
  mkdirSync(join(p, 'node_modules'), { recursive: true });
  symlinkSync(buildSdk(), join(p, 'node_modules', 'leasehold'), 'dir');
  symlinkSync(join(ROOT, 'node_modules', '@types'), join(p, 'node_modules', '@types'), 'dir');
  writeFileSync(join(p, 'package.json'), JSON.stringify({ name: `doc-examples-${name}`, private: true, type: 'module' }));
  tscInit(p, target);
  return p;
}

function compile(p: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [TSC, '-p', '.'], { cwd: p, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

let s: TestServer;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-docs-'));
  s = await startTestServer();
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s.close();
});

test('the README and docs hold TypeScript examples, and some are complete programs', () => {
  assert.ok(blocks.length >= 10, `found ${blocks.length} blocks`);
  assert.ok(blocks.some((b) => b.file === 'README.md'));
  assert.ok(blocks.filter((b) => b.runnable).length >= 2);
});

test('every ts and tsx example in README.md and docs/*.md compiles under tsc --init settings against the built package', () => {
  const p = project('check');
  writeFileSync(join(p, 'prelude.d.ts'), `${PRELUDE}export {};\n`);
  for (const b of blocks) {
    const name = nameFor(b);
    fileOf.set(b, name);
    writeFileSync(join(p, name), `${b.code}\n`);
  }
  const { status, output } = compile(p);
  // Name the Markdown file and line of each failing example.
  const located = output.replace(/^(\S+?)_L(\d+)\.tsx?\((\d+),(\d+)\)/gm, (_m, file: string, line: string, row: string) => `${file.replace(/_md$/, '.md').replace(/^docs_/, 'docs/')}:${Number(line) + Number(row)}`);
  assert.equal(status, 0, `doc examples that do not compile:\n${located}`);
});

test('docs/sdk.md\'s "The client" and "Workers" examples compile as one file too: together they import each name once', () => {
  const sdk = blocks.filter((b) => b.file === 'docs/sdk.md');
  const clientBlock = sdk.find((b) => b.code.includes('const client = new LeaseholdClient('));
  const workerBlock = sdk.find((b) => b.code.includes('await using session = await client.openSession('));
  assert.ok(clientBlock && workerBlock, 'docs/sdk.md has both examples');
  assert.ok(clientBlock.line < workerBlock.line, 'the client is made before the worker uses it');
  const p = project('together');
  writeFileSync(join(p, 'prelude.d.ts'), `${PRELUDE}export {};\n`);
  writeFileSync(join(p, 'client-and-worker.ts'), `${clientBlock.code}\n${workerBlock.code}\n`);
  const { status, output } = compile(p);
  assert.equal(status, 0, `docs/sdk.md:${clientBlock.line} and docs/sdk.md:${workerBlock.line} in one file do not compile:\n${output}`);
});

test('the complete programs compile to ES2022 and run on this Node against a real server', async () => {
  const p = project('run', 'es2022');
  const runnable = blocks.filter((b) => b.runnable);
  for (const b of runnable) writeFileSync(join(p, nameFor(b)), `${b.code}\n`);
  const { status, output } = compile(p);
  assert.equal(status, 0, output);
  for (const b of runnable) {
    const js = nameFor(b).replace(/\.tsx?$/, '.js');
    const { stdout } = await promisify(execFile)(process.execPath, [js], { cwd: p, env: { ...process.env, LEASEHOLD_URL: s.url, LEASEHOLD_TOKEN: s.token }, timeout: 60_000 }).catch((e: { stdout?: string; stderr?: string; message: string }) => {
      assert.fail(`${b.file}:${b.line} failed to run: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    });
    assert.match(stdout, /holding lease:\/\/\S+ with fencing token \d+/, `${b.file}:${b.line}`);
  }
});
