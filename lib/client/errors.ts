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
  /** The routes that were held, for an all-or-nothing acquire refused with `lease_conflict`. */
  held?: readonly string[] | undefined;
  /** An acquire whose wait ended without a grant: the ticket that continues its kept place (5 s). */
  queueTicket?: string | undefined;
  correlationId?: string;
  cause?: unknown;
  /**
   * Whether the server gave this answer. Default: true for a code the server
   * can answer, false for a client code. Pass false for a server code the
   * client uses itself without asking (a route it refuses before sending, a
   * lease or session whose local deadline passed).
   */
  fromServer?: boolean;
}

const SERVER_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export class LeaseholdError extends Error {
  readonly code: LeaseholdErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  /** When the route leaves lock-delay (epoch ms), for a refusal by it. */
  readonly lockDelayUntil: number | undefined;
  /**
   * The routes that were held or in lock-delay, in the request's order, when
   * `session.acquireAll` was refused with `lease_conflict` (nothing was acquired).
   */
  readonly held: readonly string[] | undefined;
  /**
   * A `lease_conflict` of an acquire whose wait ended without a grant: its
   * place in the route's queue is kept 5 s more for an acquire of the same
   * session and route given this ticket (`AcquireOptions.queueTicket`).
   */
  readonly queueTicket: string | undefined;
  readonly correlationId: string | undefined;
  readonly #fromServer: boolean;

  constructor(init: LeaseholdErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'LeaseholdError';
    this.code = init.code;
    this.status = init.status ?? 0;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.lockDelayUntil = init.lockDelayUntil;
    this.held = init.held === undefined ? undefined : Object.freeze([...init.held]);
    this.queueTicket = init.queueTicket;
    this.correlationId = init.correlationId;
    this.#fromServer = init.fromServer ?? SERVER_CODES.has(init.code);
  }

  /**
   * True when the server answered with this error (a code of the error table
   * in docs/semantics.md "The wire"); false for what the client found itself,
   * with status 0: a client code, or a server code used for the same fault
   * found before any request (a malformed route: `invalid_request`) or by a
   * local deadline (`lease_lost`, `session_not_found`).
   */
  get fromServer(): boolean {
    return this.#fromServer;
  }
}

export function isLeaseholdError(e: unknown, code?: LeaseholdErrorCode): e is LeaseholdError {
  return e instanceof LeaseholdError && (code === undefined || e.code === code);
}

/** The error to throw when an object is used after `close()` (or a lease handle after its release). */
export function closedError(what: string, how = 'is closed'): LeaseholdError {
  return new LeaseholdError({ code: 'closed', message: `${what} ${how}` });
}
