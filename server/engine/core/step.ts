/**
 * One atomic step's working context (the engine-wide context the aggregates
 * share is leases/context.ts).
 *
 * In-memory effects of a step (waiters queued or claimed) are recorded here so
 * that the engine can undo them if the step fails to commit, and deliver them
 * only after it commits.
 */

import { LIMITS } from '@/lib/limits';
import type { Millis } from '../../store/millis';
import type { LeaseRow, Tx } from '../../store/types';
import type { EngineEvent } from './events';
import type { LeaseholdError } from './errors';
import type { AcquireResult, AuditFacts, Waiter } from './model';

export interface Limits {
  /** Default routes examined per LIST page. */
  listBudget: number;
  /** Idempotency records live at least this long. */
  idempotencyTtlMs: number;
  /** Server maximum for max_lifetime_ms. */
  maxLifetimeMs: number;
  waitersPerRoute: number;
  /** Each family's change log keeps at least its newest this many changes... */
  changeLogChanges: number;
  /** ...or those of the last this many ms, whichever holds more (0: by count alone). */
  changeLogMs: number;
  /** Leases one atomic step may end (CONTRACT §19): a larger session end or sweep takes several steps. */
  stepMaxLeases: number;
  /** The longest one acquire waits (at most wait_ms's 30 s): a longer wait_ms ends here, with a queue ticket. */
  maxWaitMs: number;
  /** How long a place is kept after its wait ended without a grant (CONTRACT §20: 5 s). */
  parkMs: number;
  /**
   * New acquisitions are turned away (`rate_limited`) while the family's
   * oldest step not yet answered is older than this (ms; 0: never):
   * docs/design.md "Admission".
   */
  admitQueueMs: number;
}

export const DEFAULT_LIMITS: Limits = {
  listBudget: 10_000,
  idempotencyTtlMs: 3_600_000,
  maxLifetimeMs: LIMITS.maxLifetimeMs.max,
  waitersPerRoute: LIMITS.waitersPerRoute.max,
  changeLogChanges: 100_000,
  changeLogMs: 600_000,
  stepMaxLeases: 1_000,
  maxWaitMs: LIMITS.waitMs.max,
  parkMs: 5_000,
  admitQueueMs: 1_000,
};

export interface QueuedGrant {
  waiter: Waiter;
  lease: LeaseRow;
  answer: AcquireResult;
}

/** A message for the instance holding a waiter (shared store): sent with the step's commit. */
export type WaiterNotice =
  | { kind: 'grant'; to: string; family: string; route: string; requestId: string; answer: AcquireResult; lease: LeaseRow }
  | { kind: 'refuse'; to: string; family: string; route: string; requestId: string };

export interface Step {
  readonly tx: Tx;
  readonly now: Millis;
  /** Published after commit, in order. */
  readonly events: EngineEvent[];
  /** Waiters granted in this step: answered after commit (or rolled back if their client left). */
  readonly grants: QueuedGrant[];
  /** Waiters removed in this step without a grant: refused after commit. */
  readonly refused: Array<{ waiter: Waiter; error: LeaseholdError }>;
  /** Waiters queued by this step: removed again if it fails. */
  readonly enqueued: Waiter[];
  /** Grants and refusals of other instances' waiters, delivered with the commit. */
  readonly notices: WaiterNotice[];
  /** What the step learned about its subject, for its audit event. */
  readonly facts: AuditFacts;
  /** An operator's cap on the lock-delay of the leases this step ends (lock-delay.ts). */
  delayCapMs?: number;
  /** Leases this step ended so far; it ends at most `maxLeases` (default: the limit `stepMaxLeases`). */
  endedLeases: number;
  maxLeases?: number;
  /** Set when the step left a session's leases for later steps: the sweeper is woken after the commit. */
  backlog?: boolean;
}


export function newStep(tx: Tx): Step {
  return { tx, now: tx.now, events: [], grants: [], refused: [], enqueued: [], notices: [], facts: {}, endedLeases: 0 };
}
