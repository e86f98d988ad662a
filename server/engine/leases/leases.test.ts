import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixture, fixtureEachTest, proofOf, rejectsWith, until } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  const f = fixtureEachTest(backend);

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
      assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.owner_id, 'a');
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
      await f.engine.sessions.close(f.admin, s);
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
      const { answer: r } = await f.engine.leases.renew(f.admin, R, { ...proofOf(s, answer.lease), ttlMs: 20_000 });
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
      const { answer: r } = await f.engine.leases.renew(f.admin, R, proofOf(s, answer.lease));
      assert.equal(Date.parse(r.lease.expires_at), f.clock.t + 7_000);
    });

    test('a lease never lives past acquired_at + max_lifetime however often renewed', async () => {
      const s = await f.open('w', 300_000);
      const { answer } = await f.acquire(R, s, { ttlMs: 4_000, maxLifetimeMs: 10_000 });
      const start = Date.parse(answer.lease.acquired_at);
      for (let i = 0; i < 4; i++) {
        f.clock.advance(3_000);
        if (f.clock.t >= start + 10_000) break;
        const { answer: r } = await f.engine.leases.renew(f.admin, R, proofOf(s, answer.lease));
        assert.ok(Date.parse(r.lease.expires_at) <= start + 10_000);
      }
      f.clock.t = start + 10_000;
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf(s, answer.lease)), 'lease_lost');
    });

    test('a wrong lease_id, token or session is lease_lost and changes nothing', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      const { answer } = await f.acquire(R, a, { ttlMs: 10_000 });
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf(a, { ...answer.lease, lease_id: 'ls_other' })), 'lease_lost');
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf(a, { ...answer.lease, fencing_token: 99 })), 'lease_lost');
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf(b, answer.lease)), 'lease_lost');
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf('ss_unknown', answer.lease)), 'lease_lost');
      const now = (await f.engine.leases.inspect(f.admin, R)).lease;
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
      await rejectsWith(f.engine.leases.renew(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      await rejectsWith(f.engine.leases.release(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      const held = (await f.engine.leases.inspect(f.admin, R)).lease;
      assert.equal(held.fencing_token, second.lease.fencing_token);
      assert.equal(held.owner_id, 'b');
      assert.equal(held.renewal_count, 0);
    });
  });

  describe('release and expiry', () => {
    test('release frees the route with a released change; the next acquisition gets a greater token', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const { answer: rel } = await f.engine.leases.release(f.admin, R, proofOf(s, answer.lease));
      assert.deepEqual(rel, { route: R, fencing_token: answer.lease.fencing_token });
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
      const { answer: again } = await f.acquire(R, s);
      assert.ok(again.lease.fencing_token > answer.lease.fencing_token);
      assert.deepEqual(f.changes().map((c) => c.change), ['acquired', 'released', 'acquired']);
    });

    test('a stale release never removes the successor', async () => {
      const a = await f.open('a');
      const b = await f.open('b');
      const { answer: first } = await f.acquire(R, a);
      await f.engine.leases.release(f.admin, R, proofOf(a, first.lease));
      const { answer: second } = await f.acquire(R, b);
      await rejectsWith(f.engine.leases.release(f.admin, R, proofOf(a, first.lease)), 'lease_lost');
      assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.fencing_token, second.lease.fencing_token);
    });

    test('expiry is processed before any answer reports the lease, and the sweep publishes it with a revision', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire(R, s, { ttlMs: 5_000 });
      f.clock.advance(4_999);
      assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.remaining_ms, 1);
      f.clock.advance(1);
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
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
        await f.engine.leases.release(f.admin, R, proofOf(s, answer.lease));
      }
    });
  });

  describe('sessions', () => {
    test('closing a session releases every lease it holds as session_closed', async () => {
      const s = await f.open();
      await f.acquire('lease://a/b/1', s);
      await f.acquire('lease://a/b/2', s);
      assert.deepEqual(await f.engine.sessions.close(f.admin, s), { released: 2 });
      assert.deepEqual(f.changes().filter((c) => c.change === 'session_closed').map((c) => c.route).sort(), ['lease://a/b/1', 'lease://a/b/2']);
      await rejectsWith(f.engine.sessions.keepAlive(f.admin, s), 'session_not_found');
      await rejectsWith(f.engine.sessions.close(f.admin, s), 'session_not_found');
    });

    test('keepalive moves the session deadline to now + ttl', async () => {
      const s = await f.open('w', 4_000);
      f.clock.advance(3_000);
      const { session } = await f.engine.sessions.keepAlive(f.admin, s);
      assert.equal(Date.parse(session.expires_at), f.clock.t + 4_000);
      f.clock.advance(3_000);
      await f.engine.sessions.keepAlive(f.admin, s);
    });

    test('an expired session cannot be kept alive and its leases are gone (session deadline first → session_closed)', async () => {
      const s = await f.open('w', 3_000);
      await f.acquire(R, s, { ttlMs: 60_000 });
      f.clock.advance(3_000);
      await rejectsWith(f.engine.sessions.keepAlive(f.admin, s), 'session_not_found');
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
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
      const other = await f.engine.tokens.create(f.admin, { name: 'o', grants: ['lease://**#admin'], family: 'other' });
      const p = await f.engine.tokens.authenticate(other.token);
      const s = await f.open();
      await rejectsWith(f.engine.sessions.keepAlive(p, s), 'session_not_found');
      await rejectsWith(
        f.engine.leases.acquire(p, R, { sessionId: s, requestId: 'x', ttlMs: 1_000, maxLifetimeMs: 10_000, waitMs: 0, metadata: null, digest: 'd' }),
        'session_not_found',
      );
    });

    test('session listing pages by created_at with a cursor and filters by owner', async () => {
      for (let i = 0; i < 5; i++) {
        await f.open(i % 2 ? 'odd' : 'even');
        f.clock.advance(1);
      }
      const p1 = await f.engine.sessions.list(f.admin, { limit: 2 });
      assert.equal(p1.items.length, 2);
      const p2 = await f.engine.sessions.list(f.admin, { limit: 2, cursor: p1.next_cursor! });
      const p3 = await f.engine.sessions.list(f.admin, { limit: 2, cursor: p2.next_cursor! });
      assert.equal(p3.next_cursor, null);
      const all = [...p1.items, ...p2.items, ...p3.items].map((s) => s.holder_incarnation);
      assert.equal(new Set(all).size, 5);
      const odd = await f.engine.sessions.list(f.admin, { limit: 10, ownerId: 'odd' });
      assert.deepEqual(odd.items.map((s) => s.owner_id), ['odd', 'odd']);
      await rejectsWith(f.engine.sessions.list(f.admin, { limit: 2, cursor: p1.next_cursor!, ownerId: 'odd' }), 'cursor_invalid');
    });
  });

 });
}
