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
 */

import { addMs, millis } from '../store/millis';
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
  /** Its place in the queue: kept by the requests that continue it (their tickets name it). */
  place: string;
  parked?: undefined;
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

function key(family: string, route: string): string {
  return `${family}\n${route}`;
}

/** A queue entry in memory: a waiting client, or a parked place. */
type Entry = Waiter | ParkedPlace;

/** The waiters this instance holds, by route, with their counts: every queue change of a `Waiter` happens here (its state changes through `transitionWaiter`). In memory (`MemoryWaitQueue`) the queues hold parked places too. */
export class LocalWaiters {
  private readonly queues = new Map<string, Entry[]>();
  private total = 0;
  /** Waiters queued per family (families with none are left out); parked places are not waiters held open. */
  private readonly perFamily = new Map<string, number>();

  private adjust(family: string, by: number): void {
    this.total += by;
    const n = (this.perFamily.get(family) ?? 0) + by;
    if (n > 0) this.perFamily.set(family, n);
    else this.perFamily.delete(family);
  }

  /** Take the waiter at `i` of its queue (state → claimed). */
  private take(family: string, k: string, q: Entry[], i: number): Waiter {
    const [w] = q.splice(i, 1) as [Waiter];
    if (q.length === 0) this.queues.delete(k);
    this.adjust(family, -1);
    transitionWaiter(w, 'claimed');
    return w;
  }

  /** Queue length of a route, parked places included. */
  count(family: string, route: string): number {
    return this.queues.get(key(family, route))?.length ?? 0;
  }

  /** Waiters held open for a route (parked places excluded). */
  held(family: string, route: string): number {
    return this.queues.get(key(family, route))?.filter((e) => !e.parked).length ?? 0;
  }

  size(family?: string): number {
    return family === undefined ? this.total : (this.perFamily.get(family) ?? 0);
  }

  /** Is the session queued for the route (waiting, or parked until after `now`)? */
  hasSession(family: string, route: string, sessionHash: string, now: number): boolean {
    return this.queues.get(key(family, route))?.some((e) => e.sessionHash === sessionHash && (!e.parked || e.until > now)) ?? false;
  }

  findRequest(family: string, route: string, requestId: string): Waiter | undefined {
    return this.queues.get(key(family, route))?.find((e): e is Waiter => !e.parked && e.requestId === requestId);
  }

  enqueue(w: Waiter): void {
    const k = key(w.family, w.route);
    let q = this.queues.get(k);
    if (!q) this.queues.set(k, (q = []));
    q.push(w);
    this.adjust(w.family, 1);
  }

  /** The head of a route's queue, left in place. */
  head(family: string, route: string): Entry | undefined {
    return this.queues.get(key(family, route))?.[0];
  }

  /** The head waiter, taken off the queue (state → claimed); undefined when the head is a parked place. */
  claimHead(family: string, route: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    return q && q.length > 0 && !q[0]!.parked ? this.take(family, k, q, 0) : undefined;
  }

  /** The waiter with this request id, taken off its queue (state → claimed), if it is waiting. */
  claimRequest(family: string, route: string, requestId: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    const i = q ? q.findIndex((e) => !e.parked && e.requestId === requestId) : -1;
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

  /** A waiting waiter's wait ended (state → done): a parked place takes its position until `until`. */
  park(w: Waiter, until: number): ParkedPlace | undefined {
    if (w.state !== 'waiting') return undefined;
    const q = this.queues.get(key(w.family, w.route));
    const i = q ? q.indexOf(w) : -1;
    if (i < 0) return undefined;
    const p: ParkedPlace = { parked: true, family: w.family, route: w.route, sessionHash: w.sessionHash, place: w.place, until, gone: false };
    q![i] = p;
    this.adjust(w.family, -1);
    transitionWaiter(w, 'done');
    return p;
  }

  /** The entry (waiting or parked) holding a place. */
  findPlace(family: string, route: string, place: string): Entry | undefined {
    return this.queues.get(key(family, route))?.find((e) => e.place === place);
  }

  /** A waiting `w` takes the position of the parked place `p`. */
  resume(p: ParkedPlace, w: Waiter): boolean {
    const q = this.queues.get(key(p.family, p.route));
    const i = q ? q.indexOf(p) : -1;
    if (i < 0) return false;
    q![i] = w;
    p.gone = true;
    this.adjust(w.family, 1);
    return true;
  }

  /** A parked place leaves its queue. */
  drop(p: ParkedPlace): boolean {
    const k = key(p.family, p.route);
    const q = this.queues.get(k);
    const i = q ? q.indexOf(p) : -1;
    p.gone = true;
    if (i < 0) return false;
    q!.splice(i, 1);
    if (q!.length === 0) this.queues.delete(k);
    return true;
  }

  ofSession(sessionHash: string): Waiter[] {
    const out: Waiter[] = [];
    for (const q of this.queues.values()) for (const e of q) if (!e.parked && e.sessionHash === sessionHash) out.push(e);
    return out;
  }

  parkedOf(sessionHash: string): ParkedPlace[] {
    const out: ParkedPlace[] = [];
    for (const q of this.queues.values()) for (const e of q) if (e.parked && e.sessionHash === sessionHash) out.push(e);
    return out;
  }

  all(): Waiter[] {
    return [...this.queues.values()].flat().filter((e): e is Waiter => !e.parked);
  }
}

/** What both implementations share: this instance's waiters and their counts. */
abstract class Queues {
  protected readonly local = new LocalWaiters();
  size(family?: string): number {
    return this.local.size(family);
  }
  held(family: string, route: string): number {
    return this.local.held(family, route);
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

/** Parked places by the time they lapse, one list per family, earliest first (stale entries skipped when taken). */
class ParkedByTime {
  private readonly lists = new Map<string, Array<{ until: number; p: ParkedPlace }>>();

  add(p: ParkedPlace): void {
    let list = this.lists.get(p.family);
    if (!list) this.lists.set(p.family, (list = []));
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid]!.until <= p.until) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, { until: p.until, p });
  }

