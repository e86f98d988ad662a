import { millis } from '../store/millis';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, requestClosed, rid, startTestServer, type TestServer } from '../testing/harness';
import { SseClient, SseRefused, type SseEvent } from '../testing/sse';
import { gatedStore } from '../testing/gated-store';
import { waitFor } from '../testing/wait';

let s: TestServer;
let gated: ReturnType<typeof gatedStore>;
before(async () => {
  s = await startTestServer({
    engine: { sweepIntervalMs: 50 },
    wrapStore: (inner) => (gated = gatedStore(inner)),
  });
});
after(async () => {
  await s.close();
});

const REASON = 'stuck renderer after node drain, ticket OPS-1234';

function streamPath(selectors: string[], renewals = false): string {
  const q = selectors.map((x) => `selector=${encodeURIComponent(x)}`);
  if (renewals) q.push('renewals=1');
  return `/api/v1/inventory/stream${q.length ? `?${q.join('&')}` : ''}`;
}

async function openStream(selectors: string[], opts: { token?: string; renewals?: boolean } = {}) {
  const c = await SseClient.open(s.url, streamPath(selectors, opts.renewals), { token: opts.token ?? s.token });
  const hello = await c.waitFor((e) => e.event === 'hello');
  await c.waitForCount((e) => e.event === 'subscribed', selectors.length);
  return { c, streamId: hello.data.stream_id as string, hello: hello.data, subs: c.of('subscribed').map((e) => e.data) };
}

function register(streamId: string, selector: string, opts: { token?: string; renewals?: boolean } = {}) {
  const body: Record<string, unknown> = { selector };
  if (opts.renewals !== undefined) body.renewals = opts.renewals;
  return s.call('POST', `/api/v1/inventory/streams/${streamId}/subscriptions`, body, { token: opts.token });
}

async function hold(route: string, sessionId?: string, extra: Record<string, unknown> = {}) {
  const sid = sessionId ?? (await s.openSession()).sessionId;
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sid, request_id: rid(), ...extra });
  assert.equal(a.status, 200, a.text);
  return { sessionId: sid, leaseId: a.body.lease.lease_id as string, token: a.body.lease.fencing_token as number, lease: a.body.lease };
}

function proof(h: { sessionId: string; leaseId: string; token: number }) {
  return { session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() };
}

const changes = (c: SseClient, route?: string): SseEvent[] => c.events.filter((e) => e.event === 'change' && (route === undefined || e.data.route === route));

/** Wait for the `n`th change of `route` on the stream; returns all of them. */
async function changesOf(c: SseClient, route: string, n: number): Promise<SseEvent[]> {
  return c.waitForCount((e) => e.event === 'change' && e.data.route === route, n);
}

const feedStats = () => s.app.engine.feed.stats();

