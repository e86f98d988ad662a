/**
 * The steps of a holder's calls (docs/semantics.md §2, §5): acquire (grant,
 * refuse or queue), renew, release and the fenced checkpoint write, each
 * over one atomic step, through the transitions of leases.ts.
 */

import { addMs } from '../../store/millis';
import type { LeaseRow, SessionRow } from '../../store/types';
import { fail } from '../core/errors';
import { findReplay, recordAnswer, type IdemKey } from '../core/idempotency';
import { randomId } from '../core/ids';
import type { Step } from '../core/step';
import { type EngineContext } from './context';
import { heldLease } from '../core/views';
import type { AcquireResult } from '../core/model';
import { leaseTransition } from './lease-transitions';
import type { Reserved, Waiter, WaiterParams } from '../waiters/waiters';
import { activeLockDelay } from './lock-delay';
import { boundsOf, grantedTerms, type Bounds } from '../policies/policies';
import { acquireKey, acquireRecordExpiry, createLease, endLease, grantNext, liveSession, settleRoute, waiterCount, type CheckpointWritten, type HolderProof, type ReleaseResult, type RenewResult } from './leases';

export type AcquireStepResult =
  | { kind: 'done'; answer: AcquireResult; replayed: boolean }
  | { kind: 'wait'; waiter: Waiter; done: Promise<AcquireResult> };

/**
 * The acquire step: replay, session check, then grant if free, refuse, or
 * queue the request (the waiter is queued in this same step, so a release
 * later in the same batch already sees it).
 *
 * `place` (from a queue ticket the engine checked): continue that place if
 * it is still kept (docs/design.md "Queue tickets"): granted at once if it
 * is at the head of a free route, else waiting again from it (with
 * `waitMs` 0, kept parked another `parkMs`, answered with its ticket). A
 * place no longer kept queues at the back, as without a ticket. A free
 * route whose head is a parked place is kept for it: any other acquire
 * queues behind it, or is refused.
 */
