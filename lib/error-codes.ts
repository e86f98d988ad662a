/**
 * The contract's error codes (the error table in docs/semantics.md "The wire"), shared by the engine, the HTTP
 * layer and the SDK so that the server and its clients can never disagree on
 * the vocabulary. `internal_error` is the server's answer to its own faults.
 */
export const ERROR_CODES = [
  'invalid_request',
  'invalid_selector',
  'cursor_invalid',
  'invalid_credential',
  'access_denied',
  'lease_not_found',
  'checkpoint_not_found',
  'session_not_found',
  'not_found',
  'method_not_allowed',
  'lease_conflict',
  'lease_lost',
  'lease_mismatch',
  'idempotency_conflict',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'backend_unavailable',
  'outcome_unknown',
  'internal_error',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
