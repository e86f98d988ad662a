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
 * A waiter moves waiting → claimed (taken off the queue inside a step that
 * frees its route or ends its session) → done (answered), or waiting → done
 * (it left). A grant's claim is undone if its step fails. Every move goes
 * through `transitionWaiter`, which refuses any other. The deadline timer
 * and the client's disconnect only act on a waiting waiter; a claimed one is
 * settled by the step that claimed it.
 */

import { addMs } from '../store/millis';
import type { SharedWaiters, Store, WaiterRow } from '../store/types';
import type { TimerHandle } from './scheduler';
import type { AcquireResult } from './leases';
import type { Step } from './step';
import type { Metadata } from './views';

export interface WaiterParams {
  family: string;
  route: string;
  sessionHash: string;
  requestId: string;
  digest: string;
  ttlMs: number;
  maxLifetimeMs: number;
  metadata: Metadata | null;
}

/** Where a waiter is: see `transitionWaiter` for the moves between them. */
export type WaiterState = 'waiting' | 'claimed' | 'done';

export interface Waiter extends WaiterParams {
  /** Changed by `transitionWaiter` only. */
  state: WaiterState;
  /** Aborted when the client goes away. */
  signal: AbortSignal | undefined;
  timer: TimerHandle | undefined;
  resolve: (r: AcquireResult) => void;
  reject: (e: unknown) => void;
}

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

/** The head of a queue, taken off it for a grant: this instance's waiter, or (shared) another instance's. */
export type Claim = { waiter: Waiter; params: WaiterParams; instance?: undefined } | { waiter?: undefined; params: WaiterParams; instance: string };

/** What a session's end took off the queues. */
export interface SessionWaiters {
  /** This instance's waiters, claimed (to refuse after commit). */
  local: Waiter[];
  /** Other instances' waiters (to notify with the commit). */
  remote: WaiterRow[];
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
  /** Take the head of a route's queue off it for a grant, skipping waiters whose client left. */
  claimHead(step: Step, family: string, route: string): Promise<Claim | undefined>;
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
}

function key(family: string, route: string): string {
  return `${family}\n${route}`;
}

/** The waiters this instance holds, by route, with their counts: every queue change of a `Waiter` happens here (its state changes through `transitionWaiter`). */
export class LocalWaiters {
  private readonly queues = new Map<string, Waiter[]>();
  private total = 0;
  /** Waiters queued per family (families with none are left out). */
  private readonly perFamily = new Map<string, number>();

  private adjust(family: string, by: number): void {
    this.total += by;
    const n = (this.perFamily.get(family) ?? 0) + by;
    if (n > 0) this.perFamily.set(family, n);
    else this.perFamily.delete(family);
  }

  /** Take the waiter at `i` of its queue (state → claimed). */
  private take(family: string, k: string, q: Waiter[], i: number): Waiter {
    const [w] = q.splice(i, 1);
    if (q.length === 0) this.queues.delete(k);
    this.adjust(family, -1);
    transitionWaiter(w!, 'claimed');
    return w!;
  }

  count(family: string, route: string): number {
    return this.queues.get(key(family, route))?.length ?? 0;
  }

  size(family?: string): number {
    return family === undefined ? this.total : (this.perFamily.get(family) ?? 0);
  }

  hasSession(family: string, route: string, sessionHash: string): boolean {
    return this.queues.get(key(family, route))?.some((w) => w.sessionHash === sessionHash) ?? false;
  }

  findRequest(family: string, route: string, requestId: string): Waiter | undefined {
    return this.queues.get(key(family, route))?.find((w) => w.requestId === requestId);
  }

  enqueue(w: Waiter): void {
    const k = key(w.family, w.route);
    let q = this.queues.get(k);
    if (!q) this.queues.set(k, (q = []));
    q.push(w);
    this.adjust(w.family, 1);
  }

  /** The head waiter, taken off the queue (state → claimed). */
  claimHead(family: string, route: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    return q && q.length > 0 ? this.take(family, k, q, 0) : undefined;
  }

  /** The waiter with this request id, taken off its queue (state → claimed), if it is waiting. */
  claimRequest(family: string, route: string, requestId: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    const i = q ? q.findIndex((w) => w.requestId === requestId) : -1;
    return i < 0 ? undefined : this.take(family, k, q!, i);
  }

  unclaim(w: Waiter): void {
    if (w.state !== 'claimed') return;
    transitionWaiter(w, 'waiting');
    const k = key(w.family, w.route);
    let q = this.queues.get(k);
    if (!q) this.queues.set(k, (q = []));
    q.unshift(w);
    this.adjust(w.family, 1);
  }

  /** A waiting waiter, taken off its queue (state → claimed); false if it was not waiting. */
  claim(w: Waiter): boolean {
    if (w.state !== 'waiting') return false;
    const k = key(w.family, w.route);
    const q = this.queues.get(k);
    const i = q ? q.indexOf(w) : -1;
    if (i < 0) return false;
    this.take(w.family, k, q!, i);
    return true;
  }

  /** A waiting waiter leaves (state → done); false if it was not waiting. */
  remove(w: Waiter): boolean {
    if (!this.claim(w)) return false;
    transitionWaiter(w, 'done');
    return true;
  }

  ofSession(sessionHash: string): Waiter[] {
    const out: Waiter[] = [];
    for (const q of this.queues.values()) for (const w of q) if (w.sessionHash === sessionHash) out.push(w);
    return out;
  }

  all(): Waiter[] {
    return [...this.queues.values()].flat();
  }
}

