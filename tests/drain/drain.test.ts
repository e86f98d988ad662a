/**
 * The graceful drain of a real server process (`node dist/server.mjs`) on
 * SIGTERM, on both stores: readiness answers 503 at once while everything is
 * still served for LEASEHOLD_DRAIN_MS; then streams get `closed`
 * (`shutdown`), the waiting acquire is answered, and the process exits 0.
 * On PostgreSQL a second instance keeps serving the same leases throughout.
 */

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { call, leasePath, rid, tempDir, type Reply } from '../../server/testing/harness';
import { killServers, spawnServer, stopServer, type ServerProcess } from '../../server/testing/process';
import { startInstances, type Instances } from '../../server/testing/instances';
import { SseClient } from '../../server/testing/sse';
import { TIME_FACTOR, waitFor } from '../../server/testing/wait';

// The drain window scales with the CI time factor: the test does several requests and a stream read inside it, timed by the wall clock.
const DRAIN_MS = 1_500 * TIME_FACTOR;
const dirs: string[] = [];
after(() => {
  killServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function exited(proc: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve(proc.exitCode);
    else proc.once('exit', (code) => resolve(code));
  });
}

/** The messages of the process's JSON log lines, in order. */
function messages(p: ServerProcess): string[] {
  return p
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l).message as string);
}

/** The drain sequence against server `p` (called with `token`); `other`, when given, is asked for readiness along the way. */
async function drainSequence(p: ServerProcess, token: string, other?: { url: string }): Promise<void> {
  const api = (method: string, path: string, body?: unknown): Promise<Reply> => call(p.url, method, path, body, { token });
  const a = (await api('POST', '/api/v1/sessions', { owner_id: 'a', ttl_ms: 300_000 })).body.session.session_id;
  const b = (await api('POST', '/api/v1/sessions', { owner_id: 'b', ttl_ms: 300_000 })).body.session.session_id;
  const route = `lease://acme/drain/${Math.random().toString(36).slice(2)}`;
  const held = await api('POST', leasePath(route, 'acquire'), { session_id: a, request_id: rid(), ttl_ms: 600_000 });
  assert.equal(held.status, 200);
  let waitingAnswered = false;
  const waiting = api('POST', leasePath(route, 'acquire'), { session_id: b, request_id: rid(), wait_ms: 30_000 }).finally(() => (waitingAnswered = true));
  await waitFor('the second acquire to wait', async () => (await api('GET', leasePath(route))).body.lease?.waiters, (n) => n === 1);
  const stream = await SseClient.open(p.url, '/api/v1/inventory/stream?selector=lease://acme/**', { token });
  await stream.waitFor((e) => e.event === 'subscribed');
  assert.equal((await call(p.url, 'GET', '/api/v1/health/ready')).status, 200);

  const t0 = Date.now();
  const exit = exited(p.proc);
  p.proc.kill('SIGTERM');
  // Readiness turns at once (the first probe after the signal is delivered).
  let ready = await call(p.url, 'GET', '/api/v1/health/ready');
  for (let i = 0; i < 50 && ready.status === 200; i++) ready = await call(p.url, 'GET', '/api/v1/health/ready');
  assert.deepEqual([ready.status, ready.body.status], [503, 'draining']);
  assert.ok(Date.now() - t0 < DRAIN_MS / 2, `ready turned 503 after ${Date.now() - t0} ms`);

  // Still serving: a new acquire, the live probe, the stream open, the waiter waiting.
  const second = await api('POST', leasePath(`${route}-2`, 'acquire'), { session_id: a, request_id: rid() });
  assert.equal(second.status, 200, second.text);
  assert.equal((await call(p.url, 'GET', '/api/v1/health/live')).status, 200);
  await stream.waitFor((e) => e.event === 'change' && (e.data as { route?: string }).route === `${route}-2`);
  if (other) assert.equal((await call(other.url, 'GET', '/api/v1/health/ready')).status, 200, 'the other instance stays ready');
  assert.equal(waitingAnswered, false);
  assert.ok(Date.now() - t0 < DRAIN_MS, 'all of that within the drain window');
  assert.equal(stream.events.some((e) => e.event === 'closed'), false);

  // Then: streams closed (shutdown), the waiting acquire answered, exit 0.
  await stream.done;
  const closedAt = Date.now() - t0;
  const last = stream.events.at(-1);
  assert.deepEqual([last?.event, last?.data], ['closed', { reason: 'shutdown' }]);
  assert.ok(closedAt >= DRAIN_MS - 100, `streams closed after ${closedAt} ms, not before the drain window ended`);
  const w = await waiting;
  assert.deepEqual([w.status, w.body.code], [503, 'backend_unavailable']);
  assert.equal(await exit, 0);
  const said = messages(p);
  const order = ['draining: readiness answers 503, still serving', 'shutting down: closing streams, answering in-flight requests', 'stopped'].map((m) => said.indexOf(m));
  assert.ok(order.every((i, k) => i >= 0 && (k === 0 || i > order[k - 1]!)), said.join('\n'));
}

describe('SQLite', () => {
  test('SIGTERM: ready 503 while still serving for LEASEHOLD_DRAIN_MS, then streams closed, the waiter answered, exit 0; the writes survive', async () => {
    const d = tempDir('leasehold-drain-');
    dirs.push(d);
    const token = `lh_drain_${Math.random().toString(36).slice(2)}_xxxx`;
    const env = { LEASEHOLD_DATA_DIR: d, LEASEHOLD_BOOTSTRAP_TOKEN: token, LEASEHOLD_DRAIN_MS: String(DRAIN_MS) };
    const p = await spawnServer(env);
    await drainSequence(p, token);
    const again = await spawnServer(env);
    const leases = await call(again.url, 'GET', `/api/v1/leases?selector=${encodeURIComponent('lease://acme/drain/**')}`, undefined, { token });
    assert.equal(leases.body.items.length, 2, 'both acquisitions, the one during the drain too, were kept');
    await stopServer(again.proc);
  });

  test('a second signal during the drain exits at once', async () => {
    const d = tempDir('leasehold-drain-');
    dirs.push(d);
    const p = await spawnServer({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_DRAIN_MS: '60000' });
    const exit = exited(p.proc);
    p.proc.kill('SIGTERM');
    let ready = await call(p.url, 'GET', '/api/v1/health/ready');
    while (ready.status === 200) ready = await call(p.url, 'GET', '/api/v1/health/ready');
    const t0 = Date.now();
    p.proc.kill('SIGINT');
    assert.equal(await exit, 1);
    assert.ok(Date.now() - t0 < 2_000, `exited after ${Date.now() - t0} ms`);
    assert.ok(messages(p).includes('second signal: exiting at once'));
  });
});

describe('PostgreSQL, two instances', () => {
  let inst: Instances;
  after(async () => inst?.close());

  test('SIGTERM on A: A drains as on SQLite while B stays ready; B then serves A’s leases', async () => {
    inst = await startInstances(2, { LEASEHOLD_DRAIN_MS: String(DRAIN_MS) });
    const [a, b] = inst.list as [(typeof inst.list)[0], (typeof inst.list)[0]];
    await drainSequence(a.proc, inst.token, b);
    const leases = await b.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://acme/drain/**')}`);
    assert.equal(leases.body.items.length, 2);
    assert.equal((await b.call('GET', '/api/v1/health/ready')).status, 200);
  });
});
