/**
 * Batched renewals and the all-or-nothing acquire against the real server
 * (CONTRACT §20): a session's handles renew through one
 * `POST /api/v1/sessions/renew` per tick, which also keeps the session alive;
 * a handle lost in a batch is lost alone; `acquireAll` grants every route or
 * none; a server without the batched endpoint gets single renewals.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, LeaseholdError, type LeaseHandle } from '@/lib/client';
import { leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { eventually } from './support';
import { TIME_FACTOR } from '../../server/testing/wait';

// Renewals run on real time: TTLs scale with the CI time factor, so a loaded machine's scheduling delays stay well inside a TTL.

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

const BATCH = '/api/v1/sessions/renew';

/** Wraps the harness's fetch and records what the SDK sends. */
class Recorder {
  readonly calls: { method: string; path: string; body: unknown; at: number; answeredAt?: number }[] = [];
  /** Answer 404 to the batched renew, as a server without it would. */
  noBatchEndpoint = false;

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    const body: unknown = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    const call: Recorder['calls'][number] = { method, path: url.pathname, body, at: Date.now() };
    this.calls.push(call);
    if (this.noBatchEndpoint && url.pathname === BATCH) {
      return new Response(JSON.stringify({ status: 'error', code: 'not_found', message: 'no such endpoint', retryable: false }), { status: 404, headers: { 'content-type': 'application/json' } });
    }
    const answer = await s.fetch(input, init);
    call.answeredAt = Date.now();
    return answer;
  };

  /** The batched renews sent, with when each was sent and answered. */
  batchCalls(): { routes: string[]; at: number; answeredAt: number | undefined }[] {
    return this.calls
      .filter((c) => c.method === 'POST' && c.path === BATCH)
      .map((c) => ({ routes: (c.body as { leases: { route: string }[] }).leases.map((l) => l.route), at: c.at, answeredAt: c.answeredAt }));
  }

  /** The batched renews sent, each as the routes it carried. */
  batches(): string[][] {
    return this.calls.filter((c) => c.method === 'POST' && c.path === BATCH).map((c) => (c.body as { leases: { route: string }[] }).leases.map((l) => l.route));
  }

  singleRenews(): number {
    return this.calls.filter((c) => c.method === 'POST' && c.path.startsWith('/api/v1/leases/') && c.path.endsWith('/renew')).length;
  }

  keepalives(since = 0): number {
    return this.calls.filter((c) => c.method === 'POST' && c.path === '/api/v1/sessions/keepalive' && c.at >= since).length;
  }
}

async function inspect(route: string): Promise<{ status: number; token: number | undefined }> {
  const r = await s.call('GET', leasePath(route));
  return { status: r.status, token: r.body.lease?.fencing_token };
}

test('30 handles of one session renew with one batched request per tick, which also keeps the session alive', async (t) => {
  const rec = new Recorder();
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch });
  const session = await client.openSession({ ownerId: 'fleet-30', ttlMs: 6000 * TIME_FACTOR });
  try {
    const handles: LeaseHandle[] = [];
    for (let i = 0; i < 30; i++) handles.push(await session.acquire(`lease://sdk/batch/h${i}`, { ttlMs: 1500 * TIME_FACTOR }));
    const all = new Set(handles.map((h) => h.route));
    const acquiredBy = rec.batches().length;
    const full = (b: string[]): boolean => b.length === 30 && b.every((r) => all.has(r));
    // Handles acquired one after another converge on one batch within a tick or two.
    try {
      await eventually('three batches that carry all 30 handles', () => rec.batches().filter(full).length >= 3, 15_000);
    } finally {
      t.diagnostic(`batch sizes: ${rec.batches().map((b) => b.length).join(', ')}`);
    }
    const batches = rec.batches();
    const firstFull = batches.findIndex(full);
    assert.ok(firstFull - acquiredBy <= 3, `the handles joined one batch within a few ticks of the last acquire (batch ${firstFull}, ${acquiredBy} before it)`);
    for (const b of batches.slice(firstFull)) assert.ok(full(b), `once together, every tick is one request with every handle (got ${b.length})`);
    assert.equal(rec.singleRenews(), 0, 'no handle renewed alone');
    const firstBatchAt = rec.calls.find((c) => c.path === BATCH)!.at;
    assert.equal(rec.keepalives(firstBatchAt), 0, 'the batches kept the session alive: no separate keepalive');
    for (const h of handles) assert.equal(h.state, 'held');
    const seen = await inspect(handles[29]!.route);
    assert.equal(seen.status, 200);
    assert.equal(seen.token, handles[29]!.fencingToken);
    assert.ok(handles.every((h) => h.lease.renewal_count >= 2), 'every handle took its renewals from the batch answers');
    assert.equal(session.state, 'open');
  } finally {
    await session.close();
  }
});

