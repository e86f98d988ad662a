/** Envelopes, status mapping and correlation ids (docs/semantics.md "The wire"). */

import type { z } from 'zod';
import type { ErrorCode } from '../engine/errors';
import type { ErrorBody as ErrorBodySchema } from './answers';

/** Exhaustive: a new error code without a status fails to compile. */
export const STATUS_OF: Record<ErrorCode, number> = {
  invalid_request: 400,
  invalid_selector: 400,
  cursor_invalid: 400,
  invalid_credential: 401,
  access_denied: 403,
  lease_not_found: 404,
  checkpoint_not_found: 404,
  session_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  lease_conflict: 409,
  lease_lost: 409,
  lease_mismatch: 409,
  idempotency_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  backend_unavailable: 503,
  outcome_unknown: 503,
  internal_error: 500,
};

/** The error envelope, typed by the schema the OpenAPI document shows. */
export type ErrorBody = z.output<typeof ErrorBodySchema>;

export function errorBody(code: ErrorCode, message: string, cid: string, retryable: boolean, retryAfterMs?: number, lockDelayUntil?: number): ErrorBody {
  const body: ErrorBody = { status: 'error', code, message, correlation_id: cid, retryable };
  if (retryAfterMs !== undefined) body.retry_after_ms = Math.max(0, Math.round(retryAfterMs));
  if (lockDelayUntil !== undefined) body.lock_delay_until = new Date(lockDelayUntil).toISOString();
  return body;
}

export function successBody(code: string, cid: string, payload: object): Record<string, unknown> {
  return { status: 'success', code, correlation_id: cid, ...payload };
}
