import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixture, proofOf, rejectsWith, until, type EngineFixture } from '../testing/engine-fixture';
import { requestDigest } from './ids';
import { BACKENDS } from '../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  let f: EngineFixture;
  beforeEach(async () => {
    f = await engineFixture({ backend });
  });
  afterEach(async () => {
    await f.close();
  });

  const R = 'lease://acme/renderers/doc-1';

  describe('acquire', () => {
    test('a free route is granted with a token equal to the new revision, and one acquired change', async () => {
      const s = await f.open();
      const { answer, replayed } = await f.acquire(R, s);
      assert.equal(replayed, false);
      assert.equal(answer.queued, false);
      assert.equal(answer.lease.fencing_token, 1);
      assert.equal(answer.lease.revision, 1);
      assert.equal(answer.lease.renewal_count, 0);
      assert.match(answer.lease.lease_id, /^ls_/);
      const ch = f.changes();
      assert.deepEqual(ch.map((c) => [c.change, c.route, c.revision, c.queued]), [['acquired', R, 1, false]]);
    });

    test('a held route is lease_conflict with retry_after_ms until its expiry, and changes nothing', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      await f.acquire(R, a, { ttlMs: 10_000 });
      f.clock.advance(4_000);
      const err = await rejectsWith(f.acquire(R, b), 'lease_conflict');
      assert.equal(err.retryable, true);
      assert.equal(err.retryAfterMs, 6_000);
      assert.equal(f.changes().length, 1);
      assert.equal((await f.engine.inspect(f.admin, R)).lease.owner_id, 'a');
    });

    test('retry_after_ms is at least 50 ms', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      await f.acquire(R, a, { ttlMs: 1_000 });
      f.clock.advance(990);
      assert.equal((await rejectsWith(f.acquire(R, b), 'lease_conflict')).retryAfterMs, 50);
    });

    test('leases are not re-entrant: the holder acquiring again is a non-retryable conflict', async () => {
      const a = await f.open('a');
      await f.acquire(R, a);
      const err = await rejectsWith(f.acquire(R, a), 'lease_conflict');
      assert.equal(err.retryable, false);
    });

    test('an unknown or closed session is session_not_found', async () => {
      await rejectsWith(f.acquire(R, 'ss_nope'), 'session_not_found');
      const s = await f.open();
      await f.engine.closeSession(f.admin, s);
      await rejectsWith(f.acquire(R, s), 'session_not_found');
    });

    test('max_lifetime shorter than the TTL caps the first expiry', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s, { ttlMs: 30_000, maxLifetimeMs: 5_000 });
      assert.equal(Date.parse(answer.lease.expires_at) - Date.parse(answer.lease.acquired_at), 5_000);
      assert.equal(answer.lease.max_expires_at, answer.lease.expires_at);
    });
  });

  describe('renew', () => {
    test('extends expiry from now, counts the renewal, keeps the token, and emits no change', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s, { ttlMs: 10_000 });
      f.clock.advance(6_000);
      const { answer: r } = await f.engine.renew(f.admin, R, { ...proofOf(s, answer.lease), ttlMs: 20_000 });
      assert.equal(r.lease.fencing_token, answer.lease.fencing_token);
      assert.equal(r.lease.renewal_count, 1);
      assert.equal(r.lease.ttl_ms, 20_000);
      assert.equal(Date.parse(r.lease.expires_at), f.clock.t + 20_000);
      assert.equal(r.lease.renewed_at, new Date(f.clock.t).toISOString());
      assert.equal(f.changes().length, 1, 'only the acquisition is a change');
      assert.equal(f.events.filter((e) => e.type === 'renewed').length, 1);
    });

    test('without ttl_ms it reuses the lease’s current ttl', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s, { ttlMs: 7_000 });
      f.clock.advance(1_000);
      const { answer: r } = await f.engine.renew(f.admin, R, proofOf(s, answer.lease));
      assert.equal(Date.parse(r.lease.expires_at), f.clock.t + 7_000);
    });

    test('a lease never lives past acquired_at + max_lifetime however often renewed', async () => {
      const s = await f.open('w', 300_000);
      const { answer } = await f.acquire(R, s, { ttlMs: 4_000, maxLifetimeMs: 10_000 });
      const start = Date.parse(answer.lease.acquired_at);
      for (let i = 0; i < 4; i++) {
        f.clock.advance(3_000);
        if (f.clock.t >= start + 10_000) break;
        const { answer: r } = await f.engine.renew(f.admin, R, proofOf(s, answer.lease));
        assert.ok(Date.parse(r.lease.expires_at) <= start + 10_000);
      }
      f.clock.t = start + 10_000;
      await rejectsWith(f.engine.inspect(f.admin, R), 'lease_not_found');
      await rejectsWith(f.engine.renew(f.admin, R, proofOf(s, answer.lease)), 'lease_lost');
    });

    test('a wrong lease_id, token or session is lease_lost and changes nothing', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      const { answer } = await f.acquire(R, a, { ttlMs: 10_000 });
      await rejectsWith(f.engine.renew(f.admin, R, proofOf(a, { ...answer.lease, lease_id: 'ls_other' })), 'lease_lost');
      await rejectsWith(f.engine.renew(f.admin, R, proofOf(a, { ...answer.lease, fencing_token: 99 })), 'lease_lost');
      await rejectsWith(f.engine.renew(f.admin, R, proofOf(b, answer.lease)), 'lease_lost');
      await rejectsWith(f.engine.renew(f.admin, R, proofOf('ss_unknown', answer.lease)), 'lease_lost');
      const now = (await f.engine.inspect(f.admin, R)).lease;
      assert.equal(now.renewal_count, 0);
      assert.equal(now.expires_at, answer.lease.expires_at);
    });

    test('a stale renew after expiry and reacquisition changes nothing', async () => {
      const a = await f.open('a', 300_000);
      const b = await f.open('b', 300_000);
      const { answer: first } = await f.acquire(R, a, { ttlMs: 2_000 });
      f.clock.advance(2_000);
      const { answer: second } = await f.acquire(R, b, { ttlMs: 2_000 });
      assert.ok(second.lease.fencing_token > first.lease.fencing_token);
      await rejectsWith(f.engine.renew(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      await rejectsWith(f.engine.release(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      const held = (await f.engine.inspect(f.admin, R)).lease;
      assert.equal(held.fencing_token, second.lease.fencing_token);
      assert.equal(held.owner_id, 'b');
      assert.equal(held.renewal_count, 0);
    });
  });

  describe('release and expiry', () => {
    test('release frees the route with a released change; the next acquisition gets a greater token', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const { answer: rel } = await f.engine.release(f.admin, R, proofOf(s, answer.lease));
      assert.deepEqual(rel, { route: R, fencing_token: answer.lease.fencing_token });
      await rejectsWith(f.engine.inspect(f.admin, R), 'lease_not_found');
      const { answer: again } = await f.acquire(R, s);
      assert.ok(again.lease.fencing_token > answer.lease.fencing_token);
      assert.deepEqual(f.changes().map((c) => c.change), ['acquired', 'released', 'acquired']);
    });

    test('a stale release never removes the successor', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      const { answer: first } = await f.acquire(R, a);
      await f.engine.release(f.admin, R, proofOf(a, first.lease));
      const { answer: second } = await f.acquire(R, b);
      await rejectsWith(f.engine.release(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      assert.equal((await f.engine.inspect(f.admin, R)).lease.fencing_token, second.lease.fencing_token);
    });

    test('expiry is processed before any answer reports the lease, and the sweep publishes it with a revision', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire(R, s, { ttlMs: 5_000 });
      f.clock.advance(4_999);
      assert.equal((await f.engine.inspect(f.admin, R)).lease.remaining_ms, 1);
      f.clock.advance(1);
      await rejectsWith(f.engine.inspect(f.admin, R), 'lease_not_found');
      const expired = f.changes().filter((c) => c.change === 'expired');
      assert.equal(expired.length, 1);
      assert.equal(expired[0]!.revision, 2);
      assert.equal(await f.engine.sweep(), 0, 'nothing left to expire');
    });

    test('the sweep expires due leases in deadline order', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire('lease://a/b/late', s, { ttlMs: 3_000 });
      await f.acquire('lease://a/b/early', s, { ttlMs: 2_000 });
      await f.acquire('lease://a/b/live', s, { ttlMs: 9_000 });
      f.clock.advance(5_000);
      await f.engine.sweep();
      const expired = f.changes().filter((c) => c.change === 'expired');
      assert.deepEqual(expired.map((c) => c.route), ['lease://a/b/early', 'lease://a/b/late']);
      assert.ok(expired[0]!.revision < expired[1]!.revision);
    });

    test('the periodic sweep runs on the engine scheduler: due leases are published once the interval passes, without any request', async () => {
      const g = await engineFixture({ backend, sweepIntervalMs: 100 });
      try {
        const s = await g.open('w', 300_000);
        await g.acquire('lease://a/b/swept', s, { ttlMs: 1_000 });
        g.clock.advance(999);
        await until(g, () => false, 5);
        assert.deepEqual(g.changes().map((c) => c.change), ['acquired'], 'the sweeps so far found nothing due');
        g.clock.advance(100);
        await until(g, () => g.changes().length === 2);
        assert.deepEqual(g.changes().map((c) => [c.change, c.route]), [['acquired', 'lease://a/b/swept'], ['expired', 'lease://a/b/swept']]);
      } finally {
        await g.close();
      }
    });

    test('20 acquire/release cycles yield strictly increasing tokens', async () => {
      const s = await f.open();
      let last = 0;
      for (let i = 0; i < 20; i++) {
        const { answer } = await f.acquire(R, s);
        assert.ok(answer.lease.fencing_token > last);
        last = answer.lease.fencing_token;
        await f.engine.release(f.admin, R, proofOf(s, answer.lease));
      }
    });
  });

  describe('sessions', () => {
    test('closing a session releases every lease it holds as session_closed', async () => {
      const s = await f.open();
      await f.acquire('lease://a/b/1', s);
      await f.acquire('lease://a/b/2', s);
      assert.deepEqual(await f.engine.closeSession(f.admin, s), { released: 2 });
      assert.deepEqual(f.changes().filter((c) => c.change === 'session_closed').map((c) => c.route).sort(), ['lease://a/b/1', 'lease://a/b/2']);
      await rejectsWith(f.engine.keepAlive(f.admin, s), 'session_not_found');
      await rejectsWith(f.engine.closeSession(f.admin, s), 'session_not_found');
    });

    test('keepalive moves the session deadline to now + ttl', async () => {
      const s = await f.open('w', 4_000);
      f.clock.advance(3_000);
      const { session } = await f.engine.keepAlive(f.admin, s);
      assert.equal(Date.parse(session.expires_at), f.clock.t + 4_000);
      f.clock.advance(3_000);
      await f.engine.keepAlive(f.admin, s);
    });

    test('an expired session cannot be kept alive and its leases are gone (session deadline first → session_closed)', async () => {
      const s = await f.open('w', 3_000);
      await f.acquire(R, s, { ttlMs: 60_000 });
      f.clock.advance(3_000);
      await rejectsWith(f.engine.keepAlive(f.admin, s), 'session_not_found');
      await rejectsWith(f.engine.inspect(f.admin, R), 'lease_not_found');
      assert.deepEqual(f.changes().map((c) => c.change), ['acquired', 'session_closed']);
    });

    test('a lease whose own deadline came before its session’s ends as expired', async () => {
      const s = await f.open('w', 10_000);
      await f.acquire(R, s, { ttlMs: 2_000 });
      f.clock.advance(20_000);
      await f.engine.sweep();
      assert.deepEqual(f.changes().map((c) => c.change), ['acquired', 'expired']);
      assert.ok(f.events.some((e) => e.type === 'session_expired'));
    });

    test('a session of another family is not found', async () => {
      const other = await f.engine.createToken(f.admin, { name: 'o', grants: ['lease://**#admin'], family: 'other' });
      const p = await f.engine.tokens.authenticate(other.token);
      const s = await f.open();
      await rejectsWith(f.engine.keepAlive(p, s), 'session_not_found');
      await rejectsWith(
        f.engine.acquire(p, R, { sessionId: s, requestId: 'x', ttlMs: 1_000, maxLifetimeMs: 10_000, waitMs: 0, metadata: null, digest: 'd' }),
        'session_not_found',
      );
    });

    test('session listing pages by created_at with a cursor and filters by owner', async () => {
      for (let i = 0; i < 5; i++) {
        await f.open(i % 2 ? 'odd' : 'even');
        f.clock.advance(1);
      }
      const p1 = await f.engine.listSessions(f.admin, { limit: 2 });
      assert.equal(p1.items.length, 2);
      const p2 = await f.engine.listSessions(f.admin, { limit: 2, cursor: p1.next_cursor! });
      const p3 = await f.engine.listSessions(f.admin, { limit: 2, cursor: p2.next_cursor! });
      assert.equal(p3.next_cursor, null);
      const all = [...p1.items, ...p2.items, ...p3.items].map((s) => s.holder_incarnation);
      assert.equal(new Set(all).size, 5);
      const odd = await f.engine.listSessions(f.admin, { limit: 10, ownerId: 'odd' });
      assert.deepEqual(odd.items.map((s) => s.owner_id), ['odd', 'odd']);
      await rejectsWith(f.engine.listSessions(f.admin, { limit: 2, cursor: p1.next_cursor!, ownerId: 'odd' }), 'cursor_invalid');
    });
  });

  describe('checkpoints (fenced writes)', () => {
    test('the holder writes; versions grow; the value survives the lease', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const ck = (value: string, lease = answer.lease, sess = s) => f.engine.writeCheckpoint(f.admin, R, { ...proofOf(sess, lease), value });
      assert.equal((await ck('{"n":1}')).answer.checkpoint.version, 1);
      assert.equal((await ck('{"n":2}')).answer.checkpoint.version, 2);
      await f.engine.release(f.admin, R, proofOf(s, answer.lease));
      const read = await f.engine.readCheckpoint(f.admin, R);
      assert.deepEqual(read.checkpoint.value, { n: 2 });
      assert.equal(read.checkpoint.fencing_token, answer.lease.fencing_token);
      assert.equal(read.checkpoint.version, 2);
    });

    test('a stale holder cannot write after its successor', async () => {
      const a = await f.open('a', 300_000);
      const b = await f.open('b', 300_000);
      const { answer: first } = await f.acquire(R, a, { ttlMs: 1_000 });
      f.clock.advance(1_000);
      const { answer: second } = await f.acquire(R, b);
      await f.engine.writeCheckpoint(f.admin, R, { ...proofOf(b, second.lease), value: '"new"' });
      await rejectsWith(f.engine.writeCheckpoint(f.admin, R, { ...proofOf(a, first.lease), value: '"stale"' }), 'lease_lost');
      assert.equal((await f.engine.readCheckpoint(f.admin, R)).checkpoint.value, 'new');
    });

    test('null is a valid value, and a route without one is checkpoint_not_found', async () => {
      await rejectsWith(f.engine.readCheckpoint(f.admin, R), 'checkpoint_not_found');
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      await f.engine.writeCheckpoint(f.admin, R, { ...proofOf(s, answer.lease), value: 'null' });
      assert.equal((await f.engine.readCheckpoint(f.admin, R)).checkpoint.value, null);
    });
  });

  describe('idempotency', () => {
    test('a replay returns the original answer and changes nothing, even after release and session close', async () => {
      const s = await f.open();
      const body = { session_id: s, request_id: 'same' };
      const first = await f.acquire(R, s, { requestId: 'same', body });
      await f.engine.release(f.admin, R, proofOf(s, first.answer.lease));
      await f.engine.closeSession(f.admin, s);
      const changesBefore = f.changes().length;
      const again = await f.acquire(R, s, { requestId: 'same', body });
      assert.equal(again.replayed, true);
      assert.deepEqual(again.answer, first.answer);
      assert.equal(f.changes().length, changesBefore);
    });

    test('the same request_id with different inputs is idempotency_conflict, not retryable', async () => {
      const s = await f.open();
      await f.acquire(R, s, { requestId: 'k', body: { session_id: s, request_id: 'k' } });
      const err = await rejectsWith(f.acquire(R, s, { requestId: 'k', body: { session_id: s, request_id: 'k', ttl_ms: 30_000 } }), 'idempotency_conflict');
      assert.equal(err.retryable, false, 'an omitted field and its default are different inputs');
    });

    test('a failed request is not recorded: its retry runs again', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      const held = await f.acquire(R, a);
      const body = { session_id: b, request_id: 'retry' };
      await rejectsWith(f.acquire(R, b, { requestId: 'retry', body }), 'lease_conflict');
      await f.engine.release(f.admin, R, proofOf(a, held.answer.lease));
      const ok = await f.acquire(R, b, { requestId: 'retry', body });
      assert.equal(ok.replayed, false);
      assert.equal(ok.answer.lease.owner_id, 'b');
    });

    test('renew and release replays answer the same', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const p = proofOf(s, answer.lease, 'renew-1');
      const r1 = await f.engine.renew(f.admin, R, p);
      f.clock.advance(1_000);
      const r2 = await f.engine.renew(f.admin, R, p);
      assert.equal(r2.replayed, true);
      assert.deepEqual(r2.answer, r1.answer);
      assert.equal((await f.engine.inspect(f.admin, R)).lease.renewal_count, 1);
      const rel = proofOf(s, answer.lease, 'rel-1');
      await f.engine.release(f.admin, R, rel);
      assert.equal((await f.engine.release(f.admin, R, rel)).replayed, true);
    });

    test('records outlive their retention only as configured: an expired record no longer replays', async () => {
      const s = await f.open('w', 300_000);
      const body = { session_id: s, request_id: 'old' };
      const first = await f.acquire(R, s, { requestId: 'old', body, ttlMs: 1_000, maxLifetimeMs: 1_000 });
      f.clock.advance(3_600_001);
      await f.engine.sweep();
      const s2 = await f.open('w2', 300_000);
      const again = await f.acquire(R, s2, { requestId: 'old', body: { ...body, session_id: s2 } });
      assert.equal(again.replayed, false);
      assert.ok(again.answer.lease.fencing_token > first.answer.lease.fencing_token);
    });

    test('digests ignore request_id and key order', () => {
      assert.equal(requestDigest({ a: 1, b: { y: 2, x: 1 }, request_id: 'p' }), requestDigest({ b: { x: 1, y: 2 }, a: 1, request_id: 'q' }));
      assert.notEqual(requestDigest({ a: 1 }), requestDigest({ a: 1, b: 2 }));
    });
  });

  describe('races', () => {
    test('expiry against renew: at the deadline the renew is lease_lost, the lease ends once, and a successor gets a greater token', async () => {
      const a = await f.open('a', 300_000);
      const b = await f.open('b', 300_000);
      const { answer } = await f.acquire(R, a, { ttlMs: 5_000 });
      f.clock.advance(4_999);
      const renewed = await f.engine.renew(f.admin, R, proofOf(a, answer.lease));
      assert.equal(Date.parse(renewed.answer.lease.expires_at), f.clock.t + 5_000, 'one millisecond before the deadline the renew wins');
      f.clock.advance(5_000);
      const [renew, take] = await Promise.allSettled([f.engine.renew(f.admin, R, proofOf(a, answer.lease)), f.acquire(R, b)]);
      assert.equal(renew.status, 'rejected');
      assert.equal((renew as PromiseRejectedResult).reason.code, 'lease_lost');
      assert.equal(take.status, 'fulfilled');
      const successor = (take as PromiseFulfilledResult<Awaited<ReturnType<typeof f.acquire>>>).value.answer.lease;
      assert.ok(successor.fencing_token > answer.lease.fencing_token);
      assert.equal(f.changes().filter((c) => c.change === 'expired').length, 1, 'the expiry is processed exactly once');
      assert.equal((await f.engine.inspect(f.admin, R)).lease.owner_id, 'b');
    });

    test('concurrent renew and release of one lease: the outcomes agree with one serial order', async () => {
      for (let i = 0; i < 10; i++) {
        const s = await f.open();
        const route = `lease://race/rr/${i}`;
        const { answer } = await f.acquire(route, s);
        const [renew, release] = await Promise.allSettled([
          f.engine.renew(f.admin, route, proofOf(s, answer.lease)),
          f.engine.release(f.admin, route, proofOf(s, answer.lease)),
        ]);
        assert.equal(release.status, 'fulfilled', 'the release always succeeds: renew keeps the token');
        if (renew.status === 'rejected') assert.equal(renew.reason.code, 'lease_lost');
        await rejectsWith(f.engine.inspect(f.admin, route), 'lease_not_found');
      }
    });

    test('the same request sent twice at once creates one lease: one original answer, one replay', async () => {
      const s = await f.open();
      const body = { session_id: s, request_id: 'twice' };
      const before = f.changes().length;
      const [x, y] = await Promise.all([f.acquire(R, s, { requestId: 'twice', body }), f.acquire(R, s, { requestId: 'twice', body })]);
      assert.deepEqual([x.replayed, y.replayed].sort(), [false, true]);
      assert.deepEqual(x.answer, y.answer);
      assert.equal(f.changes().length - before, 1, 'one acquisition, one revision');
    });

    test('concurrent acquires of one free route from many sessions: exactly one lease, every other answer a conflict', async () => {
      const sessions = await Promise.all(Array.from({ length: 20 }, (_, i) => f.open(`s${i}`)));
      const results = await Promise.allSettled(sessions.map((s) => f.acquire(R, s)));
      const won = results.filter((r) => r.status === 'fulfilled');
      assert.equal(won.length, 1);
      for (const r of results) if (r.status === 'rejected') assert.equal(r.reason.code, 'lease_conflict');
      assert.equal(f.changes().filter((c) => c.change === 'acquired').length, 1);
    });
  });

  describe('which deadline came first', () => {
    test('a lease that expired before its session did ends as expired even when the session expiry is found first', async () => {
      const s = await f.open('w', 10_000);
      const { answer } = await f.acquire('lease://first/a/short', s, { ttlMs: 2_000 });
      await f.acquire('lease://first/a/long', s, { ttlMs: 60_000 });
      f.clock.advance(20_000);
      // No sweep: the renew finds the session expired and ends it with its leases.
      await rejectsWith(f.engine.renew(f.admin, 'lease://first/a/short', proofOf(s, answer.lease)), 'lease_lost');
      const kinds = Object.fromEntries(f.changes().filter((c) => c.change !== 'acquired').map((c) => [c.route, c.change]));
      assert.deepEqual(kinds, { 'lease://first/a/short': 'expired', 'lease://first/a/long': 'session_closed' });
    });

    test('closing a session counts only the leases it released, not those already expired', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire('lease://first/b/short', s, { ttlMs: 1_000 });
      await f.acquire('lease://first/b/long', s, { ttlMs: 60_000 });
      f.clock.advance(1_000);
      assert.deepEqual(await f.engine.closeSession(f.admin, s), { released: 1 });
      const kinds = Object.fromEntries(f.changes().filter((c) => c.change !== 'acquired').map((c) => [c.route, c.change]));
      assert.deepEqual(kinds, { 'lease://first/b/short': 'expired', 'lease://first/b/long': 'session_closed' });
    });
  });

 });
}
