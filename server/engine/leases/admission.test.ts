/**
 * Admission (docs/design.md "Admission"), on both stores: while the oldest
 * step waiting for a family has waited longer than `admitQueueMs`, a new
 * acquisition is refused `rate_limited` before it queues (nothing changes,
 * counted, not audited row by row), while the renewals of the leases
 * already granted queue and are served. The store is made to fall behind
 * by a step that waits on a gate inside its transaction (a slow database,
 * played); the tests wait for the queue's age, measured by the store, to
 * pass the limit.
 */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdError } from '../core/errors';
import { endWait, engineFixture, proofOf, rejectsWith, type EngineFixture } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';
import { rid } from '../../testing/harness';
import { waitFor } from '../../testing/wait';
import { requestDigest } from '../core/ids';
import type { StepScope, Store } from '../../store/types';
import { selectorOrThrow } from '@/lib/selector';
import type { HeldLease } from '../core/views';

const LIMIT_MS = 50;

for (const backend of BACKENDS) {
  describe(`admission: ${backend} store`, () => {
    let f: EngineFixture | undefined;
    afterEach(async () => {
      await f?.close();
      f = undefined;
    });

    /**
     * `p` is refused `code` before it queues (admission runs before the step
     * is submitted): settled within one turn of the event loop, so a
     * regression fails here instead of waiting behind the held step.
     */
    async function refusedAtOnce(p: Promise<unknown>, code: string) {
      let settled = false;
      const outcome = p.then(
        () => assert.fail(`expected ${code}, but it succeeded`),
        (e: unknown) => e as { code?: string; message: string; retryable: boolean; retryAfterMs?: number },
      );
      void outcome.finally(() => (settled = true)).catch(() => undefined);
      await new Promise((r) => setImmediate(r));
      assert.ok(settled, `refused at once with ${code}, not queued behind the slow step`);
      const e = await outcome;
      assert.equal(e.code, code, e.message);
      return e;
    }

    /** Hold the family's work with a step that waits for `release()`; resolves once a step queued behind it has waited past `LIMIT_MS`. */
    async function fallBehind<T>(fx: EngineFixture, queued: () => Promise<T>) {
      const store = fx.engine.parts.store;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const holding = store.atomic(() => gate, { family: fx.admin.family });
      const behind = queued();
      await waitFor(`a step of family ${fx.admin.family} queued longer than ${LIMIT_MS} ms`, () => store.queueDelayMs(fx.admin.family), (ms) => ms > LIMIT_MS);
      return { release, holding, behind };
    }

    test('a family behind on its work refuses new acquisitions (single and all-or-nothing) and serves the renewal queued behind it; nothing of the refused ones happened', async () => {
      f = await engineFixture({ backend, limits: { admitQueueMs: LIMIT_MS } });
      const fx = f;
      const s = await fx.open('fleet', 60_000);
      const held = (await fx.acquire('lease://adm/r/held', s)).answer.lease;
      assert.equal(fx.engine.parts.store.queueDelayMs(fx.admin.family), 0, 'nothing waits while the store keeps up');
      const { release, holding, behind } = await fallBehind(fx, () => fx.engine.leases.renew(fx.admin, held.route, proofOf(s, held)));
      const shedId = rid();
      const items = [{ route: 'lease://adm/r/x', metadata: null }, { route: 'lease://adm/r/y', metadata: null }];
      const batchId = rid();
      const batchDigest = requestDigest({ session_id: s, request_id: batchId, leases: items });
      try {
        const refused = await refusedAtOnce(fx.acquire('lease://adm/r/new', s, { requestId: shedId }), 'rate_limited');
        assert.equal(refused.retryable, true);
        assert.ok(refused.retryAfterMs !== undefined && refused.retryAfterMs >= 250 && refused.retryAfterMs <= 5_000, `retry_after_ms ${refused.retryAfterMs}`);
        assert.match(refused.message, /behind/);
        await refusedAtOnce(fx.engine.sessions.acquireAll(fx.admin, { sessionId: s, requestId: batchId, digest: batchDigest, items }), 'rate_limited');
        assert.equal(fx.engine.stats.audit.acquire_shed, 2, 'both counted');
      } finally {
        release();
      }
      await holding;
      // The renewal that queued behind the slow step is served, and the queue drains.
      const renewed = await behind;
      assert.equal(renewed.answer.lease.renewal_count, 1);
      await waitFor('the queue to drain', () => fx.engine.parts.store.queueDelayMs(fx.admin.family), (ms) => ms === 0);

      // The refused acquisitions changed nothing: no lease, no change, and their request ids run afresh.
      await rejectsWith(fx.engine.leases.inspect(fx.admin, 'lease://adm/r/new'), 'lease_not_found');
      await rejectsWith(fx.engine.leases.inspect(fx.admin, 'lease://adm/r/x'), 'lease_not_found');
      assert.deepEqual(fx.changes().filter((c) => c.change === 'acquired').map((c) => c.route), [held.route]);
      const again = await fx.acquire('lease://adm/r/new', s, { requestId: shedId });
      assert.equal(again.replayed, false);
      assert.equal(again.answer.lease.route, 'lease://adm/r/new');
      const batch = await fx.engine.sessions.acquireAll(fx.admin, { sessionId: s, requestId: batchId, digest: batchDigest, items });
      assert.equal(batch.replayed, false);
      assert.deepEqual(batch.answer.leases.map((l) => l.route), ['lease://adm/r/x', 'lease://adm/r/y']);
    });

    test('an acquire continuing its queue place with a ticket is admitted while new ones are refused, and is granted from its place', async () => {
      f = await engineFixture({ backend, limits: { admitQueueMs: LIMIT_MS } });
      const fx = f;
      const R = 'lease://adm/q/doc';
      const holder = await fx.open('holder', 60_000);
      const first = await fx.open('first', 60_000);
      const held = await fx.acquire(R, holder);
      // first waits 100 ms (manual clock) without a grant: lease_conflict with its ticket, its place parked.
      const mark = fx.clock.mark();
      const waiting = fx.acquire(R, first, { waitMs: 100 });
      waiting.catch(() => undefined);
      await endWait(fx, waiting, 100, mark);
      const e = await waiting.then(() => assert.fail('granted'), (x: unknown) => x);
      assert.ok(e instanceof LeaseholdError && e.code === 'lease_conflict' && e.queueTicket, String(e));
      // The route frees while its head is parked: it is kept for the ticket.
      await fx.engine.leases.release(fx.admin, R, proofOf(holder, held.answer.lease));
      const { release, holding, behind } = await fallBehind(fx, () => fx.engine.sessions.keepAlive(fx.admin, holder));
      let continued;
      try {
        await refusedAtOnce(fx.acquire('lease://adm/q/other', holder), 'rate_limited');
        // Issued while the family is behind: admitted, it queues.
        continued = fx.acquire(R, first, { queueTicket: e.queueTicket, waitMs: 1_000 });
        continued.catch(() => undefined);
      } finally {
        release();
      }
      await holding;
      await behind;
      const granted = await continued;
      assert.equal(granted.answer.lease.owner_id, 'first');
      assert.equal(granted.answer.queued, true, 'from its place in the queue');
      assert.equal(fx.engine.stats.audit.acquire_shed, 1, 'only the new acquisition was turned away');
    });

    test('renewals, keepalives and batched renewals ask the store to take them ahead of the steps queued before them; acquisitions and releases do not', async () => {
      const scopes: StepScope[] = [];
      f = await engineFixture({ backend }, (inner) => {
        const store = Object.create(inner) as Store;
        // A request's own step: the engine's housekeeping (the audit writer's steps name no family, sweeps run alone) may run beside it.
        store.atomic = (fn, scope) => (scope?.family !== undefined && scope.alone !== true && scopes.push(scope), inner.atomic(fn, scope));
        return store;
      });
      const fx = f;
      /** Whether the one family step `call` ran asked to keep leases (`StepScope.keeps`). */
      const keeps = async (call: () => Promise<unknown>) => {
        scopes.length = 0;
        await call();
        assert.equal(scopes.length, 1, 'one family step');
        assert.equal(scopes[0]!.family, fx.admin.family);
        return scopes[0]!.keeps === true;
      };
      const s = await fx.open('fleet', 60_000);
      let lease!: HeldLease;
      assert.equal(await keeps(async () => (lease = (await fx.acquire('lease://adm/k/a', s)).answer.lease)), false, 'acquire');
      assert.equal(await keeps(() => fx.engine.leases.renew(fx.admin, lease.route, proofOf(s, lease))), true, 'renew');
      assert.equal(await keeps(() => fx.engine.sessions.keepAlive(fx.admin, s)), true, 'keepalive');
      const items = [{ route: lease.route, leaseId: lease.lease_id, fencingToken: lease.fencing_token }];
      const renewed = await keeps(() => fx.engine.sessions.renewAll(fx.admin, { sessionId: s, requestId: rid(), digest: requestDigest({ session_id: s, request_id: 'x', leases: items }), items }));
      assert.equal(renewed, true, 'batched renewal');
      const more = [{ route: 'lease://adm/k/b', metadata: null }];
      assert.equal(await keeps(() => fx.engine.sessions.acquireAll(fx.admin, { sessionId: s, requestId: rid(), digest: requestDigest({ session_id: s, request_id: 'x', leases: more }), items: more })), false, 'acquireAll');
      assert.equal(await keeps(() => fx.engine.leases.release(fx.admin, lease.route, proofOf(s, lease))), false, 'release');
      // A page of a listing counts the rows it may examine as its work (StepScope.work).
      const sel = selectorOrThrow('lease://adm/k/*');
      for (const [name, call, work] of [
        ['list', () => fx.engine.leases.list(fx.admin, sel, { limit: 10 }), fx.engine.limits.listBudget],
        ['list with a budget', () => fx.engine.leases.list(fx.admin, sel, { limit: 10, budget: 50 }), 50],
        ['summary', () => fx.engine.leases.summary(fx.admin, sel, {}), fx.engine.limits.listBudget],
      ] as const) {
        assert.equal(await keeps(call), false, name);
        assert.equal(scopes[0]!.work, work, name);
      }
    });

    test('with admission off (0), an acquisition queues behind the slow step however long it waits, and is granted', async () => {
      f = await engineFixture({ backend, limits: { admitQueueMs: 0 } });
      const fx = f;
      const s = await fx.open('fleet', 60_000);
      const { release, holding, behind } = await fallBehind(fx, () => fx.acquire('lease://adm/r/first', s));
      let late;
      try {
        late = fx.acquire('lease://adm/r/late', s);
      } finally {
        release();
      }
      await holding;
      assert.equal((await behind).answer.lease.route, 'lease://adm/r/first');
      assert.equal((await late).answer.lease.route, 'lease://adm/r/late');
      assert.equal(fx.engine.stats.audit.acquire_shed, 0);
    });
  });
}
