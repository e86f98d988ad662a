/**
 * What the metrics collector and the health probes read of the engine
 * (`engine.stats`, `engine.health`): figures and the store's state, never
 * its parts (docs/design.md "Engine map", docs/operations.md "Metrics").
 */

import type { ChangeLogStats, Store } from '../store/types';
import type { AuditLog } from './audit/audit';
import type { EngineEvent, EventHub } from './core/events';
import type { FeedHub, FeedStats } from './feed/feed';
import type { Backlog, ExpirySweeper } from './leases/sweeper';
import type { Runner } from './runner';
import type { WaitQueue } from './waiters/waiters';

export class StatsService {
  /** Acquires refused by lock-delay since start. */
  delayRefusals = 0;

  constructor(
    private readonly r: Runner,
    private readonly events: EventHub,
    private readonly waitQueue: WaitQueue,
    private readonly hub: FeedHub,
    private readonly auditLog: AuditLog,
  ) {}

  /** Every engine event, in order, after its step committed; returns the unsubscribe. */
  subscribe(listener: (e: EngineEvent) => void): () => void {
    return this.events.subscribe(listener);
  }

  /** Acquire requests waiting on this instance (one family's, or all). */
  waiters(family?: string): number {
    return this.waitQueue.size(family);
  }

  /** This instance's streams, registrations and delivery counts. */
  feed(): FeedStats {
    return this.hub.stats();
  }

  /** One family's delivery counts. */
  familyFeed(family: string): { notifications: number; dropped: number } {
    return this.hub.familyStats(family);
  }

  /** Refusals counted, not audited, and audit events lost to a full buffer. */
  get audit(): Readonly<AuditLog['counts']> {
    return this.auditLog.counts;
  }

  /**
   * Publish a `census` event: every family's held leases and live sessions,
   * read in one step and published in order with every other step's events
   * (a step's events follow its commit, steps commit in order), so a
   * subscriber that starts from these counts and applies every later change
   * and session event has exact figures. Throws `backend_unavailable` if the
   * store cannot answer.
   */
  async census(): Promise<void> {
    await this.r.run(async (step) => {
      step.events.push({ type: 'census', families: await step.tx.familyCounts() });
    });
  }

  /** Every family's change-log size and horizon. Throws `backend_unavailable` if the store cannot answer. */
  changeLog(): Promise<ChangeLogStats[]> {
    return this.r.run((step) => step.tx.changes.stats());
  }

  /** Routes in lock-delay now, in every family. */
  async routesInDelay(): Promise<number> {
    return this.r.store.atomic((tx) => tx.policies.countLockDelays(tx.now));
  }
}

export class HealthService {
  constructor(
    private readonly store: Store,
    private readonly sweeper: ExpirySweeper,
    private readonly startedAt: number,
  ) {}

  /** The store's kind (`sqlite`, `postgres`). */
  get storeKind(): Store['kind'] {
    return this.store.kind;
  }

  /** The store's clock (backend time). */
  now(): number {
    return this.store.now();
  }

  /** The store's epoch (cursors and revisions are of one epoch). */
  epoch(): ReturnType<Store['epoch']> {
    return this.store.epoch();
  }

  /** Why the store refuses writes now (`no_space`, `io_error`), or undefined. */
  writeFault(): ReturnType<NonNullable<Store['writeFault']>> | undefined {
    return this.store.writeFault?.();
  }

  /** Is the store's schema the one this build expects? Throws if the store cannot answer. */
  schemaCurrent(): Promise<boolean> {
    return this.store.atomic((tx) => tx.schemaCurrent());
  }

  /** Is the store answering? Never throws. */
  async healthy(): Promise<boolean> {
    try {
      await this.store.atomic((tx) => tx.revision('default'));
      return true;
    } catch {
      return false;
    }
  }

  /** Families whose due work this instance's sweeper is more than 5 s behind (readiness says `degraded`, CONTRACT §19). */
  backlog(): Backlog[] {
    return this.sweeper.backlog(this.store.now());
  }

  uptimeMs(): number {
    return this.store.now() - this.startedAt;
  }
}
