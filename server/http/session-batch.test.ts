/**
 * A session's batched calls over HTTP (docs/design.md "Batched calls"):
 * `POST /api/v1/sessions/renew` and `POST /api/v1/sessions/acquire`. Run on
 * the test store: SQLite, and PostgreSQL with two instances, the calls
 * alternating between them and the feed read from instance A, so what is
 * tested is also what another instance sees.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, leasePath, rid, startTestServer, TEST_STORE, type Reply, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';
import { waitFor } from '../testing/wait';

const RENEW = '/api/v1/sessions/renew';
const ACQUIRE = '/api/v1/sessions/acquire';
const REASON = 'batch test: let the contender have it';

interface Held {
  route: string;
  lease_id: string;
  fencing_token: number;
}

describe(`a session's batched calls (${TEST_STORE === 'postgres' ? 'PostgreSQL, two instances' : 'SQLite'})`, () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(async () => {
    await s.close();
  });

  const proof = (l: Held, extra: Record<string, unknown> = {}) => ({ route: l.route, lease_id: l.lease_id, fencing_token: l.fencing_token, ...extra });
  const renew = (sessionId: string, leases: unknown[], requestId = rid(), token?: string) => s.call('POST', RENEW, { session_id: sessionId, request_id: requestId, leases }, { token });
  const acquireAll = (sessionId: string, leases: unknown[], requestId = rid(), token?: string) => s.call('POST', ACQUIRE, { session_id: sessionId, request_id: requestId, leases }, { token });
  async function acquire(route: string, sessionId: string, extra: Record<string, unknown> = {}): Promise<Held> {
    const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra });
    assert.equal(r.status, 200, r.text);
    return r.body.lease as Held;
  }
  const inspect = (route: string) => s.call('GET', leasePath(route));
  const codeOf = (r: Reply) => [r.status, r.body.code];

  /** Both instances apply the policy (each caches its family's policies until the change's notice arrives). */
  async function setPolicy(selector: string, fields: Record<string, number>, probe: string, accept: (limits: Record<string, number>) => boolean): Promise<void> {
    const r = await s.call('PUT', '/api/v1/policies', { selector, reason: REASON, ...fields });
    assert.equal(r.status, 200, r.text);
    for (const url of s.urls) {
      await waitFor(`the policy on ${selector} in force at ${url}`, () => call(url, 'GET', `/api/v1/policies/effective/${probe}`, undefined, { token: s.token }), (e) => e.status === 200 && accept(e.body.limits));
    }
  }

  test('renew: each item its own outcome (one lost, the others renewed), each bounded by its own route’s policy; a replay answers the same outcomes', async () => {
    await setPolicy('lease://sbp-short/**', { ttl_max_ms: 5_000 }, 'sbp-short/a/b', (l) => l.ttl_max_ms === 5_000);
    await setPolicy('lease://sbp-long/**', { ttl_min_ms: 40_000, ttl_max_ms: 120_000 }, 'sbp-long/a/b', (l) => l.ttl_min_ms === 40_000);
    const { sessionId } = await s.openSession('fleet-1', 60_000);
    const short = await acquire('lease://sbp-short/a/b', sessionId, { ttl_ms: 5_000 });
    const long = await acquire('lease://sbp-long/a/b', sessionId, { ttl_ms: 60_000 });
    const free = await acquire('lease://sbp-free/a/b', sessionId, { ttl_ms: 20_000 });
    const stale = await acquire('lease://sbp-free/a/stale', sessionId);
    const items = [proof(short, { ttl_ms: 60_000 }), proof(stale, { fencing_token: stale.fencing_token + 1_000 }), proof(long, { ttl_ms: 10_000 }), proof(free)];
    const requestId = rid('batch');
    const r = await renew(sessionId, items, requestId);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.code, 'session_renewed');
    assert.deepEqual(
      r.body.results.map((x: { route: string; code: string; lease?: { ttl_ms: number; renewal_count: number; fencing_token: number; lease_id: string } }) => [x.route, x.code, x.lease?.ttl_ms, x.lease?.renewal_count]),
      [
        [short.route, 'lease_renewed', 5_000, 1],
        [stale.route, 'lease_lost', undefined, undefined],
        [long.route, 'lease_renewed', 40_000, 1],
        [free.route, 'lease_renewed', 20_000, 1],
      ],
    );
    assert.deepEqual(r.body.results[0].lease.lease_id, short.lease_id, 'the holder’s view: lease_id and the same token');
    assert.equal(r.body.results[0].lease.fencing_token, short.fencing_token);
    assert.equal((await inspect(stale.route)).body.lease.renewal_count, 0, 'the lost item changed nothing');

    const again = await renew(sessionId, items, requestId);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replay'], 'true');
    assert.deepEqual(again.body.results, r.body.results);
    assert.equal((await inspect(short.route)).body.lease.renewal_count, 1, 'a replay renews nothing');
    assert.deepEqual(codeOf(await renew(sessionId, items.slice(1), requestId)), [409, 'idempotency_conflict']);
  });

  test('renew keeps the session alive as a keepalive would, and lists its pending release requests', async () => {
    const { sessionId } = await s.openSession('fleet-keep', 2_000);
    const listed = async () => (await s.call('GET', '/api/v1/sessions?owner_id=fleet-keep')).body.items[0];
    const opened = await listed();
    const a = await acquire('lease://sbk/a/1', sessionId, { ttl_ms: 30_000 });
    const b = await acquire('lease://sbk/a/2', sessionId, { ttl_ms: 30_000 });
    const asked = await s.call('POST', leasePath(b.route, 'release-request'), { request_id: rid(), reason: REASON, expected_fencing_token: b.fencing_token });
    assert.equal(asked.status, 200, asked.text);
    // Wait until the clock has moved, so a kept-alive deadline is a later one.
    await waitFor('a later time', () => Date.now(), (t) => t > Date.parse(opened.expires_at) - 2_000 + 5);
    const r = await renew(sessionId, [proof(a)]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.session.owner_id, r.body.session.lease_count, r.body.session.ttl_ms], ['fleet-keep', 2, 2_000]);
    assert.ok(Date.parse(r.body.session.expires_at) > Date.parse(opened.expires_at), `kept alive: ${r.body.session.expires_at} after ${opened.expires_at}`);
    assert.equal((await listed()).expires_at, r.body.session.expires_at, 'the session’s deadline is the answer’s');
    assert.deepEqual(r.body.release_requests, [{ route: b.route, fencing_token: b.fencing_token, requested_at: asked.body.release_request.requested_at, reason: REASON }]);
  });

  test('renew of an unknown or closed session is session_not_found for the whole call', async () => {
    const { sessionId } = await s.openSession('fleet-gone', 60_000);
    const a = await acquire('lease://sbg/a/1', sessionId);
    assert.deepEqual(codeOf(await renew('ss_nope', [proof(a)])), [404, 'session_not_found']);
    await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
    assert.deepEqual(codeOf(await renew(sessionId, [proof(a)])), [404, 'session_not_found']);
    assert.deepEqual(codeOf(await acquireAll(sessionId, [{ route: 'lease://sbg/a/2' }])), [404, 'session_not_found']);
  });

  test('invalid bodies are refused whole and change nothing: a route twice, 1,001 items, no items, a wildcard, wait_ms, 17 routes', async () => {
    const { sessionId } = await s.openSession('fleet-bad', 60_000);
    const a = await acquire('lease://sbi/a/1', sessionId);
    const many = Array.from({ length: 1_001 }, (_, i) => ({ route: `lease://sbi/m/${i}`, lease_id: a.lease_id, fencing_token: 1 }));
    const refusals: Array<[Reply, RegExp]> = [
      [await renew(sessionId, [proof(a), proof(a, { ttl_ms: 5_000 })]), /leases\.1\.route: .* appears more than once/],
      [await renew(sessionId, [proof(a), ...many]), /leases: at most 1000/],
      [await renew(sessionId, []), /leases: must name at least one/],
      [await renew(sessionId, [proof(a), { ...proof(a), route: 'lease://sbi/a/*' }]), /leases\.1\.route: route cannot contain wildcards/],
      [await renew(sessionId, [proof(a, { wait_ms: 5 })]), /unknown field wait_ms/],
      [await acquireAll(sessionId, [{ route: 'lease://sbi/b/1', wait_ms: 1_000 }]), /unknown field wait_ms/],
      [await s.call('POST', ACQUIRE, { session_id: sessionId, request_id: rid(), leases: [{ route: 'lease://sbi/b/1' }], wait_ms: 0 }), /unknown field wait_ms/],
      [await acquireAll(sessionId, [{ route: 'lease://sbi/b/1' }, { route: 'lease://sbi/b/1' }]), /appears more than once/],
      [await acquireAll(sessionId, Array.from({ length: 17 }, (_, i) => ({ route: `lease://sbi/b/${i}` }))), /leases: at most 16/],
    ];
    for (const [r, message] of refusals) {
      assert.deepEqual(codeOf(r), [400, 'invalid_request'], r.text);
      assert.match(r.body.message, message);
    }
    assert.equal((await inspect(a.route)).body.lease.renewal_count, 0, 'nothing renewed');
    assert.deepEqual(codeOf(await inspect('lease://sbi/b/1')), [404, 'lease_not_found'], 'nothing acquired');
  });

  test('each route needs write: one route outside the token’s grants refuses the whole call, audited naming that route', async () => {
    const writer = await s.createToken(['lease://sbw/mine/*#write']);
    const { sessionId } = await s.openSession('fleet-perm', 60_000, writer);
    const mine = await acquire('lease://sbw/mine/1', sessionId);
    const theirs = 'lease://sbw/theirs/1';
    assert.deepEqual(codeOf(await renew(sessionId, [proof(mine), { route: theirs, lease_id: 'ls_x', fencing_token: 1 }], rid(), writer)), [403, 'access_denied']);
    assert.deepEqual(codeOf(await acquireAll(sessionId, [{ route: 'lease://sbw/mine/2' }, { route: theirs }], rid(), writer)), [403, 'access_denied']);
    assert.equal((await inspect(mine.route)).body.lease.renewal_count, 0);
    assert.deepEqual(codeOf(await inspect('lease://sbw/mine/2')), [404, 'lease_not_found']);
    await s.flushAudit();
    const denied = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(theirs)}&event_type=access_denied`);
    assert.equal(denied.body.items.length, 2, denied.text);
    // Within its grants the same token renews and acquires.
    const ok = await renew(sessionId, [proof(mine)], rid(), writer);
    assert.equal(ok.body.results[0].code, 'lease_renewed', ok.text);
  });

  test('a batch of 1,000 leases is renewed in one request, every item renewed; the call is audited as one event, not one per lease', async () => {
    const { sessionId } = await s.openSession('fleet-1000', 120_000);
    const held: Held[] = [];
    for (let i = 0; i < 1_000; i += 16) {
      const routes = Array.from({ length: Math.min(16, 1_000 - i) }, (_, k) => ({ route: `lease://sbm/r/${i + k}` }));
      const r = await acquireAll(sessionId, routes);
      assert.equal(r.status, 200, r.text);
      held.push(...(r.body.leases as Held[]));
    }
    const r = await renew(sessionId, held.map((l) => proof(l)));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.results.length, 1_000);
    assert.ok(r.body.results.every((x: { code: string; route: string }, i: number) => x.code === 'lease_renewed' && x.route === held[i]!.route));
    assert.equal(r.body.session.lease_count, 1_000);
    await s.flushAudit();
    const onRoute = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent('lease://sbm/r/999')}&event_type=lease_renew`);
    assert.deepEqual(onRoute.body.items, [], onRoute.text);
    const audit = await s.call('GET', `/api/v1/audit?event_type=lease_renew&limit=1000`);
    assert.deepEqual(
      audit.body.items
        .filter((e: { owner_id: string }) => e.owner_id === 'fleet-1000')
        .map((e: { route: string | null; result: string; owner_id: string; details: unknown }) => [e.route, e.result, e.owner_id, e.details]),
      [[null, 'session_renewed', 'fleet-1000', { items: 1_000, renewed: 1_000, lost: 0 }]],
      audit.text,
    );
  });

  test('acquire grants every route in order with increasing tokens and publishes an acquired change for each; a replay answers the same leases', async () => {
    const stream = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://sba/**')}`, { token: s.token });
    try {
      await stream.waitFor((e) => e.event === 'subscribed');
      const { sessionId } = await s.openSession('fleet-all', 60_000);
      const items = [{ route: 'lease://sba/x/c', ttl_ms: 5_000, metadata: { shard: 1 } }, { route: 'lease://sba/x/a' }, { route: 'lease://sba/x/b', max_lifetime_ms: 2_000 }];
      const requestId = rid('pair');
      const r = await acquireAll(sessionId, items, requestId);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.code, 'leases_acquired');
      const leases = r.body.leases as Array<Held & { ttl_ms: number; metadata: unknown; owner_id: string }>;
      assert.deepEqual(leases.map((l) => l.route), items.map((i) => i.route));
      assert.ok(leases[0]!.fencing_token < leases[1]!.fencing_token && leases[1]!.fencing_token < leases[2]!.fencing_token);
      assert.deepEqual(leases.map((l) => [l.ttl_ms, l.metadata, l.owner_id]), [[5_000, { shard: 1 }, 'fleet-all'], [30_000, null, 'fleet-all'], [30_000, null, 'fleet-all']]);
      const changes = await stream.waitForCount((e) => e.event === 'change', 3);
      assert.deepEqual(
        changes.map((e) => [e.data.change, e.data.route, e.data.revision]),
        leases.map((l) => ['acquired', l.route, l.fencing_token]),
      );
      const again = await acquireAll(sessionId, items, requestId);
      assert.equal(again.headers['idempotent-replay'], 'true');
      assert.deepEqual(again.body.leases, r.body.leases);
      // The leases are the session's own: the batched renew renews them.
      const renewed = await renew(sessionId, leases.map((l) => proof(l)));
      assert.deepEqual(renewed.body.results.map((x: { code: string }) => x.code), ['lease_renewed', 'lease_renewed', 'lease_renewed']);
    } finally {
      stream.close();
    }
  });

  test('acquire is all or nothing: one held route refuses the batch with held and retry_after_ms; no change is published and no free route is kept', async () => {
    const stream = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://sbn/**')}`, { token: s.token });
    try {
      await stream.waitFor((e) => e.event === 'subscribed');
      const holder = await s.openSession('holder', 60_000);
      const held = await acquire('lease://sbn/x/held', holder.sessionId, { ttl_ms: 30_000 });
      await stream.waitFor((e) => e.event === 'change' && e.data.route === held.route);
      const { sessionId } = await s.openSession('fleet-none', 60_000);
      const items = [{ route: 'lease://sbn/x/free-1' }, { route: held.route }, { route: 'lease://sbn/x/free-2' }];
      const requestId = rid('none');
      const r = await acquireAll(sessionId, items, requestId);
      assert.deepEqual(codeOf(r), [409, 'lease_conflict'], r.text);
      assert.deepEqual(r.body.held, [held.route]);
      assert.equal(r.body.retryable, true);
      assert.ok(r.body.retry_after_ms > 25_000 && r.body.retry_after_ms <= 30_000, `retry_after_ms ${r.body.retry_after_ms}`);
      for (const route of ['lease://sbn/x/free-1', 'lease://sbn/x/free-2']) assert.deepEqual(codeOf(await inspect(route)), [404, 'lease_not_found']);
      // A later single acquire of a free route, with another request_id, is granted as usual: its change arrives, and none came before it.
      const one = await acquire('lease://sbn/x/free-1', sessionId);
      const seen = await stream.waitFor((e) => e.event === 'change' && e.data.route === 'lease://sbn/x/free-1');
      assert.equal(seen.data.revision, one.fencing_token);
      assert.deepEqual(
        stream.of('change').map((e) => [e.data.change, e.data.route]),
        [['acquired', held.route], ['acquired', 'lease://sbn/x/free-1']],
        'the refused batch published nothing',
      );
      // Refusals are not recorded: the same request runs again (now refused also for the route this session holds, not retryable).
      const again = await acquireAll(sessionId, items, requestId);
      assert.deepEqual([again.status, again.body.retryable, again.body.held], [409, false, ['lease://sbn/x/free-1', held.route]]);
      assert.equal(again.headers['idempotent-replay'], undefined);
    } finally {
      stream.close();
    }
  });
  test('the sessions list shows each session’s last batched renewal (when, renewed, lost) and last all-or-nothing acquire; a replay or a refusal changes neither', async () => {
    const owner = `fleet-listed-${rid()}`;
    const listed = async () => {
      const r = await s.call('GET', `/api/v1/sessions?owner_id=${encodeURIComponent(owner)}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.items.length, 1);
      return r.body.items[0] as { lease_count: number; last_batch_renewal: { at: string; renewed: number; lost: number } | null; last_batch_acquire: { at: string; acquired: number } | null };
    };
    const { sessionId } = await s.openSession(owner, 60_000);
    const fresh = await listed();
    assert.deepEqual([fresh.last_batch_renewal, fresh.last_batch_acquire], [null, null], 'null before the first batch');

    const started = Date.now();
    const got = await acquireAll(sessionId, [{ route: 'lease://sbl/x/a' }, { route: 'lease://sbl/x/b' }, { route: 'lease://sbl/x/c' }]);
    assert.equal(got.status, 200, got.text);
    const leases = got.body.leases as Held[];
    const afterAcquire = await listed();
    assert.equal(afterAcquire.last_batch_acquire?.acquired, 3);
    assert.ok(Date.parse(afterAcquire.last_batch_acquire!.at) >= started - 1_000, afterAcquire.last_batch_acquire!.at);
    assert.equal(afterAcquire.last_batch_renewal, null);

    const items = [proof(leases[0]!), proof(leases[1]!, { fencing_token: leases[1]!.fencing_token + 1_000 }), proof(leases[2]!)];
    const requestId = rid('listed');
    const r = await renew(sessionId, items, requestId);
    assert.equal(r.status, 200, r.text);
    const afterRenew = await listed();
    assert.deepEqual({ ...afterRenew.last_batch_renewal, at: undefined }, { at: undefined, renewed: 2, lost: 1 });
    assert.ok(Date.parse(afterRenew.last_batch_renewal!.at) >= Date.parse(afterAcquire.last_batch_acquire!.at));
    assert.deepEqual(afterRenew.last_batch_acquire, afterAcquire.last_batch_acquire, 'the renewal keeps the acquire');
    assert.equal(afterRenew.lease_count, 3);

    // A replay answers the recorded outcomes and changes nothing, so the list says the same.
    const again = await renew(sessionId, items, requestId);
    assert.equal(again.headers['idempotent-replay'], 'true');
    assert.deepEqual((await listed()).last_batch_renewal, afterRenew.last_batch_renewal);

    // A refused all-or-nothing acquire records nothing.
    const refused = await acquireAll(sessionId, [{ route: 'lease://sbl/x/a' }, { route: 'lease://sbl/x/d' }]);
    assert.equal(refused.status, 409, refused.text);
    assert.deepEqual((await listed()).last_batch_acquire, afterAcquire.last_batch_acquire);

    // A later renewal replaces the last one: every item renewed, none lost.
    const all = await renew(sessionId, [proof(leases[0]!), proof(leases[2]!)]);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual([(await listed()).last_batch_renewal?.renewed, (await listed()).last_batch_renewal?.lost], [2, 0]);
  });
});
