/**
 * A session's batched calls (CONTRACT §20, docs/design.md "Batched calls"):
 * renewing many of its leases in one step, and acquiring several routes all
 * or nothing. Each call is one atomic step; each item is judged and changed
 * by the single call's own functions (leases.ts), so it behaves exactly as
 * that call would. One request_id covers the batch: its idempotency record
 * is keyed by the session (a batch has no one route), under an operation of
 * its own.
 */

import { addMs, millis } from '../../store/millis';
import type { LeaseRow, SessionRow } from '../../store/types';
import { fail } from '../core/errors';
import { answerText, findReplay, recordAnswer, type IdemKey } from '../core/idempotency';
import { acquireRecordExpiry, createLease, grantNext, liveSession, settleRoute } from './leases';
import { provenLease, renewLease, routeBounds } from './holder-steps';
import { activeLockDelay } from './lock-delay';
import { grantedTerms } from '../policies/policies';
import { askedLeases, pendingReleaseRequests, type PendingReleaseRequest } from './release-requests';
import type { Step } from '../core/step';
import type { EngineContext } from './context';
import type { Reserved } from '../waiters/waiters';
import { heldLease, heldLeaseJson, sessionBatches, sessionView, type HeldLease, type Metadata, type SessionView } from '../core/views';

/** What a batch names: its session (by hash), its request and the digest of its body. */
export interface BatchInput<I> {
  sessionHash: string;
  requestId: string;
  digest: string;
  items: readonly I[];
}

/** One lease to renew: the §5 renew's fields. */
export interface RenewItem {
  route: string;
  leaseId: string;
  fencingToken: number;
  /** Absent: the lease's own TTL (clamped by the policy in force now). */
  ttlMs?: number;
}

/** One item's outcome: renewed with the lease, or lost (nothing changed for it). */
export type RenewOutcome = { route: string; code: 'lease_renewed'; lease: HeldLease } | { route: string; code: 'lease_lost' };

/** The answer to a batched renew: the session as the keepalive left it, the items' outcomes in their order. */
export interface SessionRenewed {
  session: SessionView;
  results: RenewOutcome[];
  release_requests: PendingReleaseRequest[];
}

/** One route to acquire: the §5 acquire's fields, without waiting. */
export interface AcquireItem {
  route: string;
  /** Absent: the route's policy default. */
  ttlMs?: number;
  maxLifetimeMs?: number;
  metadata: Metadata | null;
}

/** The answer to an all-or-nothing acquire: every lease, in the items' order. */
export interface LeasesAcquired {
  leases: HeldLease[];
}

function batchKey(family: string, op: 'session_renew' | 'session_acquire', input: BatchInput<unknown>): IdemKey {
  return { family, op, route: input.sessionHash, requestId: input.requestId };
}

/**
 * How many leases this step gave the session (grants) less the ones it
 * ended (an item's lease found expired, say): the session's count read
 * before the step plus this is its count after.
 */
function heldChange(step: Step, incarnation: string): number {
  let n = 0;
  for (const e of step.events) {
    if (e.type !== 'change') continue;
    if (e.change === 'acquired') {
      if (e.lease?.holder_incarnation === incarnation) n++;
    } else if (e.incarnation === incarnation) n--;
  }
  return n;
}

/**
 * A batched renewal's replay record, compact: each item's full lease view
 * (~450 bytes) would be written to the journal, the idempotency table and
 * PostgreSQL's wire for every renewed lease. What a view holds beyond the
 * request's own item (route, lease_id, fencing_token: the digest binds the
 * replaying request's items to these) and the session (owner, incarnation)
 * is kept per item: `0` for a lost item, else the renewed row's
 * [acquiredAt, expiresAt, maxExpiresAt, ttlMs, renewalCount, revision,
 * waiters, metadata, releaseRequest]; renewedAt is `now`. `expandRenewal`
 * rebuilds the very answer recorded (session-batch.test.ts holds the two to
 * the same text).
 */
interface CompactRenewal {
  v: 2;
  now: number;
  session: SessionView;
  r: Array<0 | [number, number, number, number, number, number, number, string | null, string | null]>;
}

/** The compact record of this answer, or undefined when a row does not follow from its item and session alone (then the answer is recorded whole). */
function compactRenewal(session: SessionView, now: number, items: readonly RenewItem[], renewed: ReadonlyArray<LeaseRow | undefined>, results: readonly RenewOutcome[]): CompactRenewal | undefined {
  const r: CompactRenewal['r'] = [];
  for (let i = 0; i < items.length; i++) {
    const row = renewed[i];
    const item = items[i]!;
    if (!row) {
      r.push(0);
      continue;
    }
    const waiters = (results[i] as { lease: HeldLease }).lease.waiters;
    if (row.route !== item.route || row.leaseId !== item.leaseId || row.fencingToken !== item.fencingToken || row.renewedAt !== now) return undefined;
    if (row.ownerId !== session.owner_id || row.incarnation !== session.holder_incarnation) return undefined;
    r.push([row.acquiredAt, row.expiresAt, row.maxExpiresAt, row.ttlMs, row.renewalCount, row.revision, waiters, row.metadata, row.releaseRequest ?? null]);
  }
  return { v: 2, now, session, r };
}