test('600 handles renew in requests of at most 250, each sent when the one before it was answered', async (t) => {
  const rec = new Recorder();
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch });
  const session = await client.openSession({ ownerId: 'fleet-600', ttlMs: 6000 * TIME_FACTOR });
  try {
    const routes = Array.from({ length: 600 }, (_, i) => `lease://sdk/chunks/h${String(i).padStart(3, '0')}`);
    const handles: LeaseHandle[] = [];
    for (let i = 0; i < routes.length; i += 16) handles.push(...(await session.acquireAll(routes.slice(i, i + 16), { ttlMs: 3000 * TIME_FACTOR })));
    const all = new Set(routes);
    /** Three consecutive requests that together carry every handle: one tick's. */
    const tick = () => {
      const calls = rec.batchCalls();
      for (let i = 0; i + 3 <= calls.length; i++) {
        const three = calls.slice(i, i + 3);
        const carried = new Set(three.flatMap((c) => c.routes));
        if (carried.size === all.size && [...carried].every((r) => all.has(r))) return three;
      }
      return undefined;
    };
    try {
      await eventually('one tick whose three requests carry all 600 handles', () => tick() !== undefined, 20_000);
    } finally {
      t.diagnostic(`batch sizes: ${rec.batchCalls().map((b) => b.routes.length).join(', ')}`);
    }
    for (const b of rec.batchCalls()) assert.ok(b.routes.length <= 250, `a request carries at most 250 items (got ${b.routes.length})`);
    const [first, second, third] = tick()!;
    assert.deepEqual([first!.routes.length, second!.routes.length, third!.routes.length], [250, 250, 100]);
    assert.ok(second!.at >= first!.answeredAt!, 'the second request left after the first was answered');
    assert.ok(third!.at >= second!.answeredAt!, 'the third request left after the second was answered');
    for (const h of handles) assert.equal(h.state, 'held');
  } finally {
    await session.close();
  }
});

test('a handle lost in a batch is lost alone, with the same reason as a single renew gives; the others go on', async () => {
  const rec = new Recorder();
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch });
  const session = await client.openSession({ ownerId: 'fleet-loss', ttlMs: 6000 * TIME_FACTOR });
  try {
    const handles: LeaseHandle[] = [];
    for (let i = 0; i < 5; i++) handles.push(await session.acquire(`lease://sdk/batch-loss/h${i}`, { ttlMs: 1500 * TIME_FACTOR }));
    const victim = handles[2]!;
    const events: string[] = [];
    victim.signal.addEventListener('abort', () => events.push('abort'));
    const r = await s.call('POST', leasePath(victim.route, 'force-release'), { request_id: rid(), reason: 'test: free one of a batch', expected_fencing_token: victim.fencingToken });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await eventually('the victim is lost', () => victim.state === 'lost', 5000);
    assert.deepEqual(events, ['abort']);
    const reason = victim.lostReason;
    assert.ok(reason instanceof LeaseholdError);
    assert.equal(reason.code, 'lease_lost');
    assert.equal(reason.status, 409);
    assert.equal(reason.fromServer, true);
    assert.equal(victim.signal.reason, reason);
    assert.ok(rec.batches().some((b) => b.includes(victim.route)), 'the loss came from a batched renew');
    await assert.rejects(async () => victim.renew(), (e) => e === reason);
    // The others keep renewing, in batches without the victim.
    const after = rec.batches().length;
    await eventually('two more batches', () => rec.batches().length >= after + 2, 5000);
    for (const b of rec.batches().slice(after)) assert.ok(!b.includes(victim.route), 'a lost handle is not renewed');
    for (const h of handles) if (h !== victim) assert.equal(h.state, 'held', `${h.route} is still held`);
    for (const h of handles) if (h !== victim) assert.equal((await inspect(h.route)).token, h.fencingToken);
    assert.deepEqual(session.handles.map((h) => h.route).sort(), handles.filter((h) => h !== victim).map((h) => h.route).sort());
    assert.equal(rec.singleRenews(), 0);
    assert.equal(session.state, 'open');
  } finally {
    await session.close();
  }
});

