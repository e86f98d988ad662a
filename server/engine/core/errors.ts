/**
 * The domain's one error class. Codes are the contract's (the error table in docs/semantics.md "The wire"); the
 * HTTP layer maps each to a status with an exhaustive record, so a new code
 * without a status fails to compile.
 */

import { ERROR_CODES, type ErrorCode } from '@/lib/error-codes';
import { StoreUnavailableError } from '../../store/types';

export { ERROR_CODES, type ErrorCode };

export interface LeaseholdErrorOptions {
  retryable?: boolean;
  retryAfterMs?: number;
  /** A refusal by lock-delay: when the route accepts a holder again (epoch ms). */
  lockDelayUntil?: number;
  /** An all-or-nothing acquire refused: the routes that were held (or in lock-delay), in the request's order. */
  held?: readonly string[];
  /** An acquire whose wait ended without a grant: the ticket that continues its kept place (queue-tickets.ts). */
  queueTicket?: string;
}

const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'lease_conflict',
  'rate_limited',
  'backend_unavailable',
  'outcome_unknown',
]);

export class LeaseholdError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly lockDelayUntil: number | undefined;
  readonly held: readonly string[] | undefined;
  readonly queueTicket: string | undefined;

  constructor(code: ErrorCode, message: string, opts: LeaseholdErrorOptions = {}) {
    super(message);
    this.name = 'LeaseholdError';
    this.code = code;
    this.retryable = opts.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.retryAfterMs = opts.retryAfterMs;
    this.lockDelayUntil = opts.lockDelayUntil;
    this.held = opts.held;
    this.queueTicket = opts.queueTicket;
  }
}

/**
 * The domain error for a store fault: `outcome_unknown` when the step may have
 * committed, else `backend_unavailable`. Other errors pass through unchanged.
 */
export function fromStoreError(e: unknown): unknown {
  if (e instanceof StoreUnavailableError) {
    return new LeaseholdError(e.maybeCommitted ? 'outcome_unknown' : 'backend_unavailable', 'the store cannot answer safely');
  }
  return e;
}

/** Shorthand for throwing a domain error. */
export function fail(code: ErrorCode, message: string, opts?: LeaseholdErrorOptions): never {
  throw new LeaseholdError(code, message, opts);
}
