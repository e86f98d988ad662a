import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

async function acquire(route: string, sessionId: string, extra: Record<string, unknown> = {}) {
  return s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra });
}

describe('leases over HTTP', () => {
  test('the full holder cycle: open, acquire, inspect, renew, checkpoint, release, close', async () => {
    const { sessionId, incarnation } = await s.openSession('worker-7');
    const route = 'lease://acme/renderers/doc-1';
    const a = await acquire(route, sessionId, { ttl_ms: 5_000, metadata: { shard: 3, hot: true, tag: 'x' } });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.status, 'success');
    assert.equal(a.body.code, 'lease_acquired');
    assert.equal(a.headers['x-correlation-id'], a.body.correlation_id);
    const lease = a.body.lease;
    assert.equal(lease.holder_incarnation, incarnation);
    assert.deepEqual(lease.metadata, { shard: 3, hot: true, tag: 'x' });

    const i = await s.call('GET', leasePath(route));
    assert.equal(i.body.code, 'lease_inspected');
    assert.equal(i.body.lease.fencing_token, lease.fencing_token);
    assert.equal('lease_id' in i.body.lease, false);

    const proof = { session_id: sessionId, lease_id: lease.lease_id, fencing_token: lease.fencing_token };
    const r = await s.call('POST', leasePath(route, 'renew'), { ...proof, request_id: rid(), ttl_ms: 8_000 });
    assert.equal(r.body.code, 'lease_renewed');
    assert.equal(r.body.lease.renewal_count, 1);

    const c = await s.call('PUT', leasePath(route, 'checkpoint'), { ...proof, request_id: rid(), value: { cursor: 42 } });
    assert.equal(c.body.code, 'checkpoint_written');
    assert.equal(c.body.checkpoint.version, 1);
    const cr = await s.call('GET', leasePath(route, 'checkpoint'));
    assert.deepEqual(cr.body.checkpoint.value, { cursor: 42 });

    const rel = await s.call('POST', leasePath(route, 'release'), { ...proof, request_id: rid() });
    assert.deepEqual([rel.body.code, rel.body.route, rel.body.fencing_token], ['lease_released', route, lease.fencing_token]);
    assert.equal((await s.call('GET', leasePath(route))).body.code, 'lease_not_found');

    const sessions = await s.call('GET', '/api/v1/sessions?owner_id=worker-7');
    assert.equal(sessions.body.items.length, 1);
    assert.equal(JSON.stringify(sessions.body).includes(sessionId), false, 'a listed session never shows its id');
    const closed = await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
    assert.deepEqual([closed.body.code, closed.body.released], ['session_closed', 0]);
  });

  test('50 concurrent acquires of one route yield exactly one winner', async () => {
    const sessions = await Promise.all(Array.from({ length: 50 }, (_, i) => s.openSession(`racer-${i}`)));
    const route = 'lease://race/one/route';
    const replies = await Promise.all(sessions.map((x) => acquire(route, x.sessionId)));
    const winners = replies.filter((r) => r.status === 200);
    const losers = replies.filter((r) => r.status === 409);
    assert.equal(winners.length, 1);
    assert.equal(losers.length, 49);
    for (const l of losers) {
      assert.equal(l.body.code, 'lease_conflict');
      assert.equal(l.body.retryable, true);
      assert.ok(l.body.retry_after_ms >= 50);
    }
    const held = await s.call('GET', leasePath(route));
    assert.equal(held.body.lease.fencing_token, winners[0]!.body.lease.fencing_token);
    assert.equal(held.body.lease.holder_incarnation, winners[0]!.body.lease.holder_incarnation);
    const listed = await s.call('GET', '/api/v1/leases?selector=lease://race/**');
    assert.equal(listed.body.items.length, 1);
  });

  test('20 sequential acquire/release cycles over HTTP yield strictly increasing tokens', async () => {
    const { sessionId } = await s.openSession();
    const route = 'lease://seq/tokens/r';
    let last = 0;
    for (let i = 0; i < 20; i++) {
      const a = await acquire(route, sessionId);
      assert.ok(a.body.lease.fencing_token > last);
      last = a.body.lease.fencing_token;
      const rel = await s.call('POST', leasePath(route, 'release'), {
        session_id: sessionId,
        request_id: rid(),
        lease_id: a.body.lease.lease_id,
        fencing_token: last,
      });
      assert.equal(rel.status, 200);
    }
  });

  test('a stale release or renew after expiry and reacquisition changes nothing (real time, 1 s TTL)', async () => {
    const a = await s.openSession('a');
    const b = await s.openSession('b');
    const route = 'lease://stale/holder/r';
    const first = (await acquire(route, a.sessionId, { ttl_ms: 1_000 })).body.lease;
    await new Promise((r) => setTimeout(r, 1_100));
    const second = (await acquire(route, b.sessionId)).body.lease;
    assert.ok(second.fencing_token > first.fencing_token);
    const proof = { session_id: a.sessionId, lease_id: first.lease_id, fencing_token: first.fencing_token };
    const renew = await s.call('POST', leasePath(route, 'renew'), { ...proof, request_id: rid() });
    const release = await s.call('POST', leasePath(route, 'release'), { ...proof, request_id: rid() });
    const ck = await s.call('PUT', leasePath(route, 'checkpoint'), { ...proof, request_id: rid(), value: 'stale' });
    for (const r of [renew, release, ck]) assert.deepEqual([r.status, r.body.code, r.body.retryable], [409, 'lease_lost', false]);
    const now = (await s.call('GET', leasePath(route))).body.lease;
    assert.deepEqual([now.fencing_token, now.owner_id, now.renewal_count], [second.fencing_token, 'b', 0]);
    assert.equal((await s.call('GET', leasePath(route, 'checkpoint'))).body.code, 'checkpoint_not_found');
  });

  test('a waiting acquire is granted over HTTP when the holder releases; a waiter whose session closed is skipped', async () => {
    const holder = await s.openSession('holder');
    const gone = await s.openSession('gone');
    const waiter = await s.openSession('waiter');
    const route = 'lease://wait/http/r';
    const held = (await acquire(route, holder.sessionId)).body.lease;
    const dropped = acquire(route, gone.sessionId, { wait_ms: 10_000 });
    await waitFor(async () => (await s.call('GET', leasePath(route))).body.lease.waiters === 1);
    const p = acquire(route, waiter.sessionId, { wait_ms: 10_000 });
    await waitFor(async () => (await s.call('GET', leasePath(route))).body.lease.waiters === 2);
    await s.call('POST', '/api/v1/sessions/close', { session_id: gone.sessionId });
    const d = await dropped;
    assert.deepEqual([d.status, d.body.code], [404, 'session_not_found']);
    await s.call('POST', leasePath(route, 'release'), {
      session_id: holder.sessionId,
      request_id: rid(),
      lease_id: held.lease_id,
      fencing_token: held.fencing_token,
    });
    const g = await p;
    assert.equal(g.status, 200, g.text);
    assert.equal(g.body.queued, true);
    assert.equal(g.body.lease.owner_id, 'waiter');
  });

  test('a client that goes away while waiting leaves the queue', async () => {
    const holder = await s.openSession('holder2');
    const w = await s.openSession('w2');
    const route = 'lease://wait/abort/r';
    await acquire(route, holder.sessionId);
    const ac = new AbortController();
    const p = s
      .call('POST', leasePath(route, 'acquire'), { session_id: w.sessionId, request_id: rid(), wait_ms: 10_000 }, { signal: ac.signal })
      .catch((e: Error) => e.name);
    await waitFor(async () => (await s.call('GET', leasePath(route))).body.lease.waiters === 1);
    ac.abort();
    assert.equal(await p, 'AbortError');
    await waitFor(async () => (await s.call('GET', leasePath(route))).body.lease.waiters === 0);
  });
});