describe('live feed: stream and registrations', () => {
  test('hello, then subscribed (created true; a duplicate answers created false with the same id)', async () => {
    const { c, streamId, hello, subs } = await openStream(['lease://hs/a/*', 'lease://hs/a/*']);
    assert.equal(c.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(c.headers['cache-control'], 'no-cache, no-transform');
    assert.match(streamId, /^st_/);
    assert.equal(hello.epoch, s.app.store.epoch());
    assert.equal(typeof hello.revision, 'number');
    assert.equal(hello.heartbeat_ms, 15_000);
    assert.deepEqual(
      subs.map((x) => [x.selector, x.created]),
      [
        ['lease://hs/a/*', true],
        ['lease://hs/a/*', false],
      ],
    );
    assert.equal(subs[0].subscription_id, subs[1].subscription_id);
    const again = await register(streamId, 'lease://hs/a/*');
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.body.code, again.body.subscription_id, again.body.created], ['subscribed', subs[0].subscription_id, false]);
    const other = await register(streamId, 'lease://hs/**');
    assert.deepEqual([other.body.created, other.body.subscription_id === subs[0].subscription_id], [true, false]);
    // The stream also carries each answer as a `subscribed` event.
    await c.waitForCount((e) => e.event === 'subscribed', 4);
    c.close();
  });

  test('every change kind arrives once with its revision (session close and expiry too); acquired carries the lease and queued', async () => {
    const { c } = await openStream(['lease://kinds/**']);
    const base = 'lease://kinds/k';
    // session expiry (2 s session, 30 s lease): its lease ends as session_closed; checked at the end
    const expiring = await s.openSession('short', 2_000);
    await hold(`${base}/sx`, expiring.sessionId);
    // acquired + released
    const a = await hold(`${base}/rel`);
    await s.call('POST', leasePath(`${base}/rel`, 'release'), proof(a));
    const [acq, rel] = await changesOf(c, `${base}/rel`, 2);
    assert.equal(acq!.data.change, 'acquired');
    assert.equal(acq!.data.queued, false);
    assert.equal(acq!.data.lease.fencing_token, a.token);
    assert.equal(acq!.data.lease.owner_id, 'worker');
    assert.equal(acq!.id, String(acq!.data.revision));
    assert.equal(rel!.data.change, 'released');
    assert.ok(rel!.data.revision > acq!.data.revision);
    assert.equal(rel!.data.lease, undefined);
    assert.equal(rel!.data.owner_id, undefined, 'ending changes never name the former holder');

    // expired (1 s lease, swept)
    await hold(`${base}/exp`, undefined, { ttl_ms: 1_000 });
    const exp = await c.waitFor((e) => e.data?.route === `${base}/exp` && e.data.change === 'expired', 4_000);
    assert.ok(exp);

    // session_closed
    const sc = await hold(`${base}/sc`);
    await s.call('POST', '/api/v1/sessions/close', { session_id: sc.sessionId });
    assert.equal((await changesOf(c, `${base}/sc`, 2))[1]!.data.change, 'session_closed');

    // force_released and revoked
    const fr = await hold(`${base}/fr`);
    await s.call('POST', leasePath(`${base}/fr`, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: fr.token });
    assert.equal((await changesOf(c, `${base}/fr`, 2))[1]!.data.change, 'force_released');
    const rv = await hold(`${base}/rv`);
    await s.call('POST', leasePath(`${base}/rv`, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: rv.token });
    assert.equal((await changesOf(c, `${base}/rv`, 2))[1]!.data.change, 'revoked');

    // a grant from the queue: released, then acquired with queued true
    const q = await hold(`${base}/q`);
    const waiter = await s.openSession('waiter');
    const waiting = s.call('POST', leasePath(`${base}/q`, 'acquire'), { session_id: waiter.sessionId, request_id: rid(), wait_ms: 10_000 });
    await waitUntil(async () => (await s.call('GET', leasePath(`${base}/q`))).body.lease?.waiters === 1);
    await s.call('POST', leasePath(`${base}/q`, 'release'), proof(q));
    assert.equal((await waiting).status, 200);
    const qs = await changesOf(c, `${base}/q`, 3);
    assert.deepEqual(
      qs.map((e) => [e.data.change, e.data.queued]),
      [
        ['acquired', false],
        ['released', undefined],
        ['acquired', true],
      ],
    );
    assert.equal(qs[2]!.data.lease.owner_id, 'waiter');
    const sx = await c.waitForCount((e) => e.event === 'change' && e.data.route === `${base}/sx`, 2, 5_000);
    assert.deepEqual(sx.map((e) => e.data.change), ['acquired', 'session_closed']);
    c.close();
  });

  test('rolled_back: a grant whose waiting client left before it was answered', async () => {
    const { c } = await openStream(['lease://kinds/rb/*']);
    const route = 'lease://kinds/rb/x';
    const h = await hold(route);
    const waiter = await s.openSession('gone');
    const ac = new AbortController();
    const waiterLeft = requestClosed(s.app, 'POST', leasePath(route, 'acquire'));
    const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: waiter.sessionId, request_id: rid(), wait_ms: 10_000 }, { signal: ac.signal }).catch(() => 'aborted');
    await waitUntil(async () => (await s.call('GET', leasePath(route))).body.lease?.waiters === 1);
    // Hold the release's step after it commits (the waiter is granted but not yet answered), drop the waiter's client, then let go.
    const open = gated.hold();
    const release = s.call('POST', leasePath(route, 'release'), proof(h));
    try {
      await waitUntil(() => s.app.engine.parts.waiters.held('default', route) === 0); // claimed inside the (held) release step
      ac.abort();
      await waiterLeft; // the server has seen the waiting client leave
    } finally {
      open(); // a failed wait must not leave every later step of the file held
    }
    assert.equal((await release).status, 200);
    assert.equal(await waiting, 'aborted');
    const all = await changesOf(c, route, 4);
    assert.deepEqual(
      all.map((e) => [e.data.change, e.data.queued]),
      [
        ['acquired', false],
        ['released', undefined],
        ['acquired', true],
        ['rolled_back', undefined],
      ],
    );
    assert.equal((await s.call('GET', leasePath(route))).status, 404, 'the rolled-back grant left the route free');
    c.close();
  });

  test('a waiter whose client hangs up just as the route frees is never left holding it (20 tries, no gap)', async () => {
    const { request } = await import('node:http');
    const { c } = await openStream(['lease://kinds/hangup/*']);
    const waiter = await s.openSession('hangs-up');
    const next = await s.openSession('next-in-line');
    for (let i = 0; i < 20; i++) {
      const route = `lease://kinds/hangup/r${i}`;
      const h = await hold(route);
      // The first waiter on a connection of its own, so that it can hang up.
      const body = JSON.stringify({ session_id: waiter.sessionId, request_id: rid(), wait_ms: 10_000 });
      const rq = request(new URL(leasePath(route, 'acquire'), s.url), {
        method: 'POST',
        headers: { Authorization: `Bearer ${s.token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      });
      let answered = false;
      rq.on('error', () => undefined);
      rq.on('response', (res) => {
        answered = true;
        res.resume();
      });
      rq.end(body);
      await waitUntil(async () => (await s.call('GET', leasePath(route))).body.lease?.waiters === 1);
      const second = s.call('POST', leasePath(route, 'acquire'), { session_id: next.sessionId, request_id: rid(), wait_ms: 5_000 });
      await waitUntil(async () => (await s.call('GET', leasePath(route))).body.lease?.waiters === 2);
      rq.destroy();
      const freed = await s.call('POST', leasePath(route, 'release'), proof(h));
      assert.equal(freed.status, 200, freed.text);
      const got = await second;
      assert.equal(got.status, 200, `try ${i}: the next waiter gets the route: ${got.text}`);
      assert.equal(got.body.lease.owner_id, 'next-in-line');
      assert.equal(answered, false);
      // If the gone waiter was granted at all, the grant was rolled back before the next waiter's.
      const kinds = (await changesOf(c, route, 3)).map((e) => `${e.data.change}${e.data.queued ? ':queued' : ''}`);
      assert.ok(
        JSON.stringify(kinds) === JSON.stringify(['acquired', 'released', 'acquired:queued']) ||
          JSON.stringify(kinds.slice(0, 4)) === JSON.stringify(['acquired', 'released', 'acquired:queued', 'rolled_back']),
        `try ${i}: ${kinds.join(', ')}`,
      );
      const release = await s.call('POST', leasePath(route, 'release'), { session_id: next.sessionId, lease_id: got.body.lease.lease_id, fencing_token: got.body.lease.fencing_token, request_id: rid() });
      assert.equal(release.status, 200, release.text);
    }
    c.close();
  });

  test('no event for a renewal, a failed acquire or a queued acquire', async () => {
    const { c } = await openStream(['lease://quiet/**']);
    const route = 'lease://quiet/a/x';
    const h = await hold(route);
    await changesOf(c, route, 1);
    assert.equal((await s.call('POST', leasePath(route, 'renew'), proof(h))).status, 200);
    const other = await s.openSession('other');
    assert.equal((await s.call('POST', leasePath(route, 'acquire'), { session_id: other.sessionId, request_id: rid() })).status, 409);
    const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: other.sessionId, request_id: rid(), wait_ms: 300 });
    assert.equal((await waiting).status, 409);
    // A marker change after all of them: everything before it has been delivered.
    await hold('lease://quiet/a/marker');
    await changesOf(c, 'lease://quiet/a/marker', 1);
    assert.deepEqual(
      changes(c).map((e) => [e.data.route, e.data.change]),
      [
        [route, 'acquired'],
        ['lease://quiet/a/marker', 'acquired'],
      ],
    );
    assert.equal(c.of('renewed').length, 0);
    c.close();
  });

  test('overlapping selectors: one event per matching registration; unsubscribe stops exactly one', async () => {
    const sels = ['lease://ov/a/*', 'lease://ov/**', 'lease://*/a/x', 'lease://ov/a/x', 'lease://ov/b/*'];
    const { c, streamId, subs } = await openStream(sels);
    const route = 'lease://ov/a/x';
    await hold(route);
    const got = await changesOf(c, route, 4);
    const ids = got.map((e) => e.data.subscription_id as string).sort();
    const expected = subs.filter((x) => x.selector !== 'lease://ov/b/*').map((x) => x.subscription_id as string);
    assert.deepEqual(ids, expected.sort());
    assert.equal(new Set(got.map((e) => e.data.revision)).size, 1, 'the same change, once per registration');

    const gone = subs.find((x) => x.selector === 'lease://ov/**')!.subscription_id;
    const del = await s.call('DELETE', `/api/v1/inventory/streams/${streamId}/subscriptions/${gone}`);
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.code, 'unsubscribed');
    const again = await s.call('DELETE', `/api/v1/inventory/streams/${streamId}/subscriptions/${gone}`);
    assert.deepEqual([again.status, again.body.code], [404, 'not_found']);

    await hold('lease://ov/a/x2'); // matches a/* and ** only; ** is gone
    await s.call('POST', '/api/v1/sessions/close', { session_id: (await hold('lease://ov/a/y')).sessionId });
    const y = await changesOf(c, 'lease://ov/a/y', 2);
    assert.ok(y.every((e) => e.data.subscription_id === subs[0].subscription_id), 'only lease://ov/a/* still matches lease://ov/a/y');
    const x2 = await changesOf(c, 'lease://ov/a/x2', 1);
    assert.equal(x2.length, 1);
    assert.equal(x2[0]!.data.subscription_id, subs[0].subscription_id);
    c.close();
  });

  test('the 129th wildcard registration is refused while a duplicate still succeeds', async () => {
    const { c, streamId } = await openStream([]);
    for (let i = 0; i < 128; i++) {
      const r = await register(streamId, `lease://cap/w${i}/*`);
      assert.equal(r.status, 200, r.text);
    }
    const over = await register(streamId, 'lease://cap/w128/*');
    assert.deepEqual([over.status, over.body.code], [429, 'rate_limited']);
    const dup = await register(streamId, 'lease://cap/w5/*');
    assert.deepEqual([dup.status, dup.body.created], [200, false]);
    const exact = await register(streamId, 'lease://cap/w128/exact');
    assert.equal(exact.status, 200, 'exact registrations have their own cap');
    // Refused opens retain nothing: 129 wildcards in one open is refused as a whole.
    const before = feedStats();
    const many = Array.from({ length: 129 }, (_, i) => `lease://cap2/w${i}/*`);
    await assert.rejects(SseClient.open(s.url, streamPath(many), { token: s.token }), (e: unknown) => e instanceof SseRefused && e.status === 429 && e.body.code === 'rate_limited');
    assert.deepEqual(feedStats().wildcard, before.wildcard);
    assert.deepEqual(feedStats().streams, before.streams);
    c.close();
  });

  test('a disconnect frees the stream and its registrations', async () => {
    await waitUntil(() => feedStats().streams === 0); // the earlier tests' streams are gone
    const before = feedStats();
    const { c } = await openStream(['lease://dc/a/*', 'lease://dc/a/b', 'lease://dc/**']);
    const during = feedStats();
    assert.deepEqual([during.streams - before.streams, during.wildcard - before.wildcard, during.exact - before.exact], [1, 2, 1]);
    c.close();
    await waitUntil(() => feedStats().streams === before.streams);
    const now = feedStats();
    assert.deepEqual([now.streams, now.wildcard, now.exact], [before.streams, before.wildcard, before.exact]);
  });
});

describe('live feed: authorization and isolation', () => {
  test('a selector outside the grant refuses the stream (403, nothing retained); malformed is 400', async () => {
    const narrow = await s.createToken(['lease://iso/a/*#read']);
    const before = feedStats();
    await assert.rejects(SseClient.open(s.url, streamPath(['lease://iso/a/*', 'lease://iso/**']), { token: narrow }), (e: unknown) => e instanceof SseRefused && e.status === 403 && e.body.code === 'access_denied');
    await assert.rejects(SseClient.open(s.url, streamPath(['lease://iso/a']), { token: narrow }), (e: unknown) => e instanceof SseRefused && e.status === 400 && e.body.code === 'invalid_selector');
    await assert.rejects(SseClient.open(s.url, '/api/v1/inventory/stream?selectors=x', { token: narrow }), (e: unknown) => e instanceof SseRefused && e.body.code === 'invalid_request');
    await assert.rejects(SseClient.open(s.url, streamPath([]), {}), (e: unknown) => e instanceof SseRefused && e.status === 401);
    assert.deepEqual(feedStats().streams, before.streams);

    const { c, streamId } = await openStream(['lease://iso/a/*'], { token: narrow });
    const denied = await register(streamId, 'lease://iso/b/*', { token: narrow });
    assert.deepEqual([denied.status, denied.body.code], [403, 'access_denied']);
    const bad = await register(streamId, 'lease://iso/***', { token: narrow });
    assert.deepEqual([bad.status, bad.body.code], [400, 'invalid_selector']);
    // The stream id works only with the token that opened it.
    const foreign = await register(streamId, 'lease://iso/a/*');
    assert.deepEqual([foreign.status, foreign.body.code], [404, 'not_found']);
    const unknown = await register('st_nope', 'lease://iso/a/*', { token: narrow });
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'not_found']);
    // Outside the grant nothing is ever sent.
    await hold('lease://iso/b/x');
    await hold('lease://iso/a/x');
    await changesOf(c, 'lease://iso/a/x', 1);
    assert.deepEqual(
      changes(c).map((e) => e.data.route),
      ['lease://iso/a/x'],
    );
    c.close();
  });

  test('no event crosses a family', async () => {
    const other = await s.createToken(['lease://**#admin'], { family: 'fam-b' });
    const a = await openStream(['lease://fam/**']);
    const b = await openStream(['lease://fam/**'], { token: other });
    const { sessionId } = await s.openSession('b-worker', 15_000, other);
    const r = await s.call('POST', leasePath('lease://fam/x/y', 'acquire'), { session_id: sessionId, request_id: rid() }, { token: other });
    assert.equal(r.status, 200, r.text);
    await changesOf(b.c, 'lease://fam/x/y', 1);
    await hold('lease://fam/x/y'); // the same route in family default
    await changesOf(a.c, 'lease://fam/x/y', 1);
    await hold('lease://fam/x/z');
    await changesOf(a.c, 'lease://fam/x/z', 1);
    assert.deepEqual(changes(a.c).map((e) => e.data.lease.owner_id), ['worker', 'worker']);
    assert.deepEqual(changes(b.c).map((e) => e.data.lease.owner_id), ['b-worker']);
    a.c.close();
    b.c.close();
  });

  test('an embed token can open a stream on its selector, and nothing wider', async () => {
    const e = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://emb/a/*' });
    assert.equal(e.status, 201, e.text);
    const embed = e.body.token as string;
    const { c } = await openStream(['lease://emb/a/*'], { token: embed });
    await assert.rejects(SseClient.open(s.url, streamPath(['lease://emb/**']), { token: embed }), (x: unknown) => x instanceof SseRefused && x.status === 403);
    await hold('lease://emb/a/1');
    await changesOf(c, 'lease://emb/a/1', 1);
    c.close();
  });
});

