/**
 * The expiry sweeper: processes due lease and session expirations in
 * deadline order, one step per family (each locks its family first, so
 * instances sharing a store never deadlock and never process an expiry
 * twice: every removal is conditional on lease id and token), and prunes
 * idempotency records, logins, expired embed tokens and the change logs
 * beyond their retention (bounded deletes); ends due lock-delays
 * (granting the route's head waiter) and drops parked queue places whose
 * time ran out (serving the routes they kept). Due work is found
 * through the stores' expiry indexes, so a sweep costs what is due, not
 * what is held.
 */

import { millis } from '../../store/millis';
import { endDueParked, expireDue, grantNext } from './leases';
import { endDueLockDelays } from './lock-delay';
import type { Scheduler, TimerHandle } from '../core/scheduler';
import { StoreUnavailableError } from '../../store/types';
import type { Step } from '../core/step';
import type { EngineContext } from './context';

/** Leases or sessions processed per family and step. */
export const SWEEP_BATCH = 512;
/** Logged changes pruned per sweep at most (a sweep that prunes this many is followed by another at once). */
export const CHANGE_PRUNE_BATCH = 4_096;
/** A family this far behind its due work makes readiness say `degraded` (CONTRACT §19). */
export const BEHIND_MS = 5_000;
/** A backlog is counted up to this many leases. */
const BACKLOG_COUNT_CAP = 1_000_000;
/** Families with due work taken per sweep. */
const FAMILIES_PER_SWEEP = 64;
/** Leases whose sweep horizon is moved on per sweep at most (a store with one, `Tx.rearmLeases`; a sweep that moves this many is followed by another at once). */
export const REARM_BATCH = 512;
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

/** A family whose due work outran one step: since when, and how much was left at the last step. */
export interface Backlog {
  family: string;
  /** Leases still to end (due, or held by an ending session), counted up to 1,000,000. */
  due: number;
  /** How long the family's oldest due work has waited. */
  behind_ms: number;
}

export class ExpirySweeper {
  private handle: TimerHandle | undefined;
  private sweeping = false;
  /** Woken while sweeping: sweep again once this sweep ends. */
  private again = false;
  /**
   * Leases one sweep step may end: the limit, halved after a step that
   * failed (it may have hit the store's time limit), doubled back after
   * each one that commits, so a step too large for the store is retried
   * smaller, never forever at the same size (CONTRACT §19).
   */
  private size: number;
  private readonly behind = new Map<string, { since: number; due: number }>();
  /** When the timer's sweeps prune next (store time), and how long after the last prune. */
  private housekeepingDue = -Infinity;
  private housekeepingMs = 0;

  constructor(
    private readonly ctx: EngineContext,
    private readonly run: StepRunner,
    private readonly scheduler: Scheduler,
  ) {
    this.size = ctx.limits.stepMaxLeases;
  }

  /**
   * Sweep every `intervalMs`, starting now. Never waits for a backlog: the
   * instance serves while the sweeps work through what became due while it
   * was down (CONTRACT §19), a bounded step at a time.
   */
  async start(intervalMs: number): Promise<void> {
    this.housekeepingMs = intervalMs * HOUSEKEEPING_TICKS;
    this.handle = this.scheduler.every(intervalMs, () => void this.sweepAll());
    void this.sweepAll();
  }

  /** Sweep now (a step left a session's leases for later steps), not at the next tick. */
  wake(): void {
    if (this.handle !== undefined) void this.sweepAll();
  }

  /** Families more than BEHIND_MS behind their due work, as of their last sweep step. */
  backlog(now: number): Backlog[] {
    const out: Backlog[] = [];
    for (const [family, b] of this.behind) if (now - b.since > BEHIND_MS) out.push({ family, due: b.due, behind_ms: now - b.since });
    return out;
  }

  stop(): void {
    this.handle?.cancel();
    this.handle = undefined;
  }

  private async sweepAll(): Promise<void> {
    // A tick (or a wake) during a sweep is not lost: the sweep runs again once it ends.
    if (this.sweeping) {
      this.again = true;
      return;
    }
    this.sweeping = true;
    try {
      do {
        this.again = false;
        while ((await this.sweep(false)) >= SWEEP_BATCH);
      } while (this.again && this.handle !== undefined);
    } catch (e) {
      // The store is unavailable, or the step ran past its time limit: the
      // next tick tries again, with smaller steps.
      if (e instanceof StoreUnavailableError) this.size = Math.max(1, Math.floor(this.size / 2));
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
    const { families, pruned, rearmed, behind, pruning, at } = await this.run(async (step) => {
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
      // First, so that the due reads below step over few renewed leases.
      const rearmed = (await step.tx.rearmLeases?.(step.now, REARM_BATCH)) ?? 0;
      const due = await step.tx.dueFamilies(step.now, FAMILIES_PER_SWEEP);
      const delayed = await step.tx.policies.dueDelayFamilies(step.now, FAMILIES_PER_SWEEP);
      const parked = await this.ctx.waiters.dueParkedFamilies(step, FAMILIES_PER_SWEEP);
      return { families: [...new Set([...due, ...delayed, ...parked])], pruned, rearmed, behind, pruning, at: step.now as number };
    });
    if (pruning) this.housekeepingDue = behind ? at : at + this.housekeepingMs;
    let most = pruned >= CHANGE_PRUNE_BATCH || rearmed >= REARM_BATCH ? SWEEP_BATCH : 0;
    // A family with nothing due any more is not behind.
    if (families.length < FAMILIES_PER_SWEEP) for (const f of this.behind.keys()) if (!families.includes(f)) this.behind.delete(f);
    for (const family of families) {
      const { n, oldest, due } = await this.run(async (step) => {
        step.maxLeases = this.size;
        const n =
          (await expireDue(this.ctx, step, SWEEP_BATCH, family)) +
          (await endDueLockDelays(step, family, SWEEP_BATCH, (f, r) => grantNext(this.ctx, step, f, r))) +
          (await endDueParked(this.ctx, step, family, SWEEP_BATCH));
        if (n < SWEEP_BATCH) return { n, oldest: undefined, due: 0 };
        // Still behind after a full step: since when (the oldest work still
        // due), and how much is left, for readiness. Only then: a caught-up
        // sweep pays no extra round trip.
        const oldest = (await step.tx.dueLeases(step.now, 1, family))[0]?.expiresAt ?? (await step.tx.dueSessions(step.now, 1, family))[0]?.expiresAt;
        return { n, oldest, due: await step.tx.countBacklog(family, step.now, BACKLOG_COUNT_CAP) };
      }, family);
      this.size = Math.min(this.ctx.limits.stepMaxLeases, this.size * 2);
      if (n >= SWEEP_BATCH) this.behind.set(family, { since: oldest ?? at, due });
      else this.behind.delete(family);
      most = Math.max(most, n);
    }
    return families.length >= FAMILIES_PER_SWEEP ? Math.max(most, SWEEP_BATCH) : most;
  }
}
