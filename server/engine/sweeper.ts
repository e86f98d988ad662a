/**
 * The expiry sweeper: processes due lease and session expirations in
 * deadline order, one step per family (each locks its family first, so
 * instances sharing a store never deadlock and never process an expiry
 * twice: every removal is conditional on lease id and token), and prunes
 * idempotency records, logins, expired embed tokens and the change logs
 * beyond their retention (bounded deletes); ends due lock-delays
 * (granting the route's head waiter). Due work is found
 * through the stores' expiry indexes, so a sweep costs what is due, not
 * what is held.
 */

import { millis } from '../store/millis';
import { expireDue, grantNext } from './leases';
import { endDueLockDelays } from './lock-delay';
import type { Scheduler, TimerHandle } from './scheduler';
import type { EngineContext, Step } from './step';

/** Leases or sessions processed per family and step. */
export const SWEEP_BATCH = 512;
/** Logged changes pruned per sweep at most (a sweep that prunes this many is followed by another at once). */
export const CHANGE_PRUNE_BATCH = 4_096;
/** Families with due work taken per sweep. */
const FAMILIES_PER_SWEEP = 64;
/** Expired idempotency records and embed tokens deleted per sweep at most. */
const PRUNE_BATCH = 1_000;
/**
 * The timer's sweeps prune expired idempotency records, logins and embed
 * tokens on every this many ticks (once a second at the default 100 ms),
 * and on every tick while a prune is behind (it hit its bound): never
 * observable, since every read checks expiry, while each prune is a
 * statement, a round trip on PostgreSQL, per instance and tick. The change
 * logs are pruned on every tick (their size is a gauge).
 */
export const HOUSEKEEPING_TICKS = 10;

/** Runs one atomic step scoped to a family (or to none), as the engine does. */
export type StepRunner = <T>(fn: (step: Step) => Promise<T>, family?: string) => Promise<T>;

export class ExpirySweeper {
  private handle: TimerHandle | undefined;
  private sweeping = false;
  /** When the timer's sweeps prune next (store time), and how long after the last prune. */
  private housekeepingDue = -Infinity;
  private housekeepingMs = 0;

  constructor(
    private readonly ctx: EngineContext,
    private readonly run: StepRunner,
    private readonly scheduler: Scheduler,
  ) {}

  /** Process everything already due, then sweep every `intervalMs`. */
  async start(intervalMs: number): Promise<void> {
    this.housekeepingMs = intervalMs * HOUSEKEEPING_TICKS;
    while ((await this.sweep()) >= SWEEP_BATCH);
    this.handle = this.scheduler.every(intervalMs, () => void this.sweepAll());
  }

  stop(): void {
    this.handle?.cancel();
    this.handle = undefined;
  }

  private async sweepAll(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      while ((await this.sweep(false)) >= SWEEP_BATCH);
    } catch {
      // The store is unavailable; the next tick tries again.
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * One sweep: returns the largest number due in one family (SWEEP_BATCH or
   * more: call again). It prunes the change logs, and expired records
   * always unless `prune` is false (the timer's sweeps), then only when due
   * (HOUSEKEEPING_TICKS).
   */
  async sweep(prune = true): Promise<number> {
    const { families, pruned, behind, pruning, at } = await this.run(async (step) => {
      let behind = false;
      const pruning = prune || step.now >= this.housekeepingDue;
      if (pruning) {
        const idempotency = await step.tx.pruneIdempotency(step.now, PRUNE_BATCH);
        await step.tx.pruneLogins(step.now);
        const embeds = await step.tx.pruneEmbedTokens(step.now, PRUNE_BATCH);
        behind = idempotency >= PRUNE_BATCH || embeds >= PRUNE_BATCH;
      }
      const l = this.ctx.limits;
      const olderThan = l.changeLogMs === 0 ? Number.MAX_SAFE_INTEGER : step.now - l.changeLogMs;
      const pruned = await step.tx.changes.prune(l.changeLogChanges, millis(olderThan), CHANGE_PRUNE_BATCH);
      const due = await step.tx.dueFamilies(step.now, FAMILIES_PER_SWEEP);
      return { families: [...new Set([...due, ...(await step.tx.policies.dueDelayFamilies(step.now, FAMILIES_PER_SWEEP))])], pruned, behind, pruning, at: step.now as number };
    });
    if (pruning) this.housekeepingDue = behind ? at : at + this.housekeepingMs;
    let most = pruned >= CHANGE_PRUNE_BATCH ? SWEEP_BATCH : 0;
    for (const family of families) {
      const n = await this.run(
        async (step) =>
          (await expireDue(this.ctx, step, SWEEP_BATCH, family)) +
          (await endDueLockDelays(step, family, SWEEP_BATCH, (f, r) => grantNext(this.ctx, step, f, r))),
        family,
      );
      most = Math.max(most, n);
    }
    return families.length >= FAMILIES_PER_SWEEP ? Math.max(most, SWEEP_BATCH) : most;
  }
}
