/** Envelopes, status mapping and correlation ids (docs/semantics.md "The wire"). */

import type { z } from 'zod';
import type { ErrorCode } from '../engine/core/errors';
import type { ErrorBody as ErrorBodySchema } from './answers';
import { recordedText } from '../engine';

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

export function errorBody(code: ErrorCode, message: string, cid: string, retryable: boolean, retryAfterMs?: number, lockDelayUntil?: number, held?: readonly string[], queueTicket?: string): ErrorBody {
  const body: ErrorBody = { status: 'error', code, message, correlation_id: cid, retryable };
  if (retryAfterMs !== undefined) body.retry_after_ms = Math.max(0, Math.round(retryAfterMs));
  if (lockDelayUntil !== undefined) body.lock_delay_until = new Date(lockDelayUntil).toISOString();
  if (held !== undefined) body.held = [...held];
  if (queueTicket !== undefined) body.queue_ticket = queueTicket;
  return body;
}

export function successBody(code: string, cid: string, payload: object): Record<string, unknown> {
  return { status: 'success', code, correlation_id: cid, ...payload };
}

/** `{"status":"success","code":…,"correlation_id":` for each success code, made once. */
const successHeads = new Map<string, string>();

/**
 * `JSON.stringify(successBody(code, cid, payload))` for a plain payload
 * object, without the merged object: the envelope's three fields, then the
 * payload's own members (from the text an idempotent answer was recorded
 * as, when it is one: serialized once per request, not twice). A payload
 * whose text would not simply follow the envelope's fields (a key of the
 * envelope's own, an integer-like key, which objects list first, or a
 * `toJSON`; no answer has one) takes the merged object.
 * server/http/envelope.test.ts holds both to the same bytes.
 */
export function successJson(code: string, cid: string, payload: object): string {
  if (Object.hasOwn(payload, 'status') || Object.hasOwn(payload, 'code') || Object.hasOwn(payload, 'correlation_id') || Object.hasOwn(payload, 'toJSON')) {
    return JSON.stringify(successBody(code, cid, payload));
  }
  const text = recordedText(payload) ?? JSON.stringify(payload);
  // `{}` adds nothing; any other object's text is `{"key":…}`, its first key integer-like if it has any.
  if (text.length === 2) return `{"status":"success","code":${JSON.stringify(code)},"correlation_id":${JSON.stringify(cid)}}`;
  const c = text.charCodeAt(2);
  if (c >= 0x30 && c <= 0x39) return JSON.stringify(successBody(code, cid, payload));
  let head = successHeads.get(code);
  if (head === undefined) successHeads.set(code, (head = `{"status":"success","code":${JSON.stringify(code)},"correlation_id":`));
  return `${head}${JSON.stringify(cid)},${text.slice(1)}`;
}