export async function acquireStep(
  ctx: EngineContext,
  step: Step,
  asked: WaiterParams & { askedTtlMs?: number; askedLifetimeMs?: number },
  waitMs: number,
  signal: AbortSignal | undefined,
  place?: string,
): Promise<AcquireStepResult> {
  const { askedTtlMs, askedLifetimeMs, ...rest } = asked;
  const bounds = await routeBounds(ctx, step, rest.family, rest.route);
  // The policy's bounds decide what is granted (the answer's ttl_ms says it).
  const p: WaiterParams = { ...rest, ...grantedTerms(bounds, askedTtlMs, askedLifetimeMs) };
  const queuedDup = await ctx.waiters.findRequest(step, p.family, p.route, p.requestId);
  if (queuedDup) {
    const same = queuedDup.digest === p.digest;
    fail('idempotency_conflict', same ? 'the original request is still waiting' : 'request_id was already used with different inputs', { retryable: same });
  }
  const replay = await findReplay<AcquireResult>(step, acquireKey(p), p.digest);
  if (replay) return { kind: 'done', answer: replay, replayed: true };
  const s = await liveSession(ctx, step, p.family, p.sessionHash);
  if (!s) fail('session_not_found', 'session not found, closed or expired');
  Object.assign(step.facts, { ownerId: s.ownerId, incarnation: s.incarnation });
  let current = await settleRoute(ctx, step, p.family, p.route, s);
  let delayUntil: number | undefined;
  if (!current) {
    delayUntil = await activeLockDelay(step, p.family, p.route, (f, r) => grantNext(ctx, step, f, r).then(() => undefined));
    // A delay that just ended may have granted the route to its head waiter.
    if (delayUntil === undefined) current = await step.tx.getLease(p.family, p.route);
  }
  // The ticket's place, if still kept (the ticket binds it to this session).
  const kept = place === undefined ? undefined : await ctx.waiters.findPlace(step, p.family, p.route, place);
  if (kept && (!kept.parked || kept.sessionHash !== p.sessionHash)) {
    fail('lease_conflict', 'this session is already waiting for the route', { retryable: false });
  }
  // A free route with a queue: its head may be a parked place, which keeps it.
  let reserved: Reserved | undefined;
  if (!current && delayUntil === undefined && (await waiterCount(ctx, step, p.family, p.route)) > 0) {
    reserved = await grantNext(ctx, step, p.family, p.route);
    if (!reserved) current = await step.tx.getLease(p.family, p.route);
  }
  // Its own place at the head of the free route (a session has one place a route at most: with its ticket or without).
  const mine = reserved?.sessionHash === p.sessionHash;
  if (!current && delayUntil === undefined && (!reserved || mine)) {
    // Granted from the queue (with its ticket), or as a fresh acquire (back without it).
    if (mine) await ctx.waiters.dropPlace(step, p.family, p.route, reserved!.place);
    const queued = mine && kept !== undefined;
    const { row, held } = await createLease(step, p, s, queued, await waiterCount(ctx, step, p.family, p.route));
    step.facts.fencingToken = row.fencingToken;
    const answer: AcquireResult = { lease: held, queued };
    await recordAnswer(step, acquireKey(p), p.digest, answer, acquireRecordExpiry(ctx, step, row));
    return { kind: 'done', answer, replayed: false };
  }
  if (current?.sessionHash === p.sessionHash) {
    fail('lease_conflict', 'this session already holds the route (leases are not re-entrant)', { retryable: false });
  }
  // Back without its ticket, its parked place is given up: it queues at the back, as when the place lapsed.
  if (!kept && (await ctx.waiters.hasSession(step, p.family, p.route, p.sessionHash)) && !(await ctx.waiters.dropSessionPlace(step, p.family, p.route, p.sessionHash))) {
    fail('lease_conflict', 'this session is already waiting for the route', { retryable: false });
  }
  const retryAfterMs = Math.max(50, (current ? current.expiresAt : (delayUntil ?? reserved!.until)) - step.now);
  if (waitMs <= 0) {
    if (kept) {
      // Continued without waiting: the place stays parked another parkMs, with its ticket.
      await ctx.waiters.repark(step, p.family, p.route, place!, step.now + ctx.limits.parkMs);
      fail('lease_conflict', 'lease is held; the queue place is kept for its queue_ticket', { retryAfterMs, queueTicket: ctx.tickets.issue(p.family, p.route, p.sessionHash, place!) });
    }
    if (current) fail('lease_conflict', 'lease is held', { retryAfterMs });
    if (reserved) fail('lease_conflict', 'the route is kept for a queued acquire that will continue', { retryAfterMs });
    ctx.onDelayRefusal?.();
    fail('lease_conflict', 'the route is in lock-delay after its last lease ended without its holder', { retryAfterMs, lockDelayUntil: delayUntil });
  }
  // A kept place is counted already.
  if (!kept && (await waiterCount(ctx, step, p.family, p.route)) >= bounds.maxWaiters) {
    fail('rate_limited', 'too many waiters for this route', { retryAfterMs });
  }
  let resolve!: (r: AcquireResult) => void;
  let reject!: (e: unknown) => void;
  const done = new Promise<AcquireResult>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const waiter: Waiter = { ...p, state: 'waiting', place: kept ? place! : randomId('', 12), signal, timer: undefined, resolve, reject };
  if (!kept || !(await ctx.waiters.resume(step, waiter, waitMs))) await ctx.waiters.enqueue(step, waiter, waitMs);
  step.enqueued.push(waiter);
  step.facts.pending = true;
  return { kind: 'wait', waiter, done };
}

/** The bounds the route's policy (if any) sets now. */
export async function routeBounds(ctx: EngineContext, step: Step, family: string, route: string): Promise<Bounds> {
  return boundsOf(ctx.policies ? await ctx.policies.policyFor(step.tx, family, route) : undefined, ctx.limits);
}

/**
 * The route's active lease if it matches the holder's proof exactly (after
 * processing the route's due expiry), else undefined. `s`: the presenting
 * session, live.
 */
export async function provenLease(ctx: EngineContext, step: Step, family: string, route: string, proof: HolderProof, s: SessionRow): Promise<LeaseRow | undefined> {
  const l = await settleRoute(ctx, step, family, route, s);
  return l && l.sessionHash === proof.sessionHash && l.leaseId === proof.leaseId && l.fencingToken === proof.fencingToken ? l : undefined;
}

/** The active lease that matches the holder's proof exactly, or `lease_lost`. */
async function heldBy(ctx: EngineContext, step: Step, family: string, route: string, proof: HolderProof): Promise<LeaseRow> {
  const s = await liveSession(ctx, step, family, proof.sessionHash);
  // The audit event names the presenting session and the token it presented.
  Object.assign(step.facts, { ownerId: s?.ownerId, incarnation: s?.incarnation, fencingToken: proof.fencingToken });
  const l = s ? await provenLease(ctx, step, family, route, proof, s) : undefined;
  if (!l) fail('lease_lost', 'the lease is not held by this session with this lease_id and token');
  return l;
}