describe('pagination under churn', () => {
  test('over 1,000 leases, no route appears twice and every lease held throughout appears exactly once', async () => {
    const sessions = await Promise.all(Array.from({ length: 4 }, (_, i) => s.openSession(`pager-${i}`, 120_000)));
    const stable: string[] = [];
    for (let i = 0; i < 1_200; i += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, j) => {
          const route = `lease://page/area-${(i + j) % 7}/r-${String(i + j).padStart(5, '0')}`;
          stable.push(route);
          const a = await acquire(route, sessions[(i + j) % 4]!.sessionId, { ttl_ms: 120_000 });
          assert.equal(a.status, 200, a.text);
        }),
      );
    }
    // Churn: other routes in the same range are acquired and released while we page.
    let stop = false;
    const churner = (async () => {
      const { sessionId } = sessions[0]!;
      let n = 0;
      while (!stop) {
        const route = `lease://page/area-${n % 7}/r-${String(n % 1_200).padStart(5, '0')}-churn`;
        const a = await acquire(route, sessionId);
        if (a.status === 200) {
          await s.call('POST', leasePath(route, 'release'), {
            session_id: sessionId,
            request_id: rid(),
            lease_id: a.body.lease.lease_id,
            fencing_token: a.body.lease.fencing_token,
          });
        }
        n += 37;
      }
    })();
    const seen = new Map<string, number>();
    let cursor: string | null = null;
    let pages = 0;
    let lastRevision = 0;
    do {
      const q: string = `/api/v1/leases?selector=${encodeURIComponent('lease://page/**')}&limit=97${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await s.call('GET', q);
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.revision >= lastRevision, 'page revisions never go back');
      lastRevision = page.body.revision;
      for (const item of page.body.items) seen.set(item.route, (seen.get(item.route) ?? 0) + 1);
      cursor = page.body.next_cursor;
      pages++;
      await new Promise((r) => setImmediate(r));
    } while (cursor);
    stop = true;
    await churner;
    assert.ok(pages >= 13);
    for (const [route, n] of seen) assert.equal(n, 1, `${route} appeared ${n} times`);
    for (const route of stable) assert.equal(seen.get(route), 1, `${route} missing`);
    const routes = [...seen.keys()];
    assert.deepEqual(routes, [...routes].sort(), 'pages come in route order');
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail('condition not met in time');
}
