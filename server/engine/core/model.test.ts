/**
 * Randomized runs of interleaved operations (acquire with and without waiting,
 * renew, release, checkpoint, session close, keepalive, operators'
 * force-release and revoke with current and stale tokens, clock moves,
 * sweeps, restarts) checked against the contract's invariants rather than against a
 * second implementation:
 *
 * - the held set rebuilt from the change events equals LIST at every check;
 * - revisions of change events go up by exactly one each;
 * - per route, every new acquisition has a strictly greater fencing token,
 *   across restarts;
 * - a refused renew, release or checkpoint changed nothing;
 * - a checkpoint never goes back to a lower token;
 * - an operator action ends exactly the lease it names, or nothing.
 *
 * Seeded, so a failure names the seed that reproduces it.
 */

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import { engineFixture, proofOf, settleWithTime, type EngineFixture } from '../../testing/engine-fixture';
import { prng } from '../../testing/harness';
import type { LeaseholdError } from './errors';
import type { LeaseChange } from './events';
import type { HeldLease } from './views';
import { BACKENDS } from '../../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  const ROUTES = ['lease://m/a/1', 'lease://m/a/2', 'lease://m/b/1', 'lease://n/a/1'];

  async function run(seed: number, steps: number): Promise<{ acquisitions: number; revision: number; operatorEnds: number }> {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const f: EngineFixture = await engineFixture({ backend, limits: { waitersPerRoute: 2 } });
    const held = new Map<string, HeldLease & { sessionId: string }>();
    const lastToken = new Map<string, number>();
    const checkpointToken = new Map<string, number>();
    let lastRevision = 0;
    let applied = 0;
    let operatorEnds = 0;
    const view = new Map<string, number>();
    const pending: Promise<unknown>[] = [];
    let sessions: string[] = [];

    const applyEvents = () => {
      const changes: LeaseChange[] = f.changes();
      for (; applied < changes.length; applied++) {
        const c = changes[applied]!;
        assert.equal(c.revision, lastRevision + 1, `seed ${seed}: revisions go up by one (${lastRevision} → ${c.revision})`);
        lastRevision = c.revision;
        if (c.change === 'acquired') {
          const prev = lastToken.get(c.route) ?? 0;
          assert.ok(c.fencingToken > prev, `seed ${seed}: token of ${c.route} went from ${prev} to ${c.fencingToken}`);
          lastToken.set(c.route, c.fencingToken);
          view.set(c.route, c.fencingToken);
        } else {
          assert.equal(view.get(c.route), c.fencingToken, `seed ${seed}: ${c.change} of a lease the events never showed held`);
          view.delete(c.route);
        }
      }
    };

    const check = async () => {
      await settleWithTime(f, pending.splice(0));
      applyEvents();
      const page = await f.engine.leases.list(f.admin, selectorOrThrow('lease://**'), { limit: 100 });
      applyEvents();
      const listed = new Map(page.items.map((i) => [i.route, i.fencing_token]));
      assert.deepEqual(listed, view, `seed ${seed}: LIST equals the held set the events describe`);
    };

    /** Is this the lease the change events say holds the route right now? */
    const isCurrent = (route: string, lease: HeldLease) => {
      applyEvents();
      return view.get(route) === lease.fencing_token;
    };

    const openSessions = async () => {
      sessions = [];
      for (let i = 0; i < 3; i++) sessions.push(await f.open(`s${i}`, 2_000 + Math.floor(rnd() * 8_000)));
    };

    try {
      await openSessions();
      for (let i = 0; i < steps; i++) {
        const route = pick(ROUTES);
        const sessionId = pick(sessions);
        const mine = held.get(route);
        const r = rnd();
        if (r < 0.3) {
          const wait = rnd() < 0.2 ? 50 : 0;
          const p = f
            .acquire(route, sessionId, { ttlMs: 1_000 + Math.floor(rnd() * 4_000), waitMs: wait })
            .then((o) => held.set(route, { ...o.answer.lease, sessionId }))
            .catch(() => {});
          if (wait) pending.push(p);
          else await p;
        } else if (r < 0.45 && mine) {
          // Waiting acquires still in flight would change the route between the two inspects
          // (on PostgreSQL their steps really run concurrently): let them finish first.
          await settleWithTime(f, pending.splice(0));
          const before = await f.engine.leases.inspect(f.admin, route).catch(() => undefined);
          const wasCurrent = isCurrent(route, mine);
          try {
            await f.engine.leases.renew(f.admin, route, proofOf(mine.sessionId, mine));
            assert.ok(wasCurrent, `seed ${seed}: a renew succeeded for a lease that was not the current one`);
          } catch (e) {
            assert.equal((e as LeaseholdError).code, 'lease_lost');
            const after = await f.engine.leases.inspect(f.admin, route).catch(() => undefined);
            assert.deepEqual(after && { t: after.lease.fencing_token, n: after.lease.renewal_count }, before && { t: before.lease.fencing_token, n: before.lease.renewal_count }, `seed ${seed}: a refused renew changed nothing`);
          }
        } else if (r < 0.6 && mine) {
          const asHolder = rnd() < 0.8;
          const wasCurrent = isCurrent(route, mine) && (asHolder || sessionId === mine.sessionId);
          await f.engine.leases.release(f.admin, route, proofOf(asHolder ? mine.sessionId : sessionId, mine)).then(
            () => {
              assert.ok(wasCurrent, `seed ${seed}: a release succeeded for a lease that was not the caller's current one`);
              held.delete(route);
            },
            (e: LeaseholdError) => assert.equal(e.code, 'lease_lost'),
          );
        } else if (r < 0.7 && mine) {
          const wasCurrent = isCurrent(route, mine);
          try {
            await f.engine.leases.writeCheckpoint(f.admin, route, { ...proofOf(mine.sessionId, mine), value: String(mine.fencing_token) });
            assert.ok(wasCurrent, `seed ${seed}: a checkpoint was written under a lease that was not the current one`);
            const prev = checkpointToken.get(route) ?? 0;
            assert.ok(mine.fencing_token >= prev, `seed ${seed}: a checkpoint went back from token ${prev} to ${mine.fencing_token}`);
            checkpointToken.set(route, mine.fencing_token);
          } catch (e) {
            assert.equal((e as LeaseholdError).code, 'lease_lost');
          }
          const cp = await f.engine.leases.readCheckpoint(f.admin, route).catch(() => undefined);
          if (cp) assert.equal(cp.checkpoint.fencing_token, checkpointToken.get(route));
        } else if (r < 0.73) {
          // An operator, usually with the token the events show, sometimes a stale one.
          applyEvents();
          const current = view.get(route);
          const expected = current !== undefined && rnd() < 0.8 ? current : Math.max(1, (lastToken.get(route) ?? 1) - 1);
          const kind = rnd() < 0.5 ? 'force_released' : 'revoked';
          const input = { requestId: `op-${i}`, reason: 'model operator', expectedFencingToken: expected, digest: `d-${i}` };
          const seen = f.changes().length;
          const ended = () => f.changes().slice(seen).filter((c) => c.route === route && c.change === kind);
          try {
            if (kind === 'revoked') await f.engine.operators.revoke(f.admin, route, { ...input, closeSession: rnd() < 0.5 });
            else await f.engine.operators.forceRelease(f.admin, route, input);
            assert.deepEqual(ended().map((c) => c.fencingToken), [expected], `seed ${seed}: the ${kind} ended exactly the lease the operator named`);
            operatorEnds++;
          } catch (e) {
            assert.ok(['lease_mismatch', 'lease_not_found'].includes((e as LeaseholdError).code), `seed ${seed}: ${(e as LeaseholdError).code}`);
            assert.deepEqual(ended(), [], `seed ${seed}: a refused ${kind} ended nothing`);
          }
        } else if (r < 0.75) {
          await f.engine.sessions.keepAlive(f.admin, sessionId).catch((e: LeaseholdError) => assert.equal(e.code, 'session_not_found'));
        } else if (r < 0.8) {
          await f.engine.sessions.close(f.admin, sessionId).catch((e: LeaseholdError) => assert.equal(e.code, 'session_not_found'));
          sessions = sessions.filter((s) => s !== sessionId);
          sessions.push(await f.open(`s${i}`, 2_000 + Math.floor(rnd() * 8_000)));
        } else if (r < 0.95) {
          f.clock.advance(Math.floor(rnd() * 1_500));
          if (rnd() < 0.5) await f.engine.sweep();
        } else if (r < 0.97) {
          await check();
          // A restart: the event log starts again, the held set carries over.
          await settleWithTime(f, pending.splice(0));
          await f.restart();
          applied = 0;
          await openSessions();
        } else {
          await check();
        }
      }
      await check();
      return { acquisitions: lastToken.size, revision: lastRevision, operatorEnds };
    } finally {
      await f.close();
    }
  }

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`random interleavings keep the invariants (seed ${seed})`, async (t) => {
      const { revision, operatorEnds } = await run(seed, 1_000);
      t.diagnostic(`${revision} changes of the held set, ${operatorEnds} ended by operators`);
      assert.ok(revision >= 50, 'the run exercised the engine');
      assert.ok(operatorEnds >= 1, 'the run exercised the operator actions');
    });
  }

 });
}
