/**
 * The wait queues of a single instance, in memory (SQLite; waiters.ts).
 */

import type { Waiter } from '../core/model';
import type { Step } from '../core/step';
import type { ParkedPlace, WaitQueue, Claim, Reserved, PlaceFound, SessionWaiters } from './waiters';
import { transitionWaiter } from './waiters';
import { Queues } from './local-waiters';

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