describe('live feed: renewal hints', () => {
  test('renewed reaches only registrations that asked; asking again turns hints on for the same id', async () => {
    const route = 'lease://hint/a/x';
    const h = await hold(route);
    const withHints = await openStream(['lease://hint/a/*'], { renewals: true });
    const without = await openStream(['lease://hint/a/*']);
    const r = await s.call('POST', leasePath(route, 'renew'), proof(h));
    assert.equal(r.status, 200, r.text);
    const hint = await withHints.c.waitFor((e) => e.event === 'renewed');
    assert.deepEqual(Object.keys(hint.data).sort(), ['expires_at', 'renewal_count', 'route', 'subscription_id']);
    assert.deepEqual([hint.data.route, hint.data.renewal_count, hint.data.expires_at], [route, 1, r.body.lease.expires_at]);
    assert.equal(hint.id, undefined, 'renewals carry no revision');

    const on = await register(without.streamId, 'lease://hint/a/*', { renewals: true });
    assert.deepEqual([on.body.created, on.body.subscription_id], [false, without.subs[0].subscription_id]);
    await s.call('POST', leasePath(route, 'renew'), proof(h));
    const second = await without.c.waitFor((e) => e.event === 'renewed');
    assert.equal(second.data.renewal_count, 2);
    await withHints.c.waitForCount((e) => e.event === 'renewed', 2);
    // Before the second renewal the stream without hints had none.
    assert.equal(without.c.of('renewed').length, 1);
    withHints.c.close();
    without.c.close();
  });

  test('a stream holds at most 16 registrations with renewal hints', async () => {
    const { c, streamId } = await openStream([]);
    for (let i = 0; i < 16; i++) assert.equal((await register(streamId, `lease://hint16/r${i}/*`, { renewals: true })).status, 200);
    const over = await register(streamId, 'lease://hint16/r16/*', { renewals: true });
    assert.deepEqual([over.status, over.body.code], [429, 'rate_limited']);
    assert.equal((await register(streamId, 'lease://hint16/r16/*')).status, 200, 'without hints it is accepted');
    const turnOn = await register(streamId, 'lease://hint16/r16/*', { renewals: true });
    assert.deepEqual([turnOn.status, turnOn.body.code], [429, 'rate_limited']);
    c.close();
  });
});

