/**
 * The waiters one instance holds (waiters.ts, "LocalWaiters"): by route,
 * with their counts, and the base both queue implementations share.
 */

import type { Waiter } from '../core/model';
import type { ParkedPlace } from './waiters';
import { transitionWaiter } from './waiters';

export function key(family: string, route: string): string {
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
export abstract class Queues {
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

