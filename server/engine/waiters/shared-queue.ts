/**
 * The wait queues of several instances, rows in the shared store
 * (PostgreSQL; waiters.ts).
 */

import { addMs, millis } from '../../store/millis';
import type { SharedWaiters, Store, WaiterRow } from '../../store/types';
import type { Waiter, WaiterParams } from '../core/model';
import type { Step } from '../core/step';
import type { Metadata } from '../core/views';
import type { WaitQueue, Claim, Reserved, PlaceFound, SessionWaiters } from './waiters';
import { transitionWaiter } from './waiters';
import { Queues } from './local-waiters';

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
