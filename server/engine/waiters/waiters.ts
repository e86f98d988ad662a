/**
 * FIFO wait queues, one per (family, route), behind one interface,
 * `WaitQueue`, with one implementation per kind of store: the waiter state
 * and its counts change in exactly one place for each.
 *
 * - `MemoryWaitQueue` (SQLite, one instance): the queues are in memory.
 * - `SharedWaitQueue` (PostgreSQL, several instances): the queues are rows
 *   in the store, read and changed in the step's transaction, so the step
 *   that frees a route grants its head waiter whichever instance holds it.
 *
 * Either way the waiting clients themselves (`Waiter`: the promise to
 * answer, the timer, the abort signal) live in the instance that accepted
 * them, in `LocalWaiters`, which owns the gauge counts (per family and in
 * all). Waiters do not survive a restart (clients retry) and never appear
 * in inventory.
 *
 * A waiter whose wait ends without a grant leaves a parked place behind
 * (CONTRACT §20, docs/design.md "Queue tickets"): its position, with no
 * client waiting, kept for `parkMs` for a request carrying its ticket. A
 * parked place at the head of a free route keeps the route (`Reserved`).
 *
 * A waiter moves waiting → claimed (taken off the queue inside a step that
 * frees its route or ends its session) → done (answered), or waiting → done
 * (it left). A grant's claim is undone if its step fails. Every move goes
 * through `transitionWaiter`, which refuses any other. The deadline timer
 * and the client's disconnect only act on a waiting waiter; a claimed one is
 * settled by the step that claimed it.
 *
 * This file holds the types and the waiter's moves; `LocalWaiters` is in
 * local-waiters.ts, the two queues in memory-queue.ts and shared-queue.ts,
 * and queue-for.ts picks one for a store.
 */

import type { Store, WaiterRow } from '../../store/types';
import type { Waiter, WaiterParams, WaiterState } from '../core/model';
import type { Step } from '../core/step';

export type { Waiter, WaiterParams, WaiterState } from '../core/model';

/** A move the waiter's state does not allow: a fault in the caller, never a client's. */
export class IllegalWaiterTransition extends Error {
  constructor(from: WaiterState, to: WaiterState) {
    super(`illegal waiter transition: ${from} → ${to}`);
    this.name = 'IllegalWaiterTransition';
  }
}

/**
 * Every change of a waiter's state (docs/design.md "Lease and waiter
 * transitions"). The moves:
 *
 * - waiting → claimed: a step took it off its queue (to grant it, or to
 *   refuse it after commit because its session ended);
 * - claimed → waiting: that step failed, the waiter goes back to the head;
 * - waiting → done: it left (deadline, disconnect, shutdown);
 * - claimed → done: it was answered (granted, refused, or dropped because
 *   its client had gone).
 *
 * `done` is final. Anything else throws `IllegalWaiterTransition`.
 */
export function transitionWaiter(w: { state: WaiterState }, to: WaiterState): void {
  const from = w.state;
  if (to === 'claimed' ? from !== 'waiting' : to === 'waiting' ? from !== 'claimed' : from === 'done') {
    throw new IllegalWaiterTransition(from, to);
  }
  w.state = to;
}

/** A place whose wait ended without a grant, kept (in memory) for its ticket until `until`. */
export interface ParkedPlace {
  parked: true;
  family: string;
  route: string;
  sessionHash: string;
  place: string;
  until: number;
  /** Dropped or continued: no longer in its queue. */
  gone: boolean;
}

/** The head of a queue, taken off it for a grant: this instance's waiter, or (shared) another instance's. */
export type Claim = { waiter: Waiter; params: WaiterParams; instance?: undefined } | { waiter?: undefined; params: WaiterParams; instance: string };

/** The head of a queue is a parked place, live until `until`: the route is kept for it. */
export interface Reserved {
  reserved: true;
  place: string;
  sessionHash: string;
  until: number;
}

/** A live place in a queue (`findPlace`). */
export interface PlaceFound {
  sessionHash: string;
  parked: boolean;
}