  /** Places of `family` lapsed at `now`, taken off the list (at most `limit`; stale entries dropped on the way). */
  due(family: string, now: number, limit: number): ParkedPlace[] {
    const list = this.lists.get(family);
    const out: ParkedPlace[] = [];
    let n = 0;
    while (list && n < list.length && list[n]!.until <= now && out.length < limit) {
      const { until, p } = list[n++]!;
      if (!p.gone && p.until === until) out.push(p);
    }
    list?.splice(0, n);
    if (list?.length === 0) this.lists.delete(family);
    return out;
  }

  families(now: number, limit: number): string[] {
    const out: string[] = [];
    for (const [family, list] of this.lists) {
      if (out.length >= limit) break;
      if (list[0]!.until <= now) out.push(family);
    }
    return out;
  }
}

/** The queues of a single instance: in memory. */
export class MemoryWaitQueue extends Queues implements WaitQueue {
  readonly inStore = false;
  private readonly byTime = new ParkedByTime();
  async count(_step: Step, family: string, route: string): Promise<number> {
    return this.local.count(family, route);
  }
  async countOf(_step: Step, family: string, routes: readonly string[]): Promise<Map<string, number>> {
    return new Map(routes.map((r) => [r, this.local.count(family, r)]));
  }
  async findRequest(_step: Step, family: string, route: string, requestId: string): Promise<{ digest: string } | undefined> {
    return this.local.findRequest(family, route, requestId);
  }
  async hasSession(step: Step, family: string, route: string, sessionHash: string): Promise<boolean> {
    return this.local.hasSession(family, route, sessionHash, step.now);
  }
  async enqueue(_step: Step, w: Waiter): Promise<void> {
    this.local.enqueue(w);
  }
  async claimHead(step: Step, family: string, route: string): Promise<Claim | Reserved | undefined> {
    for (;;) {
      const head = this.local.head(family, route);
      if (!head) return undefined;
      if (head.parked) {
        if (head.until > step.now) return { reserved: true, place: head.place, sessionHash: head.sessionHash, until: head.until };
        this.local.drop(head);
        continue;
      }
      const w = this.local.claimHead(family, route)!;
      if (!w.signal?.aborted) return { waiter: w, params: w };
      transitionWaiter(w, 'done');
    }
  }
  async takeSession(step: Step, sessionHash: string): Promise<SessionWaiters> {
    // Its parked places lapse now; the sweep drops them and serves their routes.
    const parked = this.local.parkedOf(sessionHash).filter((p) => p.until > step.now);
    for (const p of parked) {
      p.until = step.now;
      this.byTime.add(p);
    }
    return { local: this.takeLocal(sessionHash), remote: [], lapsed: parked.length };
  }
  async forget(): Promise<boolean> {
    return true;
  }
  async leave(): Promise<void> {}
  async park(_step: Step, w: Waiter, until: number): Promise<boolean> {
    const p = this.local.park(w, until);
    if (p) this.byTime.add(p);
    return p !== undefined;
  }
  async findPlace(step: Step, family: string, route: string, place: string): Promise<PlaceFound | undefined> {
    const e = this.local.findPlace(family, route, place);
    if (!e || (e.parked && e.until <= step.now)) return undefined;
    return { sessionHash: e.sessionHash, parked: e.parked === true };
  }
  async resume(step: Step, w: Waiter): Promise<boolean> {
    const e = this.local.findPlace(w.family, w.route, w.place);
    return e?.parked === true && e.until > step.now && this.local.resume(e, w);
  }
  async repark(_step: Step, family: string, route: string, place: string, until: number): Promise<boolean> {
    const e = this.local.findPlace(family, route, place);
    if (e?.parked !== true) return false;
    e.until = until;
    this.byTime.add(e);
    return true;
  }
  async dropPlace(_step: Step, family: string, route: string, place: string): Promise<boolean> {
    const e = this.local.findPlace(family, route, place);
    return e?.parked === true && this.local.drop(e);
  }
  async dropSessionPlace(step: Step, family: string, route: string, sessionHash: string): Promise<boolean> {
    const e = this.local.parkedOf(sessionHash).find((x) => x.family === family && x.route === route);
    return e !== undefined && this.local.drop(e) && e.until > step.now;
  }
  async dueParked(step: Step, family: string, limit: number): Promise<Array<{ route: string; place: string }>> {
    return this.byTime.due(family, step.now, limit).map((p) => ({ route: p.route, place: p.place }));
  }
  async dueParkedFamilies(step: Step, limit: number): Promise<string[]> {
    return this.byTime.families(step.now, limit);
  }
}

