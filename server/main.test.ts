/**
 * The server process as users start it (`node dist/server.mjs`): bootstrap
 * token shown once and kept in a 0600 file, one process per data directory,
 * invalid configuration refused with the variable's name, clean SIGTERM.
 */

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { call, leasePath, rid, tempDir } from './testing/harness';
import { killServers, runServerToExit, spawnServer, stopServer } from './testing/process';
import { SseClient } from './testing/sse';
import { waitFor } from './testing/wait';
import { createTestDatabase } from './testing/pg';

const dirs: string[] = [];
after(() => {
  killServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dir(): string {
  const d = tempDir('leasehold-main-');
  dirs.push(d);
  return d;
}

test('first start shows the generated bootstrap admin token once, writes it to a 0600 file, and keeps it out of every log line', async () => {
  const d = dir();
  const first = await spawnServer({ LEASEHOLD_DATA_DIR: d });
  const file = join(d, 'admin-token');
  const token = readFileSync(file, 'utf8').trim();
  assert.match(token, /^lh_/);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const line = first.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => /bootstrap admin token/.test(l.message));
  assert.equal(line?.file, file, 'the log says where the token is');
  const lines = first.output().split('\n');
  assert.equal(lines.filter((l) => l.includes(token)).length, 1, 'the token is shown exactly once');
  assert.equal(lines.some((l) => l.startsWith('{') && l.includes(token)), false, 'no log line carries the token');
  const who = await call(first.url, 'GET', '/api/v1/auth/whoami', undefined, { token });
  assert.deepEqual([who.status, who.body.family, who.body.root, who.body.grants], [200, 'default', true, ['lease://**#admin']]);
  assert.equal(await stopServer(first.proc), 0);

  const second = await spawnServer({ LEASEHOLD_DATA_DIR: d });
  assert.equal(second.output().includes(token), false, 'a restart never shows the token again');
  assert.equal((await call(second.url, 'GET', '/api/v1/auth/whoami', undefined, { token })).status, 200);
  await stopServer(second.proc);
});

test('a bootstrap token given by LEASEHOLD_BOOTSTRAP_TOKEN is never printed nor written to a file', async () => {
  const d = dir();
  const given = `lh_given_${Math.random().toString(36).slice(2)}_operator`;
  const s = await spawnServer({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_BOOTSTRAP_TOKEN: given });
  assert.equal((await call(s.url, 'GET', '/api/v1/auth/whoami', undefined, { token: given })).status, 200, 'the given token works');
  assert.equal(s.output().includes(given), false, 'the given token is not on stdout or stderr');
  assert.match(s.output(), /created from LEASEHOLD_BOOTSTRAP_TOKEN \(not shown\)/);
  assert.equal(existsSync(join(d, 'admin-token')), false, 'no admin-token file holds it');
  await stopServer(s.proc);
});

test('postgres: a data directory that does not exist yet is created, and the bootstrap token written there', async () => {
  const db = await createTestDatabase();
  try {
    const d = join(dir(), 'fresh', '.data');
    const srv = await spawnServer({ LEASEHOLD_DATABASE_URL: db.url, LEASEHOLD_DATA_DIR: d });
    const token = readFileSync(join(d, 'admin-token'), 'utf8').trim();
    assert.equal(statSync(d).mode & 0o777, 0o700);
    assert.equal((await call(srv.url, 'GET', '/api/v1/auth/whoami', undefined, { token })).status, 200);
    assert.equal(await stopServer(srv.proc), 0);
  } finally {
    await db.drop();
  }
});

test('a second process on the same data directory refuses to start', async () => {
  const d = dir();
  const owner = await spawnServer({ LEASEHOLD_DATA_DIR: d });
  const intruder = await runServerToExit({ LEASEHOLD_DATA_DIR: d });
  assert.notEqual(intruder.code, 0);
  assert.match(intruder.output, /in use by another Leasehold process/);
  assert.equal((await call(owner.url, 'GET', '/api/v1/health')).status, 200, 'the owner is unaffected');
  await stopServer(owner.proc);
});

for (const [name, value] of [
  ['PORT', 'eighty'],
  ['LEASEHOLD_IDEMPOTENCY_TTL_S', '60'],
  ['LEASEHOLD_SYNC', 'sometimes'],
  ['LEASEHOLD_PUBLIC_ORIGIN', 'not a url'],
  ['LEASEHOLD_METRICS', 'yes'],
  ['LEASEHOLD_METRICS_PUBLIC', 'on'],
  ['LEASEHOLD_LOG_FORMAT', 'xml'],
  ['LEASEHOLD_LOG_LEVEL', 'loud'],
  ['LEASEHOLD_ACCESS_LOG', 'yes'],
  ['LEASEHOLD_SLOW_REQUEST_MS', '0'],
  ['LEASEHOLD_DRAIN_MS', '-1'],
] as const) {
  test(`an invalid ${name} stops the server with a message naming it`, async () => {
    const r = await runServerToExit({ LEASEHOLD_DATA_DIR: dir(), [name]: value });
    assert.equal(r.code, 2);
    assert.match(r.output, new RegExp(`invalid ${name}`));
  });
}

test('LEASEHOLD_METRICS=off: /api/metrics is 404; LEASEHOLD_METRICS_PUBLIC=true: served without a token', async () => {
  const off = await spawnServer({ LEASEHOLD_DATA_DIR: dir(), LEASEHOLD_METRICS: 'off' });
  const r = await call(off.url, 'GET', '/api/metrics');
  assert.deepEqual([r.status, r.body.code], [404, 'not_found']);
  assert.match(off.output(), /metrics off/);
  await stopServer(off.proc);
  const pub = await spawnServer({ LEASEHOLD_DATA_DIR: dir(), LEASEHOLD_METRICS_PUBLIC: 'true' });
  const p = await call(pub.url, 'GET', '/api/metrics');
  assert.equal(p.status, 200);
  assert.match(p.text, /^# HELP leasehold_/m);
  await stopServer(pub.proc);
});

test('SIGTERM answers a waiting acquire, closes connections and exits 0; the next start sees every write', async () => {
  const d = dir();
  const token = `lh_main_test_${Math.random().toString(36).slice(2)}_xx`;
  const s = await spawnServer({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_BOOTSTRAP_TOKEN: token });
  const api = (method: string, path: string, body?: unknown) => call(s.url, method, path, body, { token });
  const a = (await api('POST', '/api/v1/sessions', { owner_id: 'a', ttl_ms: 300_000 })).body.session.session_id;
  const b = (await api('POST', '/api/v1/sessions', { owner_id: 'b', ttl_ms: 300_000 })).body.session.session_id;
  const route = 'lease://acme/shutdown/r';
  const held = await api('POST', leasePath(route, 'acquire'), { session_id: a, request_id: rid(), ttl_ms: 600_000 });
  assert.equal(held.status, 200);
  const waiting = api('POST', leasePath(route, 'acquire'), { session_id: b, request_id: rid(), wait_ms: 30_000 });
  await waitFor('the second acquire to wait', async () => (await api('GET', leasePath(route))).body.lease?.waiters, (n) => n === 1);
  const started = Date.now();
  const code = await stopServer(s.proc);
  assert.equal(code, 0);
  assert.ok(Date.now() - started < 5_000, 'shutdown does not wait for the waiter’s deadline');
  const w = await waiting;
  assert.deepEqual([w.status, w.body.code], [503, 'backend_unavailable']);

  const again = await spawnServer({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_BOOTSTRAP_TOKEN: token });
  const inspect = await call(again.url, 'GET', leasePath(route), undefined, { token });
  assert.equal(inspect.body.lease.fencing_token, held.body.lease.fencing_token);
  await stopServer(again.proc);
});

test('SIGTERM with open streams: each gets closed (shutdown) and the process exits within a second', async () => {
  const token = `lh_main_test_${Math.random().toString(36).slice(2)}_xx`;
  const s = await spawnServer({ LEASEHOLD_DATA_DIR: dir(), LEASEHOLD_BOOTSTRAP_TOKEN: token });
  const streams = await Promise.all(Array.from({ length: 5 }, () => SseClient.open(s.url, '/api/v1/inventory/stream?selector=lease://**', { token })));
  await Promise.all(streams.map((c) => c.waitFor((e) => e.event === 'subscribed')));
  streams[0]!.pause(); // one that is not reading does not hold the exit up either
  const started = Date.now();
  assert.equal(await stopServer(s.proc), 0);
  const took = Date.now() - started;
  assert.ok(took < 1_000, `exited after ${took} ms`);
  for (const c of streams.slice(1)) {
    await c.done;
    assert.deepEqual(c.events[c.events.length - 1]?.data, { reason: 'shutdown' });
  }
});

test('LEASEHOLD_DATABASE_URL selects PostgreSQL; an unreachable database stops the start with a message, within seconds', async () => {
  const t0 = Date.now();
  const r = await runServerToExit({ LEASEHOLD_DATA_DIR: dir(), LEASEHOLD_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
  assert.equal(r.code, 1);
  assert.match(r.output, /failed to start/);
  assert.ok(Date.now() - t0 < 10_000);
});
