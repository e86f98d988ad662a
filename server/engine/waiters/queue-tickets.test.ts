/**
 * Queue tickets (CONTRACT §20, docs/design.md "Queue tickets") on every
 * store backend, on the manual clock: a wait that ends without a grant
 * keeps its place for 5 s; its ticket continues it; a route freed while its
 * head is parked is kept for it until the place lapses; tickets of another
 * session or route, or malformed ones, are refused and change nothing.
 */

import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdError } from '../core/errors';
import { endWait, engineFixture, proofOf, rejectsWith, until, type EngineFixture } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';

for (const backend of BACKENDS) {
  describe(`${backend} store`, () => {
    let f: EngineFixture;
    beforeEach(async () => {
      f = await engineFixture({ backend });
    });
    afterEach(async () => {
      await f.close();
    });

    const R = 'lease://acme/tickets/doc-1';
    const OTHER = 'lease://acme/tickets/doc-2';

    async function queued(n: number): Promise<void> {
      await until(f, () => f.engine.stats.waiters() === n, undefined, `${n} waiters`);
    }

    /** Wait 100 ms (manual clock) without a grant: the lease_conflict with its ticket, the clock at the wait's deadline. */
    async function timeOut(sessionId: string, extra: Parameters<EngineFixture['acquire']>[2] = {}): Promise<LeaseholdError> {
      const mark = f.clock.mark();
      const p = f.acquire(R, sessionId, { ...extra, waitMs: 100 });
      p.catch(() => undefined);
      await endWait(f, p, 100, mark);
      const e = await p.then(
        () => assert.fail('granted'),
        (x: unknown) => x,
      );
      assert.ok(e instanceof LeaseholdError && e.code === 'lease_conflict', String(e));
      return e;
    }

    async function waiters(): Promise<number> {
      return (await f.engine.leases.inspect(f.admin, R)).lease.waiters;
    }

    test('a wait that ends without a grant keeps its place: its ticket continues ahead of a later waiter, and is granted at once when the route is free', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      const held = await f.acquire(R, holder);
      const e = await timeOut(first);
      assert.match(e.queueTicket ?? '', /^qt_/);
      assert.equal(e.retryable, true);
      assert.equal(await waiters(), 1, 'the parked place counts as a waiter');
      // A later waiter queues behind the parked place.
      const p2 = f.acquire(R, later, { waitMs: 5_000 });
      await queued(1);
      assert.equal(await waiters(), 2);
      // The route frees while the head is parked: it is kept for it.
      await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
      await until(f, () => false, 3);
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
      assert.equal(f.engine.stats.waiters(), 1, 'the later waiter still waits');
      // Another session's acquire without waiting is refused, not granted.
      const third = await f.open('third');
      const refused = await rejectsWith(f.acquire(R, third), 'lease_conflict');
      assert.ok((refused.retryAfterMs ?? 0) >= 50);
      // The ticket continues the place: granted at once, from the queue.
      const g = await f.acquire(R, first, { queueTicket: e.queueTicket, waitMs: 1_000 });
      assert.equal(g.answer.lease.owner_id, 'first');
      assert.equal(g.answer.queued, true);
      assert.equal(g.answer.lease.waiters, 1, 'the later waiter is still queued');
      // And the later waiter is next.
      await f.engine.leases.release(f.admin, R, proofOf(first, g.answer.lease));
      assert.equal((await p2).answer.lease.owner_id, 'later');
    });

    test('a continued place waits again from where it was; a second timeout gives a ticket that continues it again', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      const held = await f.acquire(R, holder);
      const e1 = await timeOut(first);
      const p2 = f.acquire(R, later, { waitMs: 60_000 });
      p2.catch(() => undefined);
      await queued(1);
      const e2 = await timeOut(first, { queueTicket: e1.queueTicket });
      assert.ok(e2.queueTicket);
      // With wait_ms 0 the place stays parked, and the answer carries the ticket again.
      const e3 = await f.acquire(R, first, { queueTicket: e2.queueTicket }).then(
        () => assert.fail('granted'),
        (x: unknown) => x as LeaseholdError,
      );
      assert.equal(e3.code, 'lease_conflict');
      assert.ok(e3.queueTicket);
      const p1 = f.acquire(R, first, { queueTicket: e3.queueTicket, waitMs: 60_000 });
      await queued(2);
      await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
      const g = await p1;
      assert.equal(g.answer.lease.owner_id, 'first', 'the first place is served first');
      assert.equal(g.answer.queued, true);
      assert.equal(f.engine.stats.waiters(), 1);
      await f.engine.leases.release(f.admin, R, proofOf(first, g.answer.lease));
      assert.equal((await p2).answer.lease.owner_id, 'later');
    });

    test('a parked place keeps a freed route for 5 s; then it lapses and the next waiter is served, and its ticket queues at the back', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      const held = await f.acquire(R, holder);
      const e = await timeOut(first);
      const p2 = f.acquire(R, later, { waitMs: 30_000 });
      await queued(1);
      await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
      f.clock.advance(4_000);
      await f.engine.sweep();
      await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
      assert.equal(f.engine.stats.waiters(), 1, 'kept for the parked place within its 5 s');
      f.clock.advance(1_100);
      await f.engine.sweep();
      const g = await p2;
      assert.equal(g.answer.lease.owner_id, 'later');
      assert.equal(g.answer.queued, true);
      // The lapsed ticket queues at the back, as an acquire without one would.
      const back = await rejectsWith(f.acquire(R, first, { queueTicket: e.queueTicket }), 'lease_conflict');
      assert.equal(back.retryable, true);
      assert.equal((back as { queueTicket?: string }).queueTicket, undefined, 'no place kept: a plain conflict');
      const p1 = f.acquire(R, first, { queueTicket: e.queueTicket, waitMs: 30_000 });
      await queued(1);
      await f.engine.leases.release(f.admin, R, proofOf(later, g.answer.lease));
      assert.equal((await p1).answer.lease.owner_id, 'first');
    });

    test('tickets of another session, another route, or malformed are invalid_request naming queue_ticket, and change nothing', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const stranger = await f.open('stranger');
      await f.acquire(R, holder);
      await f.acquire(OTHER, holder);
      const e = await timeOut(first);
      const ticket = e.queueTicket!;
      const bad: Array<[string, string, string]> = [
        [stranger, R, ticket],
        [first, OTHER, ticket],
        [first, R, 'qt_nonsense'],
        [first, R, `${ticket.slice(0, -1)}${ticket.endsWith('A') ? 'B' : 'A'}`],
        [first, R, 'x'.repeat(40)],
      ];
      for (const [session, route, t] of bad) {
        const err = await f.engine.leases.acquire(f.admin, route, { sessionId: session, requestId: `bad-${Math.random()}`, waitMs: 0, metadata: null, digest: 'd', queueTicket: t }).then(
          () => assert.fail('accepted'),
          (x: unknown) => x as LeaseholdError,
        );
        assert.equal(err.code, 'invalid_request', `${route} ${t}`);
        assert.match(err.message, /^queue_ticket: /);
        assert.equal(err.retryable, false);
      }
      assert.equal(await waiters(), 1, 'the place is still kept');
      // ...and the real ticket still continues it.
      const again = await rejectsWith(f.acquire(R, first, { queueTicket: ticket }), 'lease_conflict');
      assert.ok((again as { queueTicket?: string }).queueTicket);
    });

    test('a session that ends drops its parked places, and the route they kept goes to the next waiter', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      const held = await f.acquire(R, holder);
      const e = await timeOut(first);
      const p2 = f.acquire(R, later, { waitMs: 30_000 });
      await queued(1);
      await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
      await f.engine.sessions.close(f.admin, first);
      await f.engine.sweep();
      assert.equal((await p2).answer.lease.owner_id, 'later');
      assert.ok(e.queueTicket);
    });

    test('a session back without its ticket gives its parked place up and queues at the back', async () => {
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      const held = await f.acquire(R, holder);
      await timeOut(first);
      const p2 = f.acquire(R, later, { waitMs: 30_000 });
      await queued(1);
      const p1 = f.acquire(R, first, { waitMs: 30_000 });
      await queued(2);
      assert.equal(await waiters(), 2, 'one place each');
      await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
      const g = await p2;
      assert.equal(g.answer.lease.owner_id, 'later');
      await f.engine.leases.release(f.admin, R, proofOf(later, g.answer.lease));
      assert.equal((await p1).answer.lease.owner_id, 'first');
    });

    test('parked places count toward the waiter cap', async () => {
      await f.close();
      f = await engineFixture({ backend, limits: { waitersPerRoute: 1 } });
      const holder = await f.open('holder');
      const first = await f.open('first');
      const later = await f.open('later');
      await f.acquire(R, holder);
      const e = await timeOut(first);
      await rejectsWith(f.acquire(R, later, { waitMs: 1_000 }), 'rate_limited');
      // Its own continuation is not a new waiter.
      const mark = f.clock.mark();
      const p1 = f.acquire(R, first, { queueTicket: e.queueTicket, waitMs: 1_000 });
      p1.catch(() => undefined);
      await queued(1);
      assert.equal(await waiters(), 1);
      await endWait(f, p1, 1_000, mark);
      await rejectsWith(p1, 'lease_conflict');
    });
  });
}