/** The answer a compact record was made from (`compactRenewal`), for the request whose digest it was recorded under. */
function expandRenewal(c: CompactRenewal, family: string, input: BatchInput<RenewItem>): Omit<SessionRenewed, 'release_requests'> {
  const now = millis(c.now);
  const results = input.items.map((item, i): RenewOutcome => {
    const x = c.r[i];
    if (!x) return { route: item.route, code: 'lease_lost' };
    const row: LeaseRow = {
      family, route: item.route, leaseId: item.leaseId, fencingToken: item.fencingToken, sessionHash: input.sessionHash,
      ownerId: c.session.owner_id, incarnation: c.session.holder_incarnation,
      acquiredAt: millis(x[0]), renewedAt: now, expiresAt: millis(x[1]), maxExpiresAt: millis(x[2]), ttlMs: x[3], renewalCount: x[4], revision: x[5],
      metadata: x[7], releaseRequest: x[8] ?? undefined,
    };
    return { route: item.route, code: 'lease_renewed', lease: heldLease(row, now, x[6]) };
  });
  return { session: c.session, results };
}

/**
 * Renew many leases of one session in one step, and keep the session alive.
 * Each item is exactly a single renew (the exact lease_id and token of an
 * active, unexpired lease of this session, the TTL clamped by its route's
 * policy in force now) with its own outcome: a lost item changes nothing of
 * its own and never fails another. A renewal publishes a renewal hint and
 * no change. `session_not_found` (nothing renewed) when the session is not
 * live. A replay answers the recorded outcomes (and the release requests
 * pending now, as a single renew's replay does) and changes nothing.
 */
export async function renewAllStep(ctx: EngineContext, step: Step, family: string, input: BatchInput<RenewItem>): Promise<{ answer: SessionRenewed; replayed: boolean }> {
  const key = batchKey(family, 'session_renew', input);
  const stored = await findReplay<Omit<SessionRenewed, 'release_requests'> | CompactRenewal>(step, key, input.digest);
  // Both read before the step writes anything (release-requests.ts, askedLeases, says why).
  const asked = await askedLeases(step, input.sessionHash);
  if (stored) {
    const replay = 'v' in stored ? expandRenewal(stored, family, input) : stored;
    return { answer: { ...replay, release_requests: await pendingReleaseRequests(step, input.sessionHash, asked) }, replayed: true };
  }
  const before = await step.tx.countSessionLeases(input.sessionHash);
  const s = await liveSession(ctx, step, family, input.sessionHash);
  if (!s) fail('session_not_found', 'session not found, closed or expired');
  Object.assign(step.facts, { ownerId: s.ownerId, incarnation: s.incarnation });
  const renewed: Array<LeaseRow | undefined> = [];
  const routes: string[] = [];
  for (const item of input.items) {
    // The common case read once: this live session's unexpired lease, as presented. Anything else is
    // judged by provenLease (which ends what is due), exactly as a single renew judges it.
    let l = await step.tx.getLease(family, item.route);
    if (!l || l.sessionHash !== s.idHash || l.leaseId !== item.leaseId || l.fencingToken !== item.fencingToken || l.expiresAt <= step.now) {
      l = await provenLease(ctx, step, family, item.route, { sessionHash: s.idHash, leaseId: item.leaseId, fencingToken: item.fencingToken }, s);
    }
    const row = l && (await renewLease(ctx, step, l, item.ttlMs));
    renewed.push(row);
    if (row) routes.push(row.route);
  }
  const waiting = await ctx.waiters.countOf(step, family, routes);
  const results = input.items.map((item, i): RenewOutcome => {
    const row = renewed[i];
    return row ? { route: item.route, code: 'lease_renewed', lease: heldLease(row, step.now, waiting.get(row.route) ?? 0) } : { route: item.route, code: 'lease_lost' };
  });
  // The keepalive, as POST /sessions/keepalive does it.
  const expiresAt = addMs(step.now, s.ttlMs);
  await step.tx.setSessionExpiry(s.idHash, expiresAt);
  // Remembered for the sessions list (its last_batch_renewal); a replay records nothing.
  const renew = { at: step.now, renewed: routes.length, lost: input.items.length - routes.length };
  await step.tx.setSessionBatches(s.idHash, JSON.stringify({ ...sessionBatches(s), renew }));
  const recorded = { session: sessionView({ ...s, expiresAt }, before + heldChange(step, s.incarnation)), results };
  await recordAnswer(step, key, input.digest, compactRenewal(recorded.session, step.now, input.items, renewed, results) ?? recorded, addMs(step.now, ctx.limits.idempotencyTtlMs));
  const answer: SessionRenewed = { ...recorded, release_requests: await pendingReleaseRequests(step, s.idHash, asked) };
  return { answer: answerText(answer, sessionRenewedJson(answer)), replayed: false };
}