describe('live feed: credentials end streams', () => {
  test('revoking the token closes its streams at once (token_revoked)', async () => {
    const t = await s.call('POST', '/api/v1/tokens', { name: 'feed', grants: ['lease://rev/**#read'] });
    const { c } = await openStream(['lease://rev/**'], { token: t.body.token });
    const startedAt = performance.now();
    assert.equal((await s.call('DELETE', `/api/v1/tokens/${t.body.token_id}`)).status, 200);
    const closed = await c.waitFor((e) => e.event === 'closed', 2_000);
    assert.equal(closed.data.reason, 'token_revoked');
    assert.ok(closed.at - startedAt < 1_000);
    await c.done;
  });

  test('logging out closes the streams opened with that login (logged_out)', async () => {
    const login = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null });
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const c = await SseClient.open(s.url, streamPath(['lease://lo/**']), { headers: { Cookie: cookie } });
    await c.waitFor((e) => e.event === 'subscribed');
    const bearer = await openStream(['lease://lo/**']); // same token, not the login: stays open
    const out = await s.call('POST', '/api/v1/auth/logout', {}, { token: null, headers: { Cookie: cookie, Origin: s.url } });
    assert.equal(out.status, 200, out.text);
    assert.equal((await c.waitFor((e) => e.event === 'closed')).data.reason, 'logged_out');
    await hold('lease://lo/a/b');
    await changesOf(bearer.c, 'lease://lo/a/b', 1);
    bearer.c.close();
  });

  test('a stream may not outlive its token: token_expired within one heartbeat', async () => {
    let now = Date.parse('2026-06-01T00:00:00Z');
    const srv = await startTestServer({ clock: () => millis(now), engine: { feed: { heartbeatMs: 200 } } });
    try {
      const e = await srv.call('POST', '/api/v1/embed-tokens', { selector: 'lease://exp/**', ttl_ms: 60_000 });
      const c = await SseClient.open(srv.url, streamPath(['lease://exp/**']), { token: e.body.token });
      const hello = await c.waitFor((x) => x.event === 'hello');
      assert.equal(hello.data.heartbeat_ms, 200);
      await c.waitFor(() => c.heartbeats >= 1, 2_000, 'a heartbeat');
      now += 60_000;
      const t0 = performance.now();
      const closed = await c.waitFor((x) => x.event === 'closed', 2_000);
      assert.equal(closed.data.reason, 'token_expired');
      assert.ok(closed.at - t0 <= 400, `closed after ${closed.at - t0} ms`);
    } finally {
      await srv.close();
    }
  });
});

