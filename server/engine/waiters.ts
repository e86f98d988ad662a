/**
 * FIFO wait queues, one per (family, route). Waiters live in memory: they do
 * not survive a restart (clients retry), and they never appear in inventory.
 *
 * A waiter moves waiting → claimed (taken off the queue inside a step that
 * frees its route) → done (answered). A claim is undone if its step fails.
 * The deadline timer and the client's disconnect only act on a waiting
 * waiter; a claimed one is settled by the step that claimed it.
 */

import type { TimerHandle } from './scheduler';
import type { AcquireResult } from './leases';
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

export interface Waiter extends WaiterParams {
  state: 'waiting' | 'claimed' | 'done';
  /** Aborted when the client goes away. */
  signal: AbortSignal | undefined;
  timer: TimerHandle | undefined;
  resolve: (r: AcquireResult) => void;
  reject: (e: unknown) => void;
}

function key(family: string, route: string): string {
  return `${family}\n${route}`;
}

export class WaiterQueues {
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

  /** Number of waiters queued for a route. */
  count(family: string, route: string): number {
    return this.queues.get(key(family, route))?.length ?? 0;
  }

  /** Number of waiters queued in all, or in one family. */
  size(family?: string): number {
    return family === undefined ? this.total : (this.perFamily.get(family) ?? 0);
  }

  /** Is this session already waiting for this route? */
  hasSession(family: string, route: string, sessionHash: string): boolean {
    return this.queues.get(key(family, route))?.some((w) => w.sessionHash === sessionHash) ?? false;
  }

  /** The waiter already queued for this idempotency key, if any. */
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

  /** Take the head waiter off the queue (state → claimed). */
  claimHead(family: string, route: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    const w = q?.shift();
    if (!w) return undefined;
    if (q!.length === 0) this.queues.delete(k);
    this.adjust(family, -1);
    w.state = 'claimed';
    return w;
  }

  /** Take the waiter with this request id off its queue (state → claimed), if it is waiting. */
  claimRequest(family: string, route: string, requestId: string): Waiter | undefined {
    const k = key(family, route);
    const q = this.queues.get(k);
    const i = q ? q.findIndex((w) => w.requestId === requestId) : -1;
    if (i < 0) return undefined;
    const [w] = q!.splice(i, 1);
    if (q!.length === 0) this.queues.delete(k);
    this.total--;
    w!.state = 'claimed';
    return w;
  }

  /** Put a claimed waiter back at the head (its step failed). */
  unclaim(w: Waiter): void {
    if (w.state !== 'claimed') return;
    w.state = 'waiting';
    const k = key(w.family, w.route);
    let q = this.queues.get(k);
    if (!q) this.queues.set(k, (q = []));
    q.unshift(w);
    this.adjust(w.family, 1);
  }

  /** Remove a waiting waiter (deadline, disconnect, failed step). Returns false if it was not waiting. */
  remove(w: Waiter): boolean {
    if (w.state !== 'waiting') return false;
    const k = key(w.family, w.route);
    const q = this.queues.get(k);
    const i = q ? q.indexOf(w) : -1;
    if (i < 0) return false;
    q!.splice(i, 1);
    if (q!.length === 0) this.queues.delete(k);
    this.adjust(w.family, -1);
    w.state = 'done';
    return true;
  }

  /** Every waiting waiter of a session (when the session closes). */
  ofSession(sessionHash: string): Waiter[] {
    const out: Waiter[] = [];
    for (const q of this.queues.values()) for (const w of q) if (w.sessionHash === sessionHash) out.push(w);
    return out;
  }

  /** Every waiter, for shutdown. */
  all(): Waiter[] {
    return [...this.queues.values()].flat();
  }
}
