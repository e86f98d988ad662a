import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtureEachTest, proofOf, rejectsWith } from '../../testing/engine-fixture';
import { requestDigest } from '../core/ids';
import { BACKENDS } from '../../testing/pg';

// Checkpoints, idempotent replays, races and which deadline came first, on every store backend
// (the conformance suite; acquire, renew, release, expiry and sessions are in leases.test.ts).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  const f = fixtureEachTest(backend);

  const R = 'lease://acme/renderers/doc-1';

  describe('checkpoints (fenced writes)', () => {
    test('the holder writes; versions grow; the value survives the lease', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const ck = (value: string, lease = answer.lease, sess = s) => f.engine.leases.writeCheckpoint(f.admin, R, { ...proofOf(sess, lease), value });
      assert.equal((await ck('{"n":1}')).answer.checkpoint.version, 1);
      assert.equal((await ck('{"n":2}')).answer.checkpoint.version, 2);
      await f.engine.leases.release(f.admin, R, proofOf(s, answer.lease));
      const read = await f.engine.leases.readCheckpoint(f.admin, R);
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
      await f.engine.leases.writeCheckpoint(f.admin, R, { ...proofOf(b, second.lease), value: '"new"' });
      await rejectsWith(f.engine.leases.writeCheckpoint(f.admin, R, { ...proofOf(a, first.lease), value: '"stale"' }), 'lease_lost');
      assert.equal((await f.engine.leases.readCheckpoint(f.admin, R)).checkpoint.value, 'new');
    });

    test('null is a valid value, and a route without one is checkpoint_not_found', async () => {
      await rejectsWith(f.engine.leases.readCheckpoint(f.admin, R), 'checkpoint_not_found');
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      await f.engine.leases.writeCheckpoint(f.admin, R, { ...proofOf(s, answer.lease), value: 'null' });
      assert.equal((await f.engine.leases.readCheckpoint(f.admin, R)).checkpoint.value, null);
    });
  });

  describe('idempotency', () => {
    test('a replay returns the original answer and changes nothing, even after release and session close', async () => {
      const s = await f.open();
      const body = { session_id: s, request_id: 'same' };
      const first = await f.acquire(R, s, { requestId: 'same', body });
      await f.engine.leases.release(f.admin, R, proofOf(s, first.answer.lease));
      await f.engine.sessions.close(f.admin, s);
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
      await f.engine.leases.release(f.admin, R, proofOf(a, held.answer.lease));
      const ok = await f.acquire(R, b, { requestId: 'retry', body });
      assert.equal(ok.replayed, false);
      assert.equal(ok.answer.lease.owner_id, 'b');
    });

    test('renew and release replays answer the same', async () => {
      const s = await f.open();
      const { answer } = await f.acquire(R, s);
      const p = proofOf(s, answer.lease, 'renew-1');
      const r1 = await f.engine.leases.renew(f.admin, R, p);
      f.clock.advance(1_000);
      const r2 = await f.engine.leases.renew(f.admin, R, p);
      assert.equal(r2.replayed, true);
      assert.deepEqual(r2.answer, r1.answer);
      assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.renewal_count, 1);
      const rel = proofOf(s, answer.lease, 'rel-1');
      await f.engine.leases.release(f.admin, R, rel);
      assert.equal((await f.engine.leases.release(f.admin, R, rel)).replayed, true);
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
      const renewed = await f.engine.leases.renew(f.admin, R, proofOf(a, answer.lease));
      assert.equal(Date.parse(renewed.answer.lease.expires_at), f.clock.t + 5_000, 'one millisecond before the deadline the renew wins');
      f.clock.advance(5_000);
      const [renew, take] = await Promise.allSettled([f.engine.leases.renew(f.admin, R, proofOf(a, answer.lease)), f.acquire(R, b)]);
      assert.equal(renew.status, 'rejected');
      assert.equal((renew as PromiseRejectedResult).reason.code, 'lease_lost');
      assert.equal(take.status, 'fulfilled');
      const successor = (take as PromiseFulfilledResult<Awaited<ReturnType<typeof f.acquire>>>).value.answer.lease;
      assert.ok(successor.fencing_token > answer.lease.fencing_token);
      assert.equal(f.changes().filter((c) => c.change === 'expired').length, 1, 'the expiry is processed exactly once');
      assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.owner_id, 'b');
    });

    test('concurrent renew and release of one lease: the outcomes agree with one serial order', async () => {
      for (let i = 0; i < 10; i++) {
        const s = await f.open();
        const route = `lease://race/rr/${i}`;
        const { answer } = await f.acquire(route, s);
        const [renew, release] = await Promise.allSettled([
          f.engine.leases.renew(f.admin, route, proofOf(s, answer.lease)),
          f.engine.leases.release(f.admin, route, proofOf(s, answer.lease)),
        ]);
        assert.equal(release.status, 'fulfilled', 'the release always succeeds: renew keeps the token');
        if (renew.status === 'rejected') assert.equal(renew.reason.code, 'lease_lost');
        await rejectsWith(f.engine.leases.inspect(f.admin, route), 'lease_not_found');
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
      await rejectsWith(f.engine.leases.renew(f.admin, 'lease://first/a/short', proofOf(s, answer.lease)), 'lease_lost');
      const kinds = Object.fromEntries(f.changes().filter((c) => c.change !== 'acquired').map((c) => [c.route, c.change]));
      assert.deepEqual(kinds, { 'lease://first/a/short': 'expired', 'lease://first/a/long': 'session_closed' });
    });

    test('closing a session counts only the leases it released, not those already expired', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire('lease://first/b/short', s, { ttlMs: 1_000 });
      await f.acquire('lease://first/b/long', s, { ttlMs: 60_000 });
      f.clock.advance(1_000);
      assert.deepEqual(await f.engine.sessions.close(f.admin, s), { released: 1 });
      const kinds = Object.fromEntries(f.changes().filter((c) => c.change !== 'acquired').map((c) => [c.route, c.change]));
      assert.deepEqual(kinds, { 'lease://first/b/short': 'expired', 'lease://first/b/long': 'session_closed' });
    });
  });

 });
}