/** What a session's end took off the queues. */
export interface SessionWaiters {
  /** This instance's waiters, claimed (to refuse after commit). */
  local: Waiter[];
  /** Other instances' waiters (to notify with the commit). */
  remote: WaiterRow[];
  /** Its parked places, made to lapse now: the sweep serves their routes. */
  lapsed: number;
}

/** The wait queues as the engine sees them; see the file comment. */
export interface WaitQueue {
  /** True when the queues are rows in the store: a waiter that leaves outside a step needs a step to `forget` it. */
  readonly inStore: boolean;
  /** Waiters this instance holds open, in all or in one family (the gauge). */
  size(family?: string): number;
  /** Waiters this instance holds open for one route. */
  held(family: string, route: string): number;
  /** Queue length of a route (on every instance, on a shared store). */
  count(step: Step, family: string, route: string): Promise<number>;
  /** Queue lengths of several routes (absent: none). */
  countOf(step: Step, family: string, routes: readonly string[]): Promise<Map<string, number>>;
  /** The digest of the queued request with this idempotency key, if one is queued. */
  findRequest(step: Step, family: string, route: string, requestId: string): Promise<{ digest: string } | undefined>;
  /** Is this session already queued for this route? */
  hasSession(step: Step, family: string, route: string, sessionHash: string): Promise<boolean>;
  /** Queue a waiter (state waiting) until `deadline` at most. */
  enqueue(step: Step, w: Waiter, waitMs: number): Promise<void>;
  /** Take the head of a route's queue off it for a grant, skipping waiters whose client left and places that lapsed; a live parked place at the head is `Reserved` (left in place). */
  claimHead(step: Step, family: string, route: string): Promise<Claim | Reserved | undefined>;
  /** Take every waiter of a session off the queues. */
  takeSession(step: Step, sessionHash: string): Promise<SessionWaiters>;
  /** A waiting waiter leaves (deadline, disconnect, shutdown, failed step): false if it was not waiting. */
  remove(w: Waiter): boolean;
  /** Inside a step: take a waiter that left off the store's queue too (shared); false if its row was gone (another step claimed it). */
  forget(step: Step, w: Waiter): Promise<boolean>;
  /** Another instance granted or refused this instance's waiter (shared): claim it, if still waiting. */
  claimRequest(family: string, route: string, requestId: string): Waiter | undefined;
  /** Put a claimed waiter back at the head (its step failed). */
  unclaim(w: Waiter): void;
  /** Every waiting waiter of this instance, for shutdown. */
  all(): Waiter[];
  /** At shutdown, after every waiter was removed: drop this instance's rows from the store (shared). */
  leave(store: Store): Promise<void>;
  /** Its wait ended: park a waiting waiter's place until `until` (the waiter is then answered with its ticket); false if it was no longer queued (granted, refused, gone). */
  park(step: Step, w: Waiter, until: number): Promise<boolean>;
  /** The live place with this id in a route's queue, if it is still kept. */
  findPlace(step: Step, family: string, route: string, place: string): Promise<PlaceFound | undefined>;
  /** A request continues a parked place: `w` (state waiting, `w.place` the place) takes its position until `waitMs`; false if it was no longer parked. */
  resume(step: Step, w: Waiter, waitMs: number): Promise<boolean>;
  /** Keep a parked place until `until` (continued with wait_ms 0); false if it was no longer parked. */
  repark(step: Step, family: string, route: string, place: string, until: number): Promise<boolean>;
  /** Drop a place (granted to its request, or lapsed). */
  dropPlace(step: Step, family: string, route: string, place: string): Promise<boolean>;
  /** Drop a session's parked place on a route (it came back without its ticket): false if it had none. */
  dropSessionPlace(step: Step, family: string, route: string, sessionHash: string): Promise<boolean>;
  /** Parked places of a family whose time ran out (at most `limit`). */
  dueParked(step: Step, family: string, limit: number): Promise<Array<{ route: string; place: string }>>;
  /** Families with a parked place whose time ran out (at most `limit`). */
  dueParkedFamilies(step: Step, limit: number): Promise<string[]>;
}
