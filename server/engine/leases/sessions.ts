/**
 * Sessions (docs/semantics.md §4): open, keep alive, close, list. A session's secret
 * id is shown once, in the answer to opening it, and stored only as a hash;
 * observers see its random holder incarnation instead.
 */

import { addMs } from '../../store/millis';
import { fail } from '../core/errors';
import { hashSecret, pooledRandom, randomId } from '../core/ids';
import { drainSession, expireDue, liveSession } from './leases';
import type { Step } from '../core/step';
import type { EngineContext } from './context';
import { listedSession, sessionView, type ListedSession, type SessionView } from '../core/views';

export interface SessionPage {
  items: ListedSession[];
  next_cursor: string | null;
}

/** Mint a session secret: 192 random bits. */
export function newSessionId(): string {
  return `ss_${pooledRandom(24).toString('base64url')}`;
}

export async function openSessionStep(step: Step, family: string, ownerId: string, ttlMs: number, sessionId: string): Promise<{ session: SessionView & { session_id: string } }> {
  const row = {
    family,
    idHash: hashSecret(sessionId),
    incarnation: randomId('hi_', 12),
    ownerId,
    ttlMs,
    createdAt: step.now,
    expiresAt: addMs(step.now, ttlMs),
  };
  await step.tx.insertSession(row);
  Object.assign(step.facts, { ownerId, incarnation: row.incarnation });
  step.events.push({ type: 'session_opened', family, incarnation: row.incarnation, ownerId });
  return { session: { ...sessionView(row, 0), session_id: sessionId } };
}

/** Reset a live session's expiry to now + its TTL, or `session_not_found`. */
export async function keepAliveStep(ctx: EngineContext, step: Step, family: string, sessionHash: string): Promise<{ session: SessionView }> {
  const s = await liveSession(ctx, step, family, sessionHash);
  if (!s) fail('session_not_found', 'session not found, closed or expired');
  // Counted before this step writes anything (release-requests.ts, askedLeases, says why).
  const count = await step.tx.countSessionLeases(s.idHash);
  const expiresAt = addMs(step.now, s.ttlMs);
  await step.tx.setSessionExpiry(s.idHash, expiresAt);
  return { session: sessionView({ ...s, expiresAt }, count) };
}

/** Close a live session, releasing its leases and dropping its waits, or `session_not_found`. */
export async function closeSessionStep(ctx: EngineContext, step: Step, family: string, sessionId: string): Promise<{ released: number }> {
  const s = await liveSession(ctx, step, family, hashSecret(sessionId));
  if (!s) fail('session_not_found', 'session not found, closed or expired');
  Object.assign(step.facts, { ownerId: s.ownerId, incarnation: s.incarnation });
  const { released, done } = await drainSession(ctx, step, s, 'session_closed');
  // Its leases beyond this step's bound end in the next steps (CONTRACT §19): they are released too.
  return { released: done ? released : released + (await step.tx.countSessionLeases(s.idHash)) };
}

/** One page of live sessions by (created_at, incarnation), after the keyset position `after`. */
export async function listSessionsStep(
  ctx: EngineContext,
  step: Step,
  family: string,
  q: { ownerId?: string; limit: number },
  after: [number, string] | null,
  encode: (position: [number, string]) => string,
): Promise<SessionPage> {
  await expireDue(ctx, step, 512, family);
  const rows = await step.tx.listSessions(family, q.ownerId, after, q.limit + 1);
  const page = rows.slice(0, q.limit);
  const items: ListedSession[] = [];
  for (const r of page) items.push(listedSession(r, await step.tx.countSessionLeases(r.idHash)));
  const last = page[page.length - 1];
  return { items, next_cursor: rows.length > q.limit && last ? encode([last.createdAt, last.incarnation]) : null };
}