/** What both implementations share: this instance's waiters and their counts. */
abstract class Queues {
  protected readonly local = new LocalWaiters();
  size(family?: string): number {
    return this.local.size(family);
  }
  held(family: string, route: string): number {
    return this.local.count(family, route);
  }
  remove(w: Waiter): boolean {
    return this.local.remove(w);
  }
  claimRequest(family: string, route: string, requestId: string): Waiter | undefined {
    return this.local.claimRequest(family, route, requestId);
  }
  unclaim(w: Waiter): void {
    this.local.unclaim(w);
  }
  all(): Waiter[] {
    return this.local.all();
  }
  /** This instance's waiters of a session, taken off their queues (claimed: refused after commit). */
  protected takeLocal(sessionHash: string): Waiter[] {
    return this.local.ofSession(sessionHash).filter((w) => this.local.claim(w));
  }
}

/** The queues of a single instance: in memory. */
export class MemoryWaitQueue extends Queues implements WaitQueue {
  readonly inStore = false;
  async count(_step: Step, family: string, route: string): Promise<number> {
    return this.local.count(family, route);
  }
  async countOf(_step: Step, family: string, routes: readonly string[]): Promise<Map<string, number>> {
    return new Map(routes.map((r) => [r, this.local.count(family, r)]));
  }
  async findRequest(_step: Step, family: string, route: string, requestId: string): Promise<{ digest: string } | undefined> {
    return this.local.findRequest(family, route, requestId);
  }
  async hasSession(_step: Step, family: string, route: string, sessionHash: string): Promise<boolean> {
    return this.local.hasSession(family, route, sessionHash);
  }
  async enqueue(_step: Step, w: Waiter): Promise<void> {
    this.local.enqueue(w);
  }
  async claimHead(_step: Step, family: string, route: string): Promise<Claim | undefined> {
    for (;;) {
      const w = this.local.claimHead(family, route);
      if (!w) return undefined;
      if (!w.signal?.aborted) return { waiter: w, params: w };
      transitionWaiter(w, 'done');
    }
  }
  async takeSession(_step: Step, sessionHash: string): Promise<SessionWaiters> {
    return { local: this.takeLocal(sessionHash), remote: [] };
  }
  async forget(): Promise<boolean> {
    return true;
  }
  async leave(): Promise<void> {}
}

/** The queues of several instances: rows in the shared store, in the step's transaction; this instance's clients in `local`. */
export class SharedWaitQueue extends Queues implements WaitQueue {
  readonly inStore = true;
  constructor(private readonly instanceId: string) {
    super();
  }

  private rows(step: Step): SharedWaiters {
    return step.tx.waiters!;
  }
  count(step: Step, family: string, route: string): Promise<number> {
    return this.rows(step).countWaiters(family, route, step.now);
  }
  countOf(step: Step, family: string, routes: readonly string[]): Promise<Map<string, number>> {
    return routes.length === 0 ? Promise.resolve(new Map()) : this.rows(step).countWaitersOf(family, routes, step.now);
  }
  findRequest(step: Step, family: string, route: string, requestId: string): Promise<{ digest: string } | undefined> {
    return this.rows(step).findWaiter(family, route, requestId, step.now);
  }
  hasSession(step: Step, family: string, route: string, sessionHash: string): Promise<boolean> {
    return this.rows(step).sessionWaiting(family, route, sessionHash, step.now);
  }
  async enqueue(step: Step, w: Waiter, waitMs: number): Promise<void> {
    const metadata = w.metadata === null ? null : JSON.stringify(w.metadata);
    const { family, route, sessionHash, requestId, digest, ttlMs, maxLifetimeMs } = w;
    await this.rows(step).enqueueWaiter({ family, route, sessionHash, requestId, digest, ttlMs, maxLifetimeMs, metadata, instance: this.instanceId, deadline: addMs(step.now, waitMs) });
    this.local.enqueue(w);
  }
  async claimHead(step: Step, family: string, route: string): Promise<Claim | undefined> {
    const rows = this.rows(step);
    for (;;) {
      const row = await rows.headWaiter(family, route, step.now);
      if (!row) return undefined;
      await rows.deleteWaiter(family, route, row.requestId);
      if (row.instance !== this.instanceId) return { params: paramsOf(row), instance: row.instance };
      const w = this.local.claimRequest(family, route, row.requestId);
      // Gone already (deadline, disconnect): its own step removes nothing more.
      if (!w) continue;
      if (!w.signal?.aborted) return { waiter: w, params: w };
      transitionWaiter(w, 'done');
    }
  }
  async takeSession(step: Step, sessionHash: string): Promise<SessionWaiters> {
    const remote = (await this.rows(step).takeSessionWaiters(sessionHash)).filter((r) => r.instance !== this.instanceId);
    return { local: this.takeLocal(sessionHash), remote };
  }
  forget(step: Step, w: Waiter): Promise<boolean> {
    return this.rows(step).deleteWaiter(w.family, w.route, w.requestId);
  }
  async leave(store: Store): Promise<void> {
    await store.atomic((tx) => tx.waiters!.deleteInstanceWaiters(this.instanceId));
  }
}

function paramsOf(row: WaiterRow): WaiterParams {
  return {
    family: row.family,
    route: row.route,
    sessionHash: row.sessionHash,
    requestId: row.requestId,
    digest: row.digest,
    ttlMs: row.ttlMs,
    maxLifetimeMs: row.maxLifetimeMs,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Metadata),
  };
}

/** The queue for a store: shared when several instances share it (it has a bus), else in memory. */
export function waitQueueFor(store: Store): WaitQueue {
  return store.bus ? new SharedWaitQueue(store.bus.instanceId) : new MemoryWaitQueue();
}