describe('live feed: stream caps', () => {
  test('64 streams per token, LEASEHOLD_MAX_STREAMS per server; beyond, rate_limited', async () => {
    const srv = await startTestServer({ engine: { feed: { maxStreams: 70 } } });
    const open = (token: string) => SseClient.open(srv.url, streamPath([]), { token });
    const clients: SseClient[] = [];
    try {
      for (let i = 0; i < 64; i++) clients.push(await open(srv.token));
      await assert.rejects(open(srv.token), (e: unknown) => e instanceof SseRefused && e.status === 429 && e.body.code === 'rate_limited');
      const other = await srv.createToken(['lease://**#read']);
      for (let i = 0; i < 6; i++) clients.push(await open(other));
      await assert.rejects(open(other), (e: unknown) => e instanceof SseRefused && e.status === 429);
      // Closing one makes room again.
      clients.pop()!.close();
      await waitUntil(() => srv.app.engine.feed.stats().streams === 69);
      clients.push(await open(other));
    } finally {
      for (const c of clients) c.close();
      await srv.close();
    }
  });
});

/** The harness's waitFor (its budget scaled under CI, its failure naming what it saw), for a yes/no condition. */
async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs = 3_000, what = `the condition ${cond.toString().slice(0, 160)}`): Promise<void> {
  await waitFor(what, cond, (v) => v === true, timeoutMs);
}