/** `JSON.stringify(answer)`, each renewed lease written out by `heldLeaseJson` (session-batch.test.ts holds the two to the same text). */
export function sessionRenewedJson(answer: SessionRenewed): string {
  let results = '';
  for (const o of answer.results) {
    if (results.length > 0) results += ',';
    const route = JSON.stringify(o.route);
    results += o.code === 'lease_renewed' ? `{"route":${route},"code":"lease_renewed","lease":${heldLeaseJson(o.lease)}}` : `{"route":${route},"code":"lease_lost"}`;
  }
  return `{"session":${JSON.stringify(answer.session)},"results":[${results}],"release_requests":${JSON.stringify(answer.release_requests)}}`;
}

/** Why a route of an all-or-nothing acquire cannot be granted now, or undefined if it can. */
async function obstacle(ctx: EngineContext, step: Step, family: string, route: string, s: SessionRow): Promise<{ own: boolean; delayed: boolean; freeAt: number } | undefined> {
  let current = await settleRoute(ctx, step, family, route, s);
  let until: number | undefined;
  if (!current) {
    until = await activeLockDelay(step, family, route, (f, r) => grantNext(ctx, step, f, r));
    // A delay that just ended may have granted the route to its head waiter.
    if (until === undefined) current = await step.tx.getLease(family, route);
  }
  // A free route whose queue's head is a parked place is kept for it (docs/design.md "Queue tickets").
  let kept: Reserved | undefined;
  if (!current && until === undefined) {
    if ((await ctx.waiters.count(step, family, route)) === 0) return undefined;
    kept = await grantNext(ctx, step, family, route);
    if (!kept && !(current = await step.tx.getLease(family, route))) return undefined;
  }
  // Held or awaited by this very session: retrying cannot help (a single acquire's non-retryable conflict).
  const own = current?.sessionHash === s.idHash || (await ctx.waiters.hasSession(step, family, route, s.idHash));
  return { own, delayed: !current && !kept, freeAt: current ? current.expiresAt : (until ?? kept!.until) };
}

/**
 * Acquire every route for one session in one step, or none. Each route is
 * judged as a single acquire with `wait_ms` 0 judges it (held by another
 * lease, in lock-delay, held or awaited by this session); if any cannot be
 * granted the answer is `lease_conflict` naming them (`held`), with the
 * time until the last of them frees (`retry_after_ms`), and nothing is
 * acquired: the refusal keeps only the housekeeping the judging did (a due
 * expiry, a delay that ran out and its grant), as every refusal does. Else
 * each route gets its own lease, token and `acquired` change, in the items'
 * order, published together after the commit.
 */
export async function acquireAllStep(ctx: EngineContext, step: Step, family: string, input: BatchInput<AcquireItem>): Promise<{ answer: LeasesAcquired; replayed: boolean }> {
  const key = batchKey(family, 'session_acquire', input);
  const replay = await findReplay<LeasesAcquired>(step, key, input.digest);
  if (replay) return { answer: replay, replayed: true };
  const s = await liveSession(ctx, step, family, input.sessionHash);
  if (!s) fail('session_not_found', 'session not found, closed or expired');
  Object.assign(step.facts, { ownerId: s.ownerId, incarnation: s.incarnation });
  // Every route is judged before anything is acquired.
  const held: string[] = [];
  let own = false;
  let delayed = false;
  let freeAt = 0;
  for (const item of input.items) {
    const o = await obstacle(ctx, step, family, item.route, s);
    if (!o) continue;
    held.push(item.route);
    own ||= o.own;
    delayed ||= o.delayed;
    freeAt = Math.max(freeAt, o.freeAt);
  }
  if (held.length > 0) {
    if (own) fail('lease_conflict', 'this session already holds or waits for a route of the batch (leases are not re-entrant); nothing was acquired', { retryable: false, held });
    if (delayed) ctx.onDelayRefusal?.();
    fail('lease_conflict', `${held.length === 1 ? 'a route is' : `${held.length} routes are`} held or in lock-delay; nothing was acquired`, { retryAfterMs: Math.max(50, freeAt - step.now), held });
  }
  const waiting = await ctx.waiters.countOf(step, family, input.items.map((i) => i.route));
  const leases: HeldLease[] = [];
  let keepUntil = addMs(step.now, ctx.limits.idempotencyTtlMs);
  for (const item of input.items) {
    const terms = grantedTerms(await routeBounds(ctx, step, family, item.route), item.ttlMs, item.maxLifetimeMs);
    const params = { family, route: item.route, sessionHash: s.idHash, requestId: input.requestId, digest: input.digest, metadata: item.metadata, ...terms };
    const { row, held: lease } = await createLease(step, params, s, false, waiting.get(item.route) ?? 0);
    keepUntil = millis(Math.max(keepUntil, acquireRecordExpiry(ctx, step, row)));
    leases.push(lease);
  }
  const answer: LeasesAcquired = { leases };
  // Remembered for the sessions list (its last_batch_acquire); a refusal fails the step and records nothing.
  await step.tx.setSessionBatches(s.idHash, JSON.stringify({ ...sessionBatches(s), acquire: { at: step.now, acquired: leases.length } }));
  await recordAnswer(step, key, input.digest, answer, keepUntil);
  return { answer, replayed: false };
}
