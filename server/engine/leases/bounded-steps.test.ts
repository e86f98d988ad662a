/**
 * Bounded steps (CONTRACT §19, docs/design.md "Bounded steps"), with a step
 * bound of 3 so a 10-lease session's end takes four steps: what the first
 * step decides (closed at once, its waits refused, one session event) holds
 * through the later ones (each lease ends once, with its own revision, with
 * the kind and lock-delay the session's end implies, an operator's cap
 * included), and a route read meanwhile is settled there and then.
 */

import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { requestDigest } from '../core/ids';
import type { PolicyFields } from '../policies/policies';
import { engineFixture, rejectsWith, until, type EngineFixture } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';
import { rid } from '../../testing/harness';

const NONE: PolicyFields = { ttlMinMs: null, ttlMaxMs: null, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs: null, maxWaiters: null };
const REASON = 'bounded steps under test';
const ROUTES = Array.from({ length: 10 }, (_, i) => `lease://big/shard/s${i}`);

for (const backend of BACKENDS) {
  describe(`${backend} store`, () => {
    let f: EngineFixture;
    beforeEach(async () => {
      f = await engineFixture({ backend, limits: { stepMaxLeases: 3 } });
    });
    afterEach(() => f.close());

    async function holdAll(ttlMs = 60_000): Promise<string> {
      const s = await f.open('big', ttlMs);
      for (const r of ROUTES) await f.acquire(r, s);
      return s;
    }
    const ended = () => f.changes().filter((c) => c.change !== 'acquired');
    const sessionEvents = (type: string) => f.events.filter((e) => e.type === type);

    test('a closed session is closed from the first step; its leases end once each, a bounded step at a time, with their own revisions', async () => {
      const s = await holdAll();
      const closed = await f.engine.sessions.close(f.admin, s);
      assert.equal(closed.released, ROUTES.length, 'the answer counts every lease the close ends');
      await rejectsWith(f.engine.sessions.keepAlive(f.admin, s), 'session_not_found');
      await rejectsWith(f.acquire('lease://big/other/x', s), 'session_not_found');
      await until(f, () => ended().length === ROUTES.length, undefined, 'every lease of the closed session to end');
      assert.deepEqual(new Set(ended().map((c) => c.route)), new Set(ROUTES));
      assert.deepEqual([...new Set(ended().map((c) => c.change))], ['session_closed']);
      assert.equal(new Set(ended().map((c) => c.revision)).size, ROUTES.length, 'one revision per end');
      assert.equal(sessionEvents('session_closed').length, 1, 'one session event, from the first step');
      assert.equal((await f.engine.sessions.list(f.admin, { limit: 10 })).items.length, 0);
    });

    test('a route read while its holder is ending is settled at once, whatever step the drain has reached', async () => {
      const s = await holdAll();
      await f.engine.sessions.close(f.admin, s);
      const last = ROUTES[ROUTES.length - 1]!;
      const other = await f.open('next');
      // The last route in route order: the drain reaches it last, the acquire ends it first.
      const got = await f.acquire(last, other);
      assert.equal(got.answer.lease.owner_id, 'next');
      await until(f, () => ended().length === ROUTES.length, undefined, 'the rest of the session to end');
      assert.equal(ended().filter((c) => c.route === last).length, 1, 'the route ended once');
    });

    test('an expired session ends its leases at its deadline across steps, and their lock-delay runs from the deadline', async () => {
      await f.engine.policies.set(f.admin, 'lease://big/**', { ...NONE, lockDelayMs: 10_000 }, REASON);
      await holdAll(5_000);
      f.clock.advance(6_000);
      for (let i = 0; i < 10 && ended().length < ROUTES.length; i++) await f.engine.sweep();
      await until(f, () => ended().length === ROUTES.length, undefined, 'every lease of the expired session to end');
      assert.deepEqual([...new Set(ended().map((c) => c.change))], ['session_closed']);
      assert.equal(sessionEvents('session_expired').length, 1);
      // The deadline was 5 s after the leases were taken: every delay ends 10 s after it, 9 s from now.
      const late = await f.open('late');
      await rejectsWith(f.acquire(ROUTES[ROUTES.length - 1]!, late), 'lease_conflict');
      f.clock.advance(9_001);
      for (let i = 0; i < 10; i++) await f.engine.sweep();
      const got = await f.acquire(ROUTES[ROUTES.length - 1]!, late);
      assert.equal(got.answer.lease.owner_id, 'late');
    });

    test("a revoke with close_session and an operator's lock-delay cap applies the cap to every step of the session's end", async () => {
      await f.engine.policies.set(f.admin, 'lease://big/**', { ...NONE, lockDelayMs: 60_000 }, REASON);
      const s = await holdAll();
      const first = await f.engine.leases.inspect(f.admin, ROUTES[0]!);
      const token = first.lease.fencing_token;
      await f.engine.operators.revoke(f.admin, ROUTES[0]!, {
        requestId: rid(),
        reason: REASON,
        expectedFencingToken: token,
        closeSession: true,
        lockDelayMs: 0,
        digest: requestDigest({ reason: REASON, expected_fencing_token: token, close_session: true, lock_delay_ms: 0 }),
      });
      await rejectsWith(f.engine.sessions.keepAlive(f.admin, s), 'session_not_found');
      await until(f, () => ended().length === ROUTES.length, undefined, 'every lease of the revoked session to end');
      assert.deepEqual(ended().map((c) => c.change).sort(), ['revoked', ...Array(ROUTES.length - 1).fill('session_closed')]);
      // Skipped lock-delay: every route, the last step's included, is free at once.
      const next = await f.open('next');
      for (const r of ROUTES) assert.equal((await f.acquire(r, next)).answer.lease.owner_id, 'next', r);
    });
  });
}
