/**
 * The on-call reads over HTTP (docs/console.md /leases): LIST's filters
 * (expiring soon, with waiters, release requested) bound into its cursor,
 * the bounded per-owner summary, and the routes in lock-delay. Run on the
 * test store (SQLite, and PostgreSQL with two instances in the second pass,
 * where successive calls alternate between the instances).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, TEST_STORE, type TestServer } from '../testing/harness';
import { waitFor } from '../testing/wait';

const REASON = 'on-call checks the on-call filters';

const list = (selector: string, extra = '') => `/api/v1/leases?selector=${encodeURIComponent(selector)}${extra}`;
const summary = (selector: string, extra = '') => `/api/v1/leases/summary?selector=${encodeURIComponent(selector)}${extra}`;
const delays = (selector: string, extra = '') => `/api/v1/lock-delays?selector=${encodeURIComponent(selector)}${extra}`;

describe(`on-call filters and counts (${TEST_STORE === 'postgres' ? 'PostgreSQL, two instances' : 'SQLite'})`, () => {
  let s: TestServer;

  before(async () => {
    s = await startTestServer();
  });
  after(async () => {
    await s.close();
  });

  async function hold(route: string, sessionId: string, ttlMs: number) {
    const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: ttlMs });
    assert.equal(r.status, 200, r.text);
    return r.body.lease as { fencing_token: number; lease_id: string };
  }

  /** Every route of a filtered LIST, page by page (`limit` per page), checking that each page's cursor resumes it. */
  async function routesOf(selector: string, filters: string, limit = 2): Promise<string[]> {
    const out: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await s.call('GET', list(selector, `${filters}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
      assert.equal(r.status, 200, r.text);
      out.push(...(r.body.items as Array<{ route: string }>).map((l) => l.route));
      cursor = r.body.next_cursor as string | null;
    } while (cursor);
    return out;
  }

  test('expiring soon keeps the leases expiring within the window, page by page', async () => {
    const { sessionId } = await s.openSession('soon-worker', 60_000);
    for (const n of [1, 2, 3]) await hold(`lease://soon/a/short-${n}`, sessionId, 5_000);
    for (const n of [1, 2]) await hold(`lease://soon/a/long-${n}`, sessionId, 60_000);
    assert.deepEqual(await routesOf('lease://soon/**', '&expires_within_ms=30000'), ['lease://soon/a/short-1', 'lease://soon/a/short-2', 'lease://soon/a/short-3']);
    assert.equal((await routesOf('lease://soon/**', '')).length, 5);
    const sum = await s.call('GET', summary('lease://soon/**', '&expires_within_ms=30000'));
    assert.equal(sum.status, 200, sum.text);
    assert.deepEqual([sum.body.code, sum.body.total, sum.body.exact], ['lease_summary', 3, true]);
  });

  test('release requested keeps the leases whose holder was asked to let go', async () => {
    const { sessionId } = await s.openSession('rr-worker', 60_000);
    const asked = await hold('lease://rrf/a/asked', sessionId, 30_000);
    await hold('lease://rrf/a/quiet', sessionId, 30_000);
    const r = await s.call('POST', leasePath('lease://rrf/a/asked', 'release-request'), { request_id: rid(), reason: REASON, expected_fencing_token: asked.fencing_token });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await routesOf('lease://rrf/**', '&release_requested=true'), ['lease://rrf/a/asked']);
    assert.deepEqual(await routesOf('lease://rrf/**', '&release_requested=false'), ['lease://rrf/a/asked', 'lease://rrf/a/quiet']);
    // An exact selector is a point read, filtered the same way.
    assert.deepEqual(await routesOf('lease://rrf/a/quiet', '&release_requested=true'), []);
  });

  test('with waiters keeps the leases whose route has a queued acquire, on every instance', async () => {
    const holder = await s.openSession('waited-on', 60_000);
    const waiter = await s.openSession('waiter', 60_000);
    const held = await hold('lease://wq/a/busy', holder.sessionId, 30_000);
    await hold('lease://wq/a/idle', holder.sessionId, 30_000);
    const waiting = s.call('POST', leasePath('lease://wq/a/busy', 'acquire'), { session_id: waiter.sessionId, request_id: rid(), wait_ms: 20_000 });
    // Ask each instance (calls alternate on PostgreSQL): the queue is the store's there.
    for (let i = 0; i < s.urls.length; i++) {
      await waitFor('the busy route listed with its waiter', () => routesOf('lease://wq/**', '&with_waiters=true', 1), (r) => r.length === 1 && r[0] === 'lease://wq/a/busy');
    }
    const sum = await s.call('GET', summary('lease://wq/**', '&with_waiters=true'));
    assert.deepEqual([sum.body.total, sum.body.owners], [1, [{ owner_id: 'waited-on', leases: 1 }]]);
    const rel = await s.call('POST', leasePath('lease://wq/a/busy', 'release'), { session_id: holder.sessionId, lease_id: held.lease_id, fencing_token: held.fencing_token, request_id: rid() });
    assert.equal(rel.status, 200, rel.text);
    assert.equal((await waiting).body.code, 'lease_acquired');
    assert.deepEqual(await routesOf('lease://wq/**', '&with_waiters=true'), []);
  });

  test('a filter is bound into the cursor: a cursor used with another filter is cursor_invalid', async () => {
    const { sessionId } = await s.openSession('bind-worker', 60_000);
    for (const n of [1, 2, 3]) await hold(`lease://bind/a/r-${n}`, sessionId, 5_000);
    const first = await s.call('GET', list('lease://bind/**', '&expires_within_ms=30000&limit=1'));
    const cursor = encodeURIComponent(first.body.next_cursor as string);
    const same = await s.call('GET', list('lease://bind/**', `&expires_within_ms=30000&limit=1&cursor=${cursor}`));
    assert.equal(same.status, 200, same.text);
    for (const other of ['&expires_within_ms=20000', '', '&expires_within_ms=30000&with_waiters=true', '&expires_within_ms=30000&release_requested=true']) {
      const r = await s.call('GET', list('lease://bind/**', `${other}&limit=1&cursor=${cursor}`));
      assert.deepEqual([r.status, r.body.code], [400, 'cursor_invalid'], other);
    }
    // A cursor without filters stays what it was (earlier builds' cursors keep working).
    const plain = await s.call('GET', list('lease://bind/**', '&limit=1'));
    const again = await s.call('GET', list('lease://bind/**', `&limit=1&cursor=${encodeURIComponent(plain.body.next_cursor as string)}`));
    assert.equal(again.status, 200, again.text);
  });

  test('bad filter values are invalid_request naming the field', async () => {
    for (const [q, field] of [
      ['&expires_within_ms=0', 'expires_within_ms'],
      ['&expires_within_ms=3600001', 'expires_within_ms'],
      ['&expires_within_ms=soon', 'expires_within_ms'],
      ['&with_waiters=yes', 'with_waiters'],
      ['&release_requested=1', 'release_requested'],
    ] as const) {
      for (const path of [list('lease://**', q), summary('lease://**', q)]) {
        const r = await s.call('GET', path);
        assert.deepEqual([r.status, r.body.code], [400, 'invalid_request'], path);
        assert.match(r.body.message as string, new RegExp(field), path);
      }
    }
    const bad = await s.call('GET', summary('lease://**', '&limit=5'));
    assert.deepEqual([bad.status, bad.body.code], [400, 'invalid_request']);
    const sel = await s.call('GET', summary('lease://a/b/c/d'));
    assert.deepEqual([sel.status, sel.body.code], [400, 'invalid_selector']);
  });

  test('the summary counts each owner’s leases, top owners first, the rest as others', async () => {
    const owners = Array.from({ length: 12 }, (_, i) => `owner-${String(i).padStart(2, '0')}`);
    for (const [i, owner] of owners.entries()) {
      const { sessionId } = await s.openSession(owner, 60_000);
      // owner-00 holds 3, owner-01 2, every other owner 1.
      for (let n = 0; n < (i === 0 ? 3 : i === 1 ? 2 : 1); n++) await hold(`lease://sum/${owner}/r-${n}`, sessionId, 30_000);
    }
    const r = await s.call('GET', summary('lease://sum/**'));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.total, r.body.exact, r.body.owner_count, r.body.others], [15, true, 12, 2]);
    assert.equal(r.body.owners.length, 10);
    assert.deepEqual(r.body.owners.slice(0, 3), [
      { owner_id: 'owner-00', leases: 3 },
      { owner_id: 'owner-01', leases: 2 },
      { owner_id: 'owner-02', leases: 1 },
    ]);
    const one = await s.call('GET', summary('lease://sum/**', '&owner_id=owner-01'));
    assert.deepEqual([one.body.total, one.body.owners], [2, [{ owner_id: 'owner-01', leases: 2 }]]);
  });

  test('the summary counts up to the per-read budget and then says its total is a lower bound; the lock-delay list pages on the same budget', async () => {
    const capped = await startTestServer({ engine: { limits: { listBudget: 5 } } });
    try {
      const { sessionId } = await capped.openSession('many', 60_000);
      for (let n = 0; n < 8; n++) {
        const r = await capped.call('POST', leasePath(`lease://cap/a/r-${n}`, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 30_000 });
        assert.equal(r.status, 200, r.text);
      }
      const r = await capped.call('GET', summary('lease://cap/**'));
      assert.deepEqual([r.body.total, r.body.exact, r.body.examined], [5, false, 5]);

      // The lock-delay list spends the same budget: a page that runs out of it answers what it found, with a cursor.
      const put = await capped.call('PUT', '/api/v1/policies', { selector: 'lease://**', reason: REASON, lock_delay_ms: 60_000 });
      assert.equal(put.status, 200, put.text);
      for (let n = 0; n < 7; n++) {
        const route = `lease://${n % 2 ? 'capd' : 'capx'}/a/r-${n}`;
        const l = await capped.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 30_000 });
        const f = await capped.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: l.body.lease.fencing_token });
        assert.equal(f.status, 200, f.text);
      }
      const pages: string[][] = [];
      let cursor: string | null = null;
      do {
        const p = await capped.call('GET', delays('lease://capd/*/*', `&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
        assert.equal(p.status, 200, p.text);
        pages.push((p.body.items as Array<{ route: string }>).map((d) => d.route));
        cursor = p.body.next_cursor;
      } while (cursor && pages.length < 10);
      assert.deepEqual(pages.flat(), ['lease://capd/a/r-1', 'lease://capd/a/r-3', 'lease://capd/a/r-5']);
      const wide = await capped.call('GET', delays('lease://*/a/*', '&limit=100'));
      assert.equal(wide.body.items.length, 5, 'the first page examines 5 delays of 7');
      assert.equal(typeof wide.body.next_cursor, 'string');
    } finally {
      await capped.close();
    }
  });

  test('routes in lock-delay are listed with their deadline, paged in route order; held and free routes are not', async () => {
    const put = await s.call('PUT', '/api/v1/policies', { selector: 'lease://ld/**', reason: REASON, lock_delay_ms: 60_000 });
    assert.equal(put.status, 200, put.text);
    const { sessionId } = await s.openSession('delayed', 60_000);
    for (const n of [1, 2, 3]) {
      const l = await hold(`lease://ld/a/r-${n}`, sessionId, 30_000);
      const f = await s.call('POST', leasePath(`lease://ld/a/r-${n}`, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: l.fencing_token });
      assert.equal(f.status, 200, f.text);
    }
    await hold('lease://ld/a/r-4', sessionId, 30_000);
    const seen: Array<{ route: string; lock_delay_until: string; remaining_ms: number }> = [];
    let cursor: string | null = null;
    do {
      const r = await s.call('GET', delays('lease://ld/**', `&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`));
      assert.deepEqual([r.status, r.body.code], [200, 'lock_delay_listed'], r.text);
      seen.push(...r.body.items);
      cursor = r.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen.map((d) => d.route), ['lease://ld/a/r-1', 'lease://ld/a/r-2', 'lease://ld/a/r-3']);
    for (const d of seen) {
      assert.ok(d.remaining_ms > 0 && d.remaining_ms <= 60_000, String(d.remaining_ms));
      assert.ok(Date.parse(d.lock_delay_until) > Date.now(), d.lock_delay_until);
    }
    // Wildcards in any segment, and the exact route.
    assert.equal((await s.call('GET', delays('lease://*/a/r-2'))).body.items.length, 1);
    assert.equal((await s.call('GET', delays('lease://ld/a/r-4'))).body.items.length, 0);
    const first = await s.call('GET', delays('lease://ld/**', '&limit=1'));
    const other = await s.call('GET', delays('lease://ld/a/*', `&limit=1&cursor=${encodeURIComponent(first.body.next_cursor as string)}`));
    assert.deepEqual([other.status, other.body.code], [400, 'cursor_invalid']);
  });

  test('each read needs read on its selector', async () => {
    const token = await s.createToken(['lease://mine/**#read']);
    for (const path of [summary('lease://theirs/**'), delays('lease://theirs/**')]) {
      const r = await s.call('GET', path, undefined, { token });
      assert.deepEqual([r.status, r.body.code], [403, 'access_denied'], path);
    }
    for (const path of [summary('lease://mine/**'), delays('lease://mine/**')]) {
      const r = await s.call('GET', path, undefined, { token });
      assert.equal(r.status, 200, r.text);
    }
  });
});