test('acquireAll grants every route, each a handle renewed by the batch', async () => {
  const rec = new Recorder();
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch });
  const session = await client.openSession({ ownerId: 'all-ok', ttlMs: 6000 * TIME_FACTOR });
  try {
    const routes = ['lease://sdk/all/a', 'lease://sdk/all/b', { route: 'lease://sdk/all/c', metadata: { shard: 3 } }];
    const handles = await session.acquireAll(routes, { ttlMs: 1500 * TIME_FACTOR });
    assert.deepEqual(
      handles.map((h) => h.route),
      ['lease://sdk/all/a', 'lease://sdk/all/b', 'lease://sdk/all/c'],
    );
    assert.equal(new Set(handles.map((h) => h.fencingToken)).size, 3, 'each route has its own token');
    assert.deepEqual(handles[2]!.lease.metadata, { shard: 3 });
    assert.equal(session.handles.length, 3);
    for (const h of handles) assert.equal((await inspect(h.route)).token, h.fencingToken);
    await eventually('a batch renews all three', () => rec.batches().some((b) => b.length === 3), 5000);
    for (const h of handles) assert.equal(h.state, 'held');
    await handles[0]!.release();
    assert.equal((await inspect('lease://sdk/all/a')).status, 404, 'released on its own');
    assert.equal(handles[1]!.state, 'held');
  } finally {
    await session.close();
  }
});

test('acquireAll refused by one held route throws lease_conflict with held, acquires nothing and leaves no handle', async () => {
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch });
  const holder = await client.openSession({ ownerId: 'holder', ttlMs: 6000 * TIME_FACTOR });
  const session = await client.openSession({ ownerId: 'all-refused', ttlMs: 6000 * TIME_FACTOR });
  try {
    const held = await holder.acquire('lease://sdk/all-refused/b', { ttlMs: 5000 });
    const err = await session.acquireAll(['lease://sdk/all-refused/a', 'lease://sdk/all-refused/b', 'lease://sdk/all-refused/c']).then(
      () => assert.fail('acquired'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof LeaseholdError);
    assert.equal(err.code, 'lease_conflict');
    assert.deepEqual(err.held, ['lease://sdk/all-refused/b']);
    assert.equal(typeof err.retryAfterMs, 'number');
    assert.equal(session.handles.length, 0, 'no handle');
    assert.equal((await inspect('lease://sdk/all-refused/a')).status, 404, 'nothing acquired');
    assert.equal((await inspect('lease://sdk/all-refused/c')).status, 404, 'nothing acquired');
    assert.equal((await inspect('lease://sdk/all-refused/b')).token, held.fencingToken);
    await assert.rejects(session.acquireAll([]), (e) => e instanceof LeaseholdError && e.code === 'invalid_request');
  } finally {
    await session.close();
    await holder.close();
  }
});

test('a server without the batched renew gets single renewals and keepalives', async () => {
  const rec = new Recorder();
  rec.noBatchEndpoint = true;
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch });
  const session = await client.openSession({ ownerId: 'old-server', ttlMs: 2000 * TIME_FACTOR });
  try {
    const handles = [await session.acquire('lease://sdk/no-batch/a', { ttlMs: 1000 * TIME_FACTOR }), await session.acquire('lease://sdk/no-batch/b', { ttlMs: 1000 * TIME_FACTOR })];
    await eventually('single renewals and keepalives', () => rec.singleRenews() >= 4 && rec.keepalives() >= 2, 5000);
    assert.equal(rec.batches().length, 1, 'one refused batch, then no more');
    for (const h of handles) assert.equal(h.state, 'held');
    assert.equal(session.state, 'open');
  } finally {
    await session.close();
  }
});

test('batching can be turned off per client', async () => {
  const rec = new Recorder();
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: rec.fetch, batchRenewals: false });
  const session = await client.openSession({ ownerId: 'unbatched', ttlMs: 2000 * TIME_FACTOR });
  try {
    const h = await session.acquire('lease://sdk/unbatched/a', { ttlMs: 1000 * TIME_FACTOR });
    await eventually('two single renewals', () => rec.singleRenews() >= 2, 5000);
    assert.equal(rec.batches().length, 0);
    assert.equal(h.state, 'held');
  } finally {
    await session.close();
  }
});
