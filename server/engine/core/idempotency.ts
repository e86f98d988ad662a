/**
 * Idempotency by request_id (docs/semantics.md §6). The key is (family, operation,
 * route, request_id); the record holds the digest and the original answer and
 * is written in the same atomic step as the mutation. Only successes are
 * recorded. The lookup runs before every semantic check, so a replay answers
 * even after the lease, its session or the server are gone.
 */

import type { Millis } from '../../store/millis';
import { fail } from './errors';
import type { Step } from './step';

export interface IdemKey {
  family: string;
  op: 'acquire' | 'renew' | 'release' | 'checkpoint' | 'force_release' | 'revoke' | 'release_request' | 'session_renew' | 'session_acquire';
  /** The route; for a session's batched call (session-batch.ts), which has none, the session's hash. */
  route: string;
  requestId: string;
}

/**
 * The recorded answer for this key (marking the step a replay), or
 * undefined. Throws `idempotency_conflict` if the inputs differ.
 */
export async function findReplay<T>(step: Step, key: IdemKey, digest: string): Promise<T | undefined> {
  const row = await step.tx.getIdempotency(key.family, key.op, key.route, key.requestId);
  if (!row || row.expiresAt <= step.now) return undefined;
  if (row.digest !== digest) {
    fail('idempotency_conflict', 'request_id was already used with different inputs', { retryable: false });
  }
  step.facts.replayed = true;
  return JSON.parse(row.answer) as T;
}

/**
 * The JSON text each answer object was recorded as (`recordAnswer`), so the
 * caller that sends the answer need not serialize it a second time. Weak:
 * an answer is forgotten with its object. Only the object given to
 * `recordAnswer` has one; a copy (`{ ...answer, more }`) has none. Recorded
 * answers are never changed after they are recorded (they are what a replay
 * answers).
 */
const recordedTexts = new WeakMap<object, string>();

/** The JSON text `answer` was recorded as (exactly `JSON.stringify(answer)`), if this object was recorded or given its text (`answerText`). */
export function recordedText(answer: object): string | undefined {
  return recordedTexts.get(answer);
}

/**
 * Remember `text` as the JSON text of `answer`, built by the engine beside
 * it (it must be exactly `JSON.stringify(answer)`, and the answer is never
 * changed after): the envelope sends it instead of serializing the answer
 * again (a batched renewal's answer: docs/benchmarks.md "Wave 3, fifteenth
 * session").
 */
export function answerText<T extends object>(answer: T, text: string): T {
  recordedTexts.set(answer, text);
  return answer;
}

/** Record a success answer for this key, kept until `expiresAt`. */
export async function recordAnswer(step: Step, key: IdemKey, digest: string, answer: object, expiresAt: Millis): Promise<void> {
  const text = JSON.stringify(answer);
  recordedTexts.set(answer, text);
  await step.tx.putIdempotency({
    family: key.family,
    op: key.op,
    route: key.route,
    requestId: key.requestId,
    digest,
    status: 0,
    answer: text,
    expiresAt,
  });
}

export async function forgetAnswer(step: Step, key: IdemKey): Promise<void> {
  await step.tx.deleteIdempotency(key.family, key.op, key.route, key.requestId);
}
