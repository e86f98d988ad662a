/**
 * CONTRACT §13 row by row (docs/semantics.md "Limits"), through the API on
 * the configured store (PostgreSQL: two instances): each numeric limit's
 * minimum, maximum and default are granted as asked, one past either end is
 * `invalid_request` and changes nothing, and a policy narrows the lease rows
 * by clamping (its value is the default and the cap) without moving §13's
 * ends. The expected values are written out here, not read from
 * lib/limits.ts, so a wrong table fails this test. The global cap of 1,024
 * waiters per route is read from the effective limits and the policy field's
 * range rather than by queueing 1,025 requests; a policy's cap is queued.
 * The length and count rows (reason, request_id, owner_id, metadata, page
 * size) are walked the same way at the end.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';
import { waitFor } from '../testing/wait';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

let n = 0;
const fresh = (area: string) => `lease://lim/${area}/r${++n}`;
const span = (from: string, to: string) => Date.parse(to) - Date.parse(from);
const refused = (r: Reply, what: string) => assert.deepEqual([r.status, r.body.code], [400, 'invalid_request'], `${what}: ${r.text}`);

async function acquire(route: string, extra: Record<string, unknown>): Promise<Reply> {
  const { sessionId } = await s.openSession('limits');
  return s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra });
}

/** What an acquire of a fresh route under `area` was granted: its TTL and its lifetime. */
async function granted(area: string, extra: Record<string, unknown>): Promise<{ ttl: number; lifetime: number }> {
  const r = await acquire(fresh(area), extra);
  assert.equal(r.status, 200, `${JSON.stringify(extra)}: ${r.text}`);
  const l = r.body.lease;
  return { ttl: l.ttl_ms, lifetime: span(l.acquired_at, l.max_expires_at) };
}

/** Acquire refused as invalid_request, and the route stays free. */
async function refusedAcquire(area: string, extra: Record<string, unknown>): Promise<void> {
  const route = fresh(area);
  refused(await acquire(route, extra), JSON.stringify(extra));
  const inspect = await s.call('GET', leasePath(route));
  assert.equal(inspect.body.lease ?? null, null, 'nothing was acquired');
}

// [field, minimum, maximum, default]: §13 as the contract writes it.
const LEASE_ROWS = [
  ['ttl_ms', 1_000, 600_000, 30_000],
  ['max_lifetime_ms', 1_000, 86_400_000, 3_600_000],
] as const;
const got = (field: string, g: { ttl: number; lifetime: number }) => (field === 'ttl_ms' ? g.ttl : g.lifetime);

