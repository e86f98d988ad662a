/**
 * The SDK's one error class. Server refusals keep the contract's code, status,
 * retryability and correlation id; faults the client observes itself carry a
 * client code with status 0.
 */

import { ERROR_CODES, type ErrorCode } from '../error-codes';

/**
 * Client-side codes: `network_error` (no answer arrived: the call may or may
 * not have taken effect, and the SDK's retries reuse its request_id),
 * `timeout` (no answer within the call's deadline, same meaning),
 * `invalid_response` (an answer that is not the API's), `stream_closed` (the
 * live stream ended while a call on it was pending), `too_many_items` (an
 * observer reached its `maxItems`), `closed` (the object was closed or
 * disposed), `session_lost` (a lease handle whose session was lost),
 * `invalid_config` (the client's options are wrong: thrown by the
 * constructor at once, never retried, since no retry can fix them).
 */
export const CLIENT_ERROR_CODES = [
  'invalid_config',
  'network_error',
  'timeout',
  'invalid_response',
  'stream_closed',
  'too_many_items',
  'closed',
  'session_lost',
] as const;

export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];
export type LeaseholdErrorCode = ErrorCode | ClientErrorCode;

export interface LeaseholdErrorInit {
  code: LeaseholdErrorCode;
  message: string;
  /** HTTP status; 0 when no answer came from the server. */
  status?: number;
  retryable?: boolean;
  retryAfterMs?: number;
  /** The route is in lock-delay until then (epoch ms): an acquire refused by it, or inspect of a free route in it. */
  lockDelayUntil?: number;
  correlationId?: string;
  cause?: unknown;
}

const SERVER_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export class LeaseholdError extends Error {
  readonly code: LeaseholdErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  /** When the route leaves lock-delay (epoch ms), for a refusal by it. */
  readonly lockDelayUntil: number | undefined;
  readonly correlationId: string | undefined;

  constructor(init: LeaseholdErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'LeaseholdError';
    this.code = init.code;
    this.status = init.status ?? 0;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.lockDelayUntil = init.lockDelayUntil;
    this.correlationId = init.correlationId;
  }

  /** True for a code the server can answer (the error table in docs/semantics.md "The wire"), false for a client-side one. */
  get fromServer(): boolean {
    return SERVER_CODES.has(this.code);
  }
}

export function isLeaseholdError(e: unknown, code?: LeaseholdErrorCode): e is LeaseholdError {
  return e instanceof LeaseholdError && (code === undefined || e.code === code);
}

/** The error to throw when an object is used after `close()`. */
export function closedError(what: string): LeaseholdError {
  return new LeaseholdError({ code: 'closed', message: `${what} is closed` });
}
