/**
 * The SDK package installs and works for a new team: `npm pack` of
 * dist/sdk, installed offline into a fresh project set up by `tsc --init`
 * (NodeNext, strict, exactOptionalPropertyTypes), compiles a file using
 * `leasehold/client`, `leasehold/react` and `leasehold/widget.css`; the
 * README shipped in the tarball (docs/package-readme.md) is complete for a
 * reader who has only the tarball, its every TypeScript example compiles
 * there on its own, and its complete programs run on the oldest Node the
 * docs claim, against a real server.
 */

import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { leasePath, startTestServer, type TestServer } from '../../server/testing/harness';
import { ROOT } from '../../server/testing/process';
import { blocksOf, buildSdk, TSC, tscInit, type DocBlock } from '../docs/examples';
import { InventoryObserver, LeaseHandle, LeaseholdClient, LiveFeed, Policies, Session, Subscription } from '../../lib/client/index';

let s: TestServer;
let dir: string;
let project: string;
let tarball: string;
let sdkDir: string;

function sh(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

before(async () => {
  s = await startTestServer();
  dir = mkdtempSync(join(tmpdir(), 'leasehold-pack-'));
  const sdk = buildSdk();
  sdkDir = sdk;
  sh('npm', ['pack', sdk, '--pack-destination', dir, '--silent'], dir);
  tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
  project = join(dir, 'app');
  sh('mkdir', ['-p', project], dir);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch-app', private: true, type: 'module' }));
  // Offline: the tarball has no dependencies; TypeScript and the type
  // packages come from this repository's node_modules, never the network.
  const local = (name: string): string => join(ROOT, 'node_modules', name);
  sh('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball, local('typescript'), local('@types/node'), local('@types/react')], project);
  tscInit(project);
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s.close();
});

test('the tarball holds the package: README, LICENSE, engines, files, bin and typed exports for every subpath', () => {
  const listing = sh('tar', ['-tzf', tarball], dir).split('\n');
  for (const f of ['package/README.md', 'package/LICENSE', 'package/THIRD-PARTY-NOTICES.md', 'package/cli.mjs', 'package/client/index.js', 'package/react/index.js', 'package/widget.css', 'package/widget.css.d.ts', 'package/types/client/index.d.ts', 'package/types/react/index.d.ts']) {
    assert.ok(listing.includes(f), `${f} is packed`);
  }
  assert.ok(!listing.some((f) => f.endsWith('.test.js') || f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no sources or tests');
  const pkg = JSON.parse(readFileSync(join(project, 'node_modules', 'leasehold', 'package.json'), 'utf8'));
  assert.equal(pkg.engines.node, '>=20');
  assert.equal(pkg.license, 'MIT');
  assert.deepEqual(pkg.bin, { leasehold: './cli.mjs' });
  for (const [subpath, target] of Object.entries(pkg.exports as Record<string, unknown>)) {
    if (subpath === './package.json') continue;
    assert.equal(typeof (target as { types?: unknown }).types, 'string', `${subpath} has types`);
  }
  assert.deepEqual(Object.keys(pkg.dependencies ?? {}), [], 'no runtime dependencies');
});

test('the packed package.json is publishable: not private, public access, and files lists exactly what the tarball holds', () => {
  const pkg = JSON.parse(sh('tar', ['-xzOf', tarball, 'package/package.json'], dir));
  assert.equal(pkg.private, undefined, 'not private: npm publish would refuse it');
  assert.deepEqual(pkg.publishConfig, { access: 'public' });
  const packed = sh('tar', ['-tzf', tarball], dir).split('\n').filter((f) => f !== '' && !f.endsWith('/')).map((f) => f.replace(/^package\//, ''));
  // What each entry of files covers: a folder (trailing slash) everything under it, a file itself.
  const covers = (entry: string, f: string): boolean => (entry.endsWith('/') ? f.startsWith(entry) : f === entry);
  const files = pkg.files as string[];
  for (const f of packed) {
    if (f === 'package.json') continue; // npm always packs it
    assert.ok(files.some((entry) => covers(entry, f)), `${f} is packed but not in files`);
  }
  for (const entry of files) assert.ok(packed.some((f) => covers(entry, f)), `files lists ${entry}, which the package does not hold`);
  // And the built folder holds nothing that stays out of the tarball.
  const built = readdirSync(sdkDir, { withFileTypes: true }).map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).filter((n) => n !== 'package.json');
  assert.deepEqual(built.sort(), [...files].sort(), 'files names every top-level entry of dist/sdk');
});

test('a file using leasehold/client, leasehold/react and leasehold/widget.css compiles under tsc --init settings', () => {
  writeFileSync(
    join(project, 'app.tsx'),
    `import { LeaseholdClient, LeaseholdError, isLeaseholdError, type LeaseHandle, type LeaseView } from 'leasehold/client';
import { InventoryWidget, LeaseholdProvider, useLeaseInventory } from 'leasehold/react';
import 'leasehold/widget.css';

// exactOptionalPropertyTypes: an environment variable may be undefined.
const client = new LeaseholdClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.LEASEHOLD_TOKEN });

export function Rows() {
  const { items, state } = useLeaseInventory('lease://acme/renderers/*');
  return <ul data-state={state}>{items.map((l: LeaseView) => <li key={l.route}>{l.route}: {l.owner_id}</li>)}</ul>;
}
export const App = () => (
  <LeaseholdProvider client={client}>
    <Rows />
    <InventoryWidget selector="lease://acme/renderers/*" theme="dark" />
  </LeaseholdProvider>
);
export async function hold(route: string): Promise<number> {
  await using session = await client.openSession({ ownerId: 'app', ttlMs: 15_000 });
  await using lease: LeaseHandle = await session.acquire(route, { ttlMs: 30_000, metadata: { host: 'a' } });
  return lease.fencingToken;
}
export const code = (e: unknown): string | undefined => (isLeaseholdError(e) ? e.code : e instanceof LeaseholdError ? 'never' : undefined);
`,
  );
  writeFileSync(join(project, 'wrong.ts'), `import { LeaseholdClient } from 'leasehold/client';\n// @ts-expect-error the token must be a string\nnew LeaseholdClient({ baseUrl: 'http://x', token: 42 });\n`);
  const r = spawnSync(process.execPath, [TSC, '-p', '.'], { cwd: project, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc:\n${r.stdout}${r.stderr}`);
});

test('a stylesheet import needs its declaration: without widget.css.d.ts the same project does not compile', () => {
  const probe = join(project, 'node_modules', 'leasehold', 'widget.css.d.ts');
  const saved = readFileSync(probe, 'utf8');
  writeFileSync(join(project, 'css-only.ts'), "import 'leasehold/widget.css';\n");
  rmSync(probe);
  try {
    const r = spawnSync(process.execPath, [TSC, '-p', '.', '--noEmit'], { cwd: project, encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /leasehold\/widget\.css/);
  } finally {
    writeFileSync(probe, saved);
    rmSync(join(project, 'css-only.ts'));
  }
});

/** The README as packed: what a reader of the tarball has. */
function packedReadme(): string {
  return sh('tar', ['-xzOf', tarball, 'package/README.md'], dir);
}

function readmeBlocks(): DocBlock[] {
  return blocksOf(packedReadme(), 'README.md (packed)');
}

test('the packed README stands alone: no pointer to files the reader does not have, and it covers release requests, policies, lock-delay, state, lostReason, the signal\'s reasons and the errors', () => {
  const readme = packedReadme();
  assert.equal(readme, readFileSync(join(ROOT, 'docs', 'package-readme.md'), 'utf8'), 'the README is docs/package-readme.md');
  assert.doesNotMatch(readme, /docs\/[\w-]+\.md|tests\/|lib\/client/, 'no repository paths: the tarball has none of them');
  for (const term of ['requestRelease', 'releaseRequested', 'ReleaseRequestedEvent', 'client.policies', 'lockDelayUntil', 'lockDelayMs', 'lostReason', '`state`', 'also aborts on a clean `release()`', 'fromServer', 'retryable', 'retryAfterMs', 'correlationId', 'session_lost', 'lease_lost', 'observeInventory', 'onRecovery']) {
    assert.ok(readme.includes(term), `the README mentions ${JSON.stringify(term)}`);
  }
});

test('every public call of the client and its objects appears in a README example', () => {
  const code = readmeBlocks().map((b) => b.code).join('\n');
  // Members that are not for users: made by the SDK for itself (marked @internal in the sources).
  const internal = new Set(['LeaseHandle.end', 'LeaseHandle.noteReleaseRequest', 'LeaseHandle.joinBatch', 'LeaseHandle.renewDueAt', 'LeaseHandle.settleBatch', 'LeaseHandle.renewAlone']);
  const missing: string[] = [];
  for (const cls of [LeaseholdClient, Policies, Session, LeaseHandle, InventoryObserver, Subscription, LiveFeed]) {
    for (const name of Object.getOwnPropertyNames(cls.prototype)) {
      if (name === 'constructor' || internal.has(`${cls.name}.${name}`)) continue;
      const d = Object.getOwnPropertyDescriptor(cls.prototype, name)!;
      const used = typeof d.value === 'function' ? code.includes(`.${name}(`) : code.includes(`.${name}`);
      if (!used) missing.push(`${cls.name}.${name}`);
    }
  }
  assert.deepEqual(missing, [], 'public members without an example in the README');
});

test("the packed README's TypeScript examples each compile on their own against the tarball, under tsc --init settings", () => {
  const blocks = readmeBlocks();
  assert.ok(blocks.length >= 10, `found ${blocks.length} blocks`);
  // Each example in a folder of its own project: nothing declared around it,
  // one file per example, the package from the installed tarball.
  const readmeDir = join(project, 'readme');
  mkdirSync(readmeDir, { recursive: true });
  copyFileSync(join(project, 'tsconfig.json'), join(readmeDir, 'tsconfig.json'));
  const names = new Map<string, DocBlock>();
  for (const b of blocks) {
    const name = `readme_L${b.line}.${b.lang === 'tsx' ? 'tsx' : 'ts'}`;
    names.set(name, b);
    writeFileSync(join(readmeDir, name), `${b.code}\n`);
  }
  const r = spawnSync(process.execPath, [TSC, '-p', '.', '--noEmit'], { cwd: readmeDir, encoding: 'utf8' });
  const located = `${r.stdout}${r.stderr}`.replace(/^readme_L(\d+)\.tsx?\((\d+),(\d+)\)/gm, (_m, line: string, row: string) => `README.md:${Number(line) + Number(row)}`);
  assert.equal(r.status, 0, `README examples that do not compile:\n${located}`);
});

test("the README's complete programs run on the oldest Node the docs claim, against a real server: the worker logs no loss on its own release", async () => {
  const floor = Number(/^>=(\d+)/.exec(JSON.parse(readFileSync(join(project, 'node_modules', 'leasehold', 'package.json'), 'utf8')).engines.node)![1]);
  assert.equal(Number(process.versions.node.split('.')[0]), floor, `the docs claim Node ${floor}; run this test on Node ${floor} to check the claim`);
  const blocks = readmeBlocks();
  const worker = blocks.find((b) => b.code.startsWith('// worker.ts'));
  const releasing = blocks.find((b) => b.code.startsWith('// release-request.ts'));
  assert.ok(worker?.runnable && releasing?.runnable, 'the README has the worker and the release-request programs');
  // tsc --init keeps `await using` as written, which Node 20 cannot parse: the programs that run as written here are the others.
  assert.ok(blocks.filter((b) => b.runnable && b.code.includes('await using')).length >= 1, 'the await using form is shown too');
  writeFileSync(join(project, 'worker.ts'), worker.code);
  writeFileSync(join(project, 'release-request.ts'), releasing.code);
  sh(process.execPath, [TSC, '-p', '.'], project);
  const env = { ...process.env, LEASEHOLD_URL: s.url, LEASEHOLD_TOKEN: s.token };
  // Asynchronously: the server runs in this process and must keep answering.
  const run = (file: string) => promisify(execFile)(process.execPath, [file], { cwd: project, env, timeout: 60_000 });

  const w = await run('worker.js');
  assert.match(w.stdout, /^holding lease:\/\/acme\/reports\/nightly with fencing token \d+\n$/);
  assert.equal(w.stderr, '', 'the release aborted the signal with `closed`: nothing logged as lost');
  const checkpoint = await s.call('GET', leasePath('lease://acme/reports/nightly', 'checkpoint'));
  assert.deepEqual(checkpoint.body.checkpoint.value, { step: 'done' });
  assert.equal((await s.call('GET', leasePath('lease://acme/reports/nightly'))).status, 404, 'released');

  const r = await run('release-request.js');
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^holding lease:\/\/acme\/queues\/emails with fencing token \d+$/);
  assert.match(lines[1]!, /^requested at \d{4}-/);
  assert.equal(lines[2], 'asked to let go: rebalancing the queue workers');
  assert.match(lines[3]!, /^released after [1-9]\d* items \(rebalancing the queue workers\)$/);
  assert.equal(r.stderr, '', 'nothing logged as lost');
  const left = await s.call('GET', leasePath('lease://acme/queues/emails', 'checkpoint'));
  assert.ok(left.body.checkpoint.value.next >= 1, 'the next holder resumes from the checkpoint');
  assert.equal((await s.call('GET', leasePath('lease://acme/queues/emails'))).status, 404, 'released');
});

test('the package installs its bin: npx leasehold prints its version and help', () => {
  const version = sh(join(project, 'node_modules', '.bin', 'leasehold'), ['--version'], project).trim();
  assert.equal(version, JSON.parse(readFileSync(join(project, 'node_modules', 'leasehold', 'package.json'), 'utf8')).version);
  assert.match(sh(join(project, 'node_modules', '.bin', 'leasehold'), ['run', '--help'], project), /LEASEHOLD_FENCING_TOKEN/);
});