describe('§13 limits without a policy', () => {
  for (const [field, min, max, def] of LEASE_ROWS) {
    test(`lease ${field}: ${min} and ${max} are granted as asked, absent gets ${def}, ${min - 1} and ${max + 1} are refused`, async () => {
      // A lease lives ttl_ms, then max_lifetime_ms caps it: ask for the longest of the other so it never clamps.
      const other = field === 'ttl_ms' ? { max_lifetime_ms: 86_400_000 } : { ttl_ms: 600_000 };
      assert.equal(got(field, await granted('none', { ...other, [field]: min })), min);
      assert.equal(got(field, await granted('none', { ...other, [field]: max })), max);
      assert.equal(got(field, await granted('none', other)), def);
      await refusedAcquire('none', { ...other, [field]: min - 1 });
      await refusedAcquire('none', { ...other, [field]: max + 1 });
    });
  }

  test('a max_lifetime_ms shorter than the TTL caps the first expiry', async () => {
    const r = await acquire(fresh('none'), { ttl_ms: 60_000, max_lifetime_ms: 5_000 });
    assert.equal(r.status, 200, r.text);
    assert.equal(span(r.body.lease.acquired_at, r.body.lease.expires_at), 5_000);
  });

  test('renew ttl_ms: 1000 and 600000 are granted, 999 and 600001 refused and the lease unchanged', async () => {
    const route = fresh('renew');
    const { sessionId } = await s.openSession('renewer');
    const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), max_lifetime_ms: 86_400_000 });
    assert.equal(a.status, 200, a.text);
    const proof = { session_id: sessionId, lease_id: a.body.lease.lease_id, fencing_token: a.body.lease.fencing_token };
    for (const ttl of [1_000, 600_000]) {
      const r = await s.call('POST', leasePath(route, 'renew'), { ...proof, request_id: rid(), ttl_ms: ttl });
      assert.equal(r.body.lease?.ttl_ms, ttl, r.text);
    }
    for (const ttl of [999, 600_001]) refused(await s.call('POST', leasePath(route, 'renew'), { ...proof, request_id: rid(), ttl_ms: ttl }), `renew ttl_ms ${ttl}`);
    assert.equal((await s.call('GET', leasePath(route))).body.lease.renewal_count, 2, 'the refused renewals changed nothing');
  });

  test('session ttl_ms: 2000 and 300000 are granted, absent gets 15000, 1999 and 300001 are refused and open nothing', async () => {
    const open = (extra: Record<string, unknown>) => s.call('POST', '/api/v1/sessions', { owner_id: 'limits-session', ...extra });
    for (const [extra, want] of [[{ ttl_ms: 2_000 }, 2_000], [{ ttl_ms: 300_000 }, 300_000], [{}, 15_000]] as const) {
      const r = await open(extra);
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.session.ttl_ms, want);
      assert.equal(span(r.body.session.created_at, r.body.session.expires_at), want);
    }
    const before = (await s.call('GET', '/api/v1/sessions?limit=1000')).body.items.length;
    for (const ttl of [1_999, 300_001]) refused(await open({ ttl_ms: ttl }), `session ttl_ms ${ttl}`);
    assert.equal((await s.call('GET', '/api/v1/sessions?limit=1000')).body.items.length, before, 'no session was opened');
  });

  test('wait_ms: 0 and 30000 are accepted, absent means no wait, -1 and 30001 are refused', async () => {
    assert.equal((await acquire(fresh('wait'), { wait_ms: 0 })).status, 200);
    assert.equal((await acquire(fresh('wait'), { wait_ms: 30_000 })).status, 200, 'a free route is granted at once, whatever the wait');
    const held = fresh('wait');
    assert.equal((await acquire(held, {})).status, 200);
    const noWait = await acquire(held, {});
    assert.deepEqual([noWait.status, noWait.body.code], [409, 'lease_conflict'], 'absent wait_ms answers at once');
    for (const w of [-1, 30_001]) await refusedAcquire('wait', { wait_ms: w });
  });

  test('embed token ttl_ms: 60000 and 86400000 are granted, absent gets 86400000, 59999 and 86400001 are refused', async () => {
    const make = (extra: Record<string, unknown>) => s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://lim/**', ...extra });
    for (const [extra, want] of [[{ ttl_ms: 60_000 }, 60_000], [{ ttl_ms: 86_400_000 }, 86_400_000], [{}, 86_400_000]] as const) {
      // The answer has no creation time: the server's clock read between these two (one machine, one clock).
      const t0 = Date.now();
      const r = await make(extra);
      const t1 = Date.now();
      assert.equal(r.status, 201, r.text);
      const expires = Date.parse(r.body.expires_at);
      assert.ok(expires >= t0 + want && expires <= t1 + want, `${JSON.stringify(extra)}: expires ${r.body.expires_at}, asked between ${t0} and ${t1}`);
    }
    for (const ttl of [59_999, 86_400_001]) refused(await make({ ttl_ms: ttl }), `embed ttl_ms ${ttl}`);
  });

  test('policy fields: each end of §13 is accepted, one past is refused and stores nothing', async () => {
    const put = (body: Record<string, unknown>) => s.call('PUT', '/api/v1/policies', { selector: 'lease://lim-p/**', reason: 'limits table walk', ...body });
    for (const [field, min, max] of [
      ['ttl_min_ms', 1_000, 600_000],
      ['ttl_max_ms', 1_000, 600_000],
      ['ttl_default_ms', 1_000, 600_000],
      ['max_lifetime_ms', 1_000, 86_400_000],
      ['lock_delay_ms', 0, 60_000],
      ['max_waiters', 0, 1_024],
    ] as const) {
      for (const v of [min, max]) {
        // ttl_default_ms must lie inside the policy's own range: give it the whole global range.
        const r = await put({ [field]: v, ...(field === 'ttl_default_ms' ? { ttl_min_ms: 1_000, ttl_max_ms: 600_000 } : {}) });
        assert.equal(r.status, 200, `${field} ${v}: ${r.text}`);
        assert.equal(r.body.policy[field], v);
      }
      const last = (await s.call('GET', `/api/v1/policies?selector=${encodeURIComponent('lease://lim-p/**')}`)).body.items[0];
      for (const v of [min - 1, max + 1]) refused(await put({ [field]: v }), `${field} ${v}`);
      const now = (await s.call('GET', `/api/v1/policies?selector=${encodeURIComponent('lease://lim-p/**')}`)).body.items[0];
      assert.deepEqual(now, last, `a refused ${field} stored nothing`);
    }
  });
});