/**
 * A waiting row outlives its wait by this much: its deadline is the
 * backend's time, the timer that ends the wait (and parks the row) is this
 * instance's, so without slack another instance's step could drop the row
 * as past its deadline just before the park, and the place would be lost.
 * A row whose instance is gone stops counting at once (it no longer
 * listens), so the slack never keeps a dead waiter.
 */
const ROW_SLACK_MS = 5_000;

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
  private rowOf(step: Step, w: Waiter, waitMs: number): WaiterRow {
    const metadata = w.metadata === null ? null : JSON.stringify(w.metadata);
    const { family, route, sessionHash, requestId, digest, ttlMs, maxLifetimeMs, place } = w;
    return { family, route, sessionHash, requestId, digest, ttlMs, maxLifetimeMs, metadata, instance: this.instanceId, deadline: addMs(step.now, waitMs + ROW_SLACK_MS), place, parked: false };
  }
  async enqueue(step: Step, w: Waiter, waitMs: number): Promise<void> {
    await this.rows(step).enqueueWaiter(this.rowOf(step, w, waitMs));
    this.local.enqueue(w);
  }
  async claimHead(step: Step, family: string, route: string): Promise<Claim | Reserved | undefined> {
    const rows = this.rows(step);
    for (;;) {
      const row = await rows.headWaiter(family, route, step.now);
      if (!row) return undefined;
      if (row.parked) return { reserved: true, place: row.place, sessionHash: row.sessionHash, until: row.deadline };
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
    const lapsed = await this.rows(step).lapseSessionPlaces(sessionHash, step.now);
    return { local: this.takeLocal(sessionHash), remote, lapsed };
  }
  forget(step: Step, w: Waiter): Promise<boolean> {
    return this.rows(step).deleteWaiter(w.family, w.route, w.requestId);
  }
  async leave(store: Store): Promise<void> {
    await store.atomic((tx) => tx.waiters!.deleteInstanceWaiters(this.instanceId));
  }
  /** The row only: the local waiter leaves once the step has committed (`Waiting`). */
  park(step: Step, w: Waiter, until: number): Promise<boolean> {
    return this.rows(step).parkWaiter(w.family, w.route, w.requestId, millis(until));
  }
  async findPlace(step: Step, family: string, route: string, place: string): Promise<PlaceFound | undefined> {
    const row = await this.rows(step).findPlace(family, route, place, step.now);
    return row && { sessionHash: row.sessionHash, parked: row.parked };
  }
  async resume(step: Step, w: Waiter, waitMs: number): Promise<boolean> {
    if (!(await this.rows(step).resumePlace(this.rowOf(step, w, waitMs)))) return false;
    this.local.enqueue(w);
    return true;
  }
  repark(step: Step, family: string, route: string, place: string, until: number): Promise<boolean> {
    return this.rows(step).reparkPlace(family, route, place, millis(until));
  }
  dropPlace(step: Step, family: string, route: string, place: string): Promise<boolean> {
    return this.rows(step).deletePlace(family, route, place);
  }
  dropSessionPlace(step: Step, family: string, route: string, sessionHash: string): Promise<boolean> {
    return this.rows(step).deleteSessionPlace(family, route, sessionHash);
  }
  dueParked(step: Step, family: string, limit: number): Promise<Array<{ route: string; place: string }>> {
    return this.rows(step).dueParked(family, step.now, limit);
  }
  dueParkedFamilies(step: Step, limit: number): Promise<string[]> {
    return this.rows(step).dueParkedFamilies(step.now, limit);
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
