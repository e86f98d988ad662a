/**
 * Release requests over HTTP (docs/release-requests.md). Run on the test
 * store (SQLite, and PostgreSQL with two instances in the second pass): on
 * PostgreSQL requests go to instance A and every observation (inspect, list,
 * keepalive, the feed) is read from instance B, so what is tested is what
 * another instance sees.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, leasePath, rid, startTestServer, TEST_STORE, type CallOptions, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';

const REASON = 'deploying renderer v2; please finish your page and let go';

async function waitUntil(pred: () => Promise<boolean> | boolean, timeoutMs = 8_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** One instance of the test server: calls go to it alone. */
function instance(s: TestServer, url: string) {
  return {
    url,
    token: s.token,
    call: (method: string, path: string, body?: unknown, o: CallOptions = {}) => call(url, method, path, body, { ...o, token: o.token === null ? undefined : (o.token ?? s.token) }),
    openSession: (ownerId?: string, ttlMs?: number) => s.openSession(ownerId, ttlMs),
    createToken: (grants: string[], extra?: Record<string, unknown>) => s.createToken(grants, extra),
  };
}

describe(`release requests (${TEST_STORE === 'postgres' ? 'PostgreSQL, two instances' : 'SQLite'})`, () => {
  let s: TestServer;
  /** `a` takes the writes; `b` is where they are observed (the same server on SQLite). */
  let a: ReturnType<typeof instance>;
  let b: ReturnType<typeof instance>;

  before(async () => {
    s = await startTestServer({ engine: { sweepIntervalMs: 50 } });
    a = instance(s, s.urls[0]!);
    b = instance(s, s.urls[s.urls.length - 1]!);
  });
  after(async () => {
    await s.close();
  });

  async function hold(route: string, ownerId = 'worker-7', sessionTtlMs = 15_000, ttlMs = 15_000) {
    const { sessionId } = await a.openSession(ownerId, sessionTtlMs);
    const r = await a.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: ttlMs });
    assert.equal(r.status, 200, r.text);
    return { sessionId, leaseId: r.body.lease.lease_id as string, token: r.body.lease.fencing_token as number };
  }
  const proof = (h: { sessionId: string; leaseId: string; token: number }) => ({ session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() });
  const ask = (route: string, token: number, opts: { reason?: string; requestId?: string; by?: string } = {}) =>
    a.call('POST', leasePath(route, 'release-request'), { request_id: opts.requestId ?? rid(), reason: opts.reason ?? REASON, expected_fencing_token: token }, { token: opts.by });

  test('a contender (write) and an operator (admin) may ask; the lease carries the newest request in inspect, list, renew and keepalive', async () => {
    const route = 'lease://rr/render/doc-1';
    const h = await hold(route);
    const writer = await a.createToken(['lease://rr/**#write']);
    const first = await ask(route, h.token, { by: writer, reason: 'contender needs doc-1 for the nightly rebuild' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.code, 'release_requested');
    assert.deepEqual([first.body.route, first.body.fencing_token], [route, h.token]);
    const whoWriter = (await a.call('GET', '/api/v1/auth/whoami', undefined, { token: writer })).body.token_id;
    assert.equal(first.body.release_request.token_id, whoWriter);
    assert.equal(first.body.release_request.reason, 'contender needs doc-1 for the nightly rebuild');

    const second = await ask(route, h.token); // the admin token: replaces the first
    assert.equal(second.status, 200, second.text);
    const admin = (await a.call('GET', '/api/v1/auth/whoami')).body.token_id;
    const seen = (await b.call('GET', leasePath(route))).body.lease.release_request;
    assert.deepEqual(seen, { requested_at: second.body.release_request.requested_at, reason: REASON, token_id: admin });
    assert.ok(Date.parse(seen.requested_at) >= Date.parse(first.body.release_request.requested_at));

    const listed = await b.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://rr/**')}`);
    assert.deepEqual(listed.body.items.find((l: { route: string }) => l.route === route).release_request, seen);

    const renewed = await a.call('POST', leasePath(route, 'renew'), proof(h));
    assert.equal(renewed.status, 200, renewed.text);
    assert.deepEqual(renewed.body.release_requests, [{ route, fencing_token: h.token, requested_at: seen.requested_at, reason: REASON }]);
    assert.deepEqual(renewed.body.lease.release_request, seen, 'renewing does not clear it: only the end of the lease does');

    const kept = await b.call('POST', '/api/v1/sessions/keepalive', { session_id: h.sessionId });
    assert.equal(kept.status, 200, kept.text);
    assert.deepEqual(kept.body.release_requests, [{ route, fencing_token: h.token, requested_at: seen.requested_at, reason: REASON }]);

    // Another session's answers list nothing.
    const other = await hold('lease://rr/render/doc-2');
    const otherRenew = await a.call('POST', leasePath('lease://rr/render/doc-2', 'renew'), proof(other));
    assert.deepEqual(otherRenew.body.release_requests, []);
    assert.equal(otherRenew.body.lease.release_request, null);
  });

  test('a request is idempotent by request_id, and audited as lease_release_request', async () => {
    const route = 'lease://rr/audit/doc-1';
    const h = await hold(route, 'auditee');
    const requestId = rid('ask');
    const one = await ask(route, h.token, { requestId });
    const again = await ask(route, h.token, { requestId });
    assert.deepEqual(again.body.release_request, one.body.release_request);
    const differs = await ask(route, h.token, { requestId, reason: 'a different reason entirely' });
    assert.deepEqual([differs.status, differs.body.code], [409, 'idempotency_conflict']);

    const audit = await b.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&event_type=lease_release_request`);
    assert.equal(audit.status, 200, audit.text);
    const ok = audit.body.items.filter((e: { result: string }) => e.result === 'release_requested');
    assert.equal(ok.length, 1, 'a replay is not audited twice');
    assert.deepEqual([ok[0].owner_id, ok[0].fencing_token, ok[0].reason], ['auditee', h.token, REASON]);
  });

  test('read is refused; a different token is lease_mismatch, a free route lease_not_found; a bad reason invalid_request; none changes anything', async () => {
    const route = 'lease://rr/refuse/doc-1';
    const h = await hold(route);
    const reader = await a.createToken(['lease://rr/**#read']);
    const denied = await ask(route, h.token, { by: reader });
    assert.deepEqual([denied.status, denied.body.code], [403, 'access_denied']);
    const mismatch = await ask(route, h.token + 1);
    assert.deepEqual([mismatch.status, mismatch.body.code], [409, 'lease_mismatch']);
    const short = await ask(route, h.token, { reason: 'too short' });
    assert.deepEqual([short.status, short.body.code], [400, 'invalid_request']);
    const long = await ask(route, h.token, { reason: 'x'.repeat(501) });
    assert.deepEqual([long.status, long.body.code], [400, 'invalid_request']);
    assert.equal((await b.call('GET', leasePath(route))).body.lease.release_request, null);
    const free = await ask('lease://rr/refuse/nobody', 1);
    assert.deepEqual([free.status, free.body.code], [404, 'lease_not_found']);
  });

  test('the feed sends release_requested to every matching registration, never to others or across families, and it is not a change', async () => {
    const route = 'lease://rrfeed/a/x';
    const h = await hold(route);
    const open = async (selectors: string[], token = b.token) => {
      const q = selectors.map((x) => `selector=${encodeURIComponent(x)}`).join('&');
      const c = await SseClient.open(b.url, `/api/v1/inventory/stream?${q}`, { token });
      await c.waitFor((e) => e.event === 'hello');
      const subs = await c.waitForCount((e) => e.event === 'subscribed', selectors.length);
      return { c, subs: subs.map((e) => e.data.subscription_id as string) };
    };
    const matching = await open(['lease://rrfeed/a/*', route]);
    const elsewhere = await open(['lease://rrfeed/b/*']);
    const foreignToken = await a.createToken(['lease://**#read'], { family: 'rr-other', root: true });
    const foreign = await open(['lease://**'], foreignToken);
    const revisionBefore = (await b.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://rrfeed/**')}`)).body.revision;

    const r = await ask(route, h.token);
    assert.equal(r.status, 200, r.text);
    const events = await matching.c.waitForCount((e) => e.event === 'release_requested', 2);
    assert.deepEqual(events.map((e) => e.data.subscription_id).sort(), [...matching.subs].sort(), 'one per registration');
    for (const e of events) {
      assert.deepEqual(Object.keys(e.data).sort(), ['fencing_token', 'reason', 'requested_at', 'route', 'subscription_id']);
      assert.deepEqual([e.data.route, e.data.fencing_token, e.data.reason, e.data.requested_at], [route, h.token, REASON, r.body.release_request.requested_at]);
      assert.equal(e.id, undefined, 'not a change: no revision');
    }
    // A later change reaches every stream, so anything sent before it has arrived too.
    await a.call('POST', leasePath('lease://rrfeed/b/marker', 'acquire'), { session_id: h.sessionId, request_id: rid() });
    await elsewhere.c.waitFor((e) => e.event === 'change');
    await new Promise((r) => setTimeout(r, 200)); // other connections: frames queued before the marker's
    assert.equal(elsewhere.c.of('release_requested').length, 0);
    assert.equal(foreign.c.of('release_requested').length, 0, 'never across families');
    assert.equal(matching.c.of('change').length, 0, 'the request is not a change');
    const revisionAfter = (await b.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://rrfeed/a/*')}`)).body.revision;
    assert.equal(revisionAfter, revisionBefore + 1, 'only the marker acquire moved the revision');
    for (const s of [matching, elsewhere, foreign]) s.c.close();
  });

  test('the audit API reads one route oldest first over a window, page by page, for the timeline', async () => {
    const route = 'lease://rrhist/a/x';
    const since = new Date().toISOString();
    for (let i = 0; i < 3; i++) {
      const h = await hold(route, `tenure-${i}`);
      await ask(route, h.token);
      await a.call('POST', leasePath(route, 'release'), proof(h));
    }
    await hold('lease://rrhist/a/other'); // another route's events are never read
    // Read where the events were written: an instance flushes its own audit buffer before answering.
    const q = (extra: string) => a.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&since=${since}${extra}`);
    const newest = (await q('&limit=1000')).body.items as Array<{ id: string; event_type: string }>;
    const oldest: Array<{ id: string; event_type: string }> = [];
    let cursor: string | null = null;
    do {
      const r = await q(`&order=oldest&limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(r.status, 200, r.text);
      oldest.push(...r.body.items);
      cursor = r.body.next_cursor;
    } while (cursor);
    assert.deepEqual(oldest.map((e) => e.id), newest.map((e) => e.id).reverse());
    assert.deepEqual(
      oldest.filter((e) => e.event_type !== 'session_open').map((e) => e.event_type).slice(0, 3),
      ['lease_acquire', 'lease_release_request', 'lease_release'],
    );
    const until = (await q('&order=oldest&limit=1')).body.items[0];
    const none = await a.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&order=oldest&until=${since}`);
    assert.deepEqual(none.body.items.filter((e: { id: string }) => e.id === until.id), [], 'until is exclusive of the window');
    const wild = await a.call('GET', `/api/v1/audit?route=${encodeURIComponent('lease://rrhist/**')}&order=oldest`);
    assert.deepEqual([wild.status, wild.body.code], [400, 'invalid_request']);
  });

  test('the request ends with the lease: release, force-release, revoke, session close, lease expiry, session expiry', async () => {
    const ends: Array<[string, (route: string, h: Awaited<ReturnType<typeof hold>>) => Promise<void>, { sessionTtlMs?: number; ttlMs?: number }?]> = [
      ['release', async (route, h) => void (await a.call('POST', leasePath(route, 'release'), proof(h)))],
      ['force-release', async (route, h) => void (await a.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token }))],
      ['revoke', async (route, h) => void (await a.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token }))],
      ['session-close', async (_route, h) => void (await a.call('POST', '/api/v1/sessions/close', { session_id: h.sessionId }))],
      ['lease-expiry', async () => undefined, { ttlMs: 1_000 }],
      ['session-expiry', async () => undefined, { sessionTtlMs: 2_000 }],
    ];
    await Promise.all(
      ends.map(async ([name, end, o = {}]) => {
        const route = `lease://rrend/${name}/r`;
        const h = await hold(route, `holder-${name}`, o.sessionTtlMs ?? 15_000, o.ttlMs ?? 15_000);
        assert.equal((await ask(route, h.token)).status, 200);
        await end(route, h);
        await waitUntil(async () => (await b.call('GET', leasePath(route))).status === 404);
        const next = await hold(route, `successor-${name}`);
        assert.ok(next.token > h.token);
        const seen = await b.call('GET', leasePath(route));
        assert.equal(seen.body.lease.release_request, null, `${name}: the successor starts without a request`);
        const kept = await a.call('POST', '/api/v1/sessions/keepalive', { session_id: next.sessionId });
        assert.deepEqual(kept.body.release_requests, [], name);
      }),
    );
  });
});