describe('§13 limits under a policy', () => {
  before(async () => {
    const r = await s.call('PUT', '/api/v1/policies', {
      selector: 'lease://lim/pol/*',
      reason: 'narrower bounds for the table test',
      ttl_min_ms: 5_000,
      ttl_max_ms: 20_000,
      ttl_default_ms: 10_000,
      max_lifetime_ms: 900_000,
    });
    assert.equal(r.status, 200, r.text);
  });

  test('lease ttl_ms: clamped into the policy (5000..20000, default 10000); §13 ends still refuse one past', async () => {
    const cases = [[1_000, 5_000], [4_999, 5_000], [5_000, 5_000], [20_000, 20_000], [600_000, 20_000], [undefined, 10_000]] as const;
    for (const [ask, want] of cases) assert.equal((await granted('pol', ask === undefined ? {} : { ttl_ms: ask })).ttl, want, `asked ${ask}`);
    await refusedAcquire('pol', { ttl_ms: 999 });
    await refusedAcquire('pol', { ttl_ms: 600_001 });
  });

  test('max_lifetime_ms: the policy value is the default and the cap; below it is granted as asked', async () => {
    const cases = [[1_000, 1_000], [899_999, 899_999], [900_000, 900_000], [86_400_000, 900_000], [undefined, 900_000]] as const;
    for (const [ask, want] of cases) assert.equal((await granted('pol', { ttl_ms: 5_000, ...(ask === undefined ? {} : { max_lifetime_ms: ask }) })).lifetime, want, `asked ${ask}`);
    await refusedAcquire('pol', { max_lifetime_ms: 999 });
    await refusedAcquire('pol', { max_lifetime_ms: 86_400_001 });
  });

  test('waiters per route: a policy cap of 2 queues two and refuses the third (rate_limited); effective limits say 1024 without one', async () => {
    const put = await s.call('PUT', '/api/v1/policies', { selector: 'lease://lim/cap/*', reason: 'two waiters at most here', max_waiters: 2 });
    assert.equal(put.status, 200, put.text);
    const route = fresh('cap');
    assert.equal((await acquire(route, {})).status, 200);
    const ac = new AbortController();
    const sessions = await Promise.all([0, 1, 2].map((i) => s.openSession(`waiter-${i}`, 300_000)));
    const waiting = sessions.slice(0, 2).map(({ sessionId }) =>
      s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), wait_ms: 30_000 }, { signal: ac.signal }).catch(() => 'left'),
    );
    await waitFor('2 waiters queued', async () => (await s.call('GET', leasePath(route))).body.lease?.waiters, (w) => w === 2);
    const over = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessions[2]!.sessionId, request_id: rid(), wait_ms: 30_000 });
    assert.deepEqual([over.status, over.body.code], [429, 'rate_limited'], over.text);
    assert.equal((await s.call('GET', leasePath(route))).body.lease.waiters, 2);
    ac.abort();
    assert.deepEqual(await Promise.all(waiting), ['left', 'left'], 'both were still waiting');
  });

  test('effective limits tell the cap and the default apart, with and without a policy', async () => {
    const none = await s.call('GET', '/api/v1/policies/effective/lim/none/x');
    assert.deepEqual(
      [none.body.policy, none.body.limits.ttl_min_ms, none.body.limits.ttl_max_ms, none.body.limits.ttl_default_ms, none.body.limits.max_lifetime_ms, none.body.limits.max_lifetime_default_ms, none.body.limits.max_waiters],
      [null, 1_000, 600_000, 30_000, 86_400_000, 3_600_000, 1_024],
    );
    const pol = await s.call('GET', '/api/v1/policies/effective/lim/pol/x');
    assert.deepEqual(
      [pol.body.policy.selector, pol.body.limits.ttl_min_ms, pol.body.limits.ttl_max_ms, pol.body.limits.ttl_default_ms, pol.body.limits.max_lifetime_ms, pol.body.limits.max_lifetime_default_ms],
      ['lease://lim/pol/*', 5_000, 20_000, 10_000, 900_000, 900_000],
    );
  });
});

