/**
 * The numeric limits of a request, one row each, as docs/semantics.md
 * "Limits" lists them. Every range check and every default in the server
 * (the request schemas, the engine's bounds, the policy checks) reads them
 * from here, so a default can never act as a cap by accident:
 * `default` is what an absent field gets, `min`..`max` what a present one
 * may be (outside: `invalid_request`, never clamped).
 */

export interface LimitRow {
  readonly min: number;
  readonly max: number;
  readonly default: number;
}

export const LIMITS = {
  /** A lease's ttl_ms (a policy may narrow the range and move the default inside it). */
  leaseTtlMs: { min: 1_000, max: 600_000, default: 30_000 },
  /** A session's ttl_ms. */
  sessionTtlMs: { min: 2_000, max: 300_000, default: 15_000 },
  /** A lease's max_lifetime_ms; a policy's value is both its default and its cap. */
  maxLifetimeMs: { min: 1_000, max: 86_400_000, default: 3_600_000 },
  /** How long an acquire may wait in the queue. */
  waitMs: { min: 0, max: 30_000, default: 0 },
  /** Waiters queued on one route (a policy may lower it). */
  waitersPerRoute: { min: 0, max: 1_024, default: 1_024 },
  /** A policy's lock-delay, and an operator's cap on it. */
  lockDelayMs: { min: 0, max: 60_000, default: 0 },
  /** An embed token's lifetime. */
  embedTokenTtlMs: { min: 60_000, max: 86_400_000, default: 86_400_000 },
  /** Items on one page of a list (leases, lock-delays, sessions, the audit trail). */
  pageItems: { min: 1, max: 1_000, default: 100 },
  /** The metrics summary's window in seconds (the history's length is the most). */
  metricsWindowS: { min: 1, max: 900, default: 900 },
} as const satisfies Record<string, LimitRow>;

/** True when `v` is an integer inside the row's range. */
export function inRange(row: LimitRow, v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= row.min && v <= row.max;
}

/** The most a checkpoint's value may take as UTF-8 JSON (docs/semantics.md §13). */
export const CHECKPOINT_VALUE_BYTES = 64 * 1024;

/** A session’s batched calls (docs/semantics.md §13): the most items one request may carry. */
export const SESSION_BATCH = {
  /** Leases one `POST /api/v1/sessions/renew` renews. */
  renewItems: 1_000,
  /** Routes one `POST /api/v1/sessions/acquire` acquires, all or none. */
  acquireItems: 16,
} as const;