/**
 * Renew a proven lease (`provenLease`): new expiry from now capped by the
 * max lifetime, renewal_count + 1, same token; a renewal hint, no change.
 * `ttlMs` (absent: the lease's own) is clamped by the route's policy in
 * force now. Returns the renewed row.
 */
export async function renewLease(ctx: EngineContext, step: Step, l: LeaseRow, ttlMs: number | undefined): Promise<LeaseRow> {
  const b = await routeBounds(ctx, step, l.family, l.route);
  const ttl = Math.min(b.ttlMaxMs, Math.max(b.ttlMinMs, ttlMs ?? l.ttlMs));
  const { row, event } = leaseTransition(l, { type: 'renew', ttlMs: ttl }, step.now);
  await step.tx.updateLeaseRenewal(l.family, l.route, l.leaseId, row.renewedAt, row.expiresAt, row.ttlMs, row.renewalCount);
  step.events.push(event);
  return row;
}

/** Renew: new expiry capped by max lifetime, renewal_count + 1, same token. No change event. */
export async function renewStep(ctx: EngineContext, step: Step, family: string, route: string, proof: HolderProof, ttlMs: number | undefined, requestId: string, digest: string): Promise<{ answer: RenewResult; replayed: boolean }> {
  const key: IdemKey = { family, op: 'renew', route, requestId };
  const replay = await findReplay<RenewResult>(step, key, digest);
  if (replay) return { answer: replay, replayed: true };
  const renewed = await renewLease(ctx, step, await heldBy(ctx, step, family, route, proof), ttlMs);
  const answer: RenewResult = { lease: heldLease(renewed, step.now, await waiterCount(ctx, step, family, route)) };
  await recordAnswer(step, key, digest, answer, addMs(step.now, ctx.limits.idempotencyTtlMs));
  return { answer, replayed: false };
}

/** Release: compare-and-delete under the exact proof, then grant the next waiter. */
export async function releaseStep(ctx: EngineContext, step: Step, family: string, route: string, proof: HolderProof, requestId: string, digest: string): Promise<{ answer: ReleaseResult; replayed: boolean }> {
  const key: IdemKey = { family, op: 'release', route, requestId };
  const replay = await findReplay<ReleaseResult>(step, key, digest);
  if (replay) return { answer: replay, replayed: true };
  const l = await heldBy(ctx, step, family, route, proof);
  await endLease(ctx, step, l, 'released');
  if (l.renewalCount > 0) step.facts.renewalCount = l.renewalCount;
  const answer: ReleaseResult = { route, fencing_token: l.fencingToken };
  await recordAnswer(step, key, digest, answer, addMs(step.now, ctx.limits.idempotencyTtlMs));
  return { answer, replayed: false };
}

/**
 * The fenced write: checked and written in one step. Refused unless the lease
 * matches exactly and no higher token ever wrote this route's checkpoint.
 */
export async function checkpointStep(ctx: EngineContext, step: Step, family: string, route: string, proof: HolderProof, value: string, requestId: string, digest: string): Promise<{ answer: CheckpointWritten; replayed: boolean }> {
  const key: IdemKey = { family, op: 'checkpoint', route, requestId };
  const replay = await findReplay<CheckpointWritten>(step, key, digest);
  if (replay) return { answer: replay, replayed: true };
  const l = await heldBy(ctx, step, family, route, proof);
  const prev = await step.tx.getCheckpoint(family, route);
  if (prev && prev.fencingToken > l.fencingToken) {
    fail('lease_lost', 'a newer lease already wrote this checkpoint');
  }
  const version = (prev?.version ?? 0) + 1;
  await step.tx.putCheckpoint({ family, route, value, fencingToken: l.fencingToken, leaseId: l.leaseId, writtenAt: step.now, version });
  const answer: CheckpointWritten = {
    checkpoint: { route, fencing_token: l.fencingToken, written_at: new Date(step.now).toISOString(), version },
  };
  await recordAnswer(step, key, digest, answer, addMs(step.now, ctx.limits.idempotencyTtlMs));
  return { answer, replayed: false };
}