describe('§13 limits on lengths and counts', () => {
  const ok = (r: Reply, what: string) => assert.ok(r.status < 300, `${what}: ${r.text}`);
  const x = (n: number) => 'x'.repeat(n);

  test('reason: 10 and 500 characters are accepted, 9 and 501 refused and the lease kept', async () => {
    const route = fresh('reason');
    const held = await acquire(route, {});
    assert.equal(held.status, 200, held.text);
    const rr = (reason: string) => s.call('POST', leasePath(route, 'release-request'), { request_id: rid(), reason, expected_fencing_token: held.body.lease.fencing_token });
    for (const n of [9, 501]) refused(await rr(x(n)), `reason of ${n}`);
    assert.equal((await s.call('GET', leasePath(route))).body.lease.release_request, null, 'a refused request recorded nothing');
    for (const n of [10, 500]) ok(await rr(x(n)), `reason of ${n}`);
  });

  test('request_id: 1 and 128 visible ASCII characters are accepted, empty and 129 refused', async () => {
    for (const id of ['', x(129)]) await refusedAcquire('rid', { request_id: id });
    for (const id of ['a', x(128)]) assert.equal((await acquire(fresh('rid'), { request_id: id })).status, 200, `request_id of ${id.length}`);
  });

  test('owner_id: 1 and 128 characters open a session, empty and 129 are refused', async () => {
    const open = (owner_id: string) => s.call('POST', '/api/v1/sessions', { owner_id });
    for (const o of ['', x(129)]) refused(await open(o), `owner_id of ${o.length}`);
    for (const o of ['a', x(128)]) assert.equal((await open(o)).status, 201, `owner_id of ${o.length}`);
  });

  test('metadata: 16 keys and 64-character keys are accepted; 17 keys, a 65-character key and over 1 KiB are refused', async () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    for (const m of [keys(17), { [x(65)]: 1 }, { big: x(1_100) }]) await refusedAcquire('meta', { metadata: m });
    for (const m of [keys(16), { [x(64)]: 1 }]) assert.equal((await acquire(fresh('meta'), { metadata: m })).status, 200, JSON.stringify(m).slice(0, 40));
  });

  test('page size: 1 and 1000 are accepted, 0 and 1001 refused (never clamped), and absent means 100', async () => {
    const { sessionId } = await s.openSession('pager');
    for (let i = 0; i < 101; i++) {
      const r = await s.call('POST', leasePath(`lease://lim-page/a/r${String(i).padStart(3, '0')}`, 'acquire'), { session_id: sessionId, request_id: rid() });
      assert.equal(r.status, 200, r.text);
    }
    const list = (extra: string) => s.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://lim-page/**')}${extra}`);
    for (const n of [0, 1_001]) refused(await list(`&limit=${n}`), `limit=${n}`);
    assert.equal((await list('&limit=1')).body.items.length, 1);
    assert.equal((await list('&limit=1000')).body.items.length, 101);
    const page = await list('');
    assert.equal(page.body.items.length, 100);
    assert.notEqual(page.body.next_cursor, null, 'the 101st is on the next page');
  });
});
