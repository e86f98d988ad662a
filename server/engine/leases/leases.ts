/**
 * Lease transitions (docs/semantics.md §2, §5), as functions over one atomic step.
 *
 * Every removal is a compare-and-delete on (lease_id, fencing_token), so a late
 * cleanup never touches a successor. Every change of the held set bumps the
 * family's revision once and emits one change event. The fencing token of a
 * new lease is the revision of its acquisition: one per-family counter that
 * never goes back, so tokens strictly increase per route for the store's life.
 * What each change makes of the row, and the event it publishes, is decided
 * by `leaseTransition` (lease-transitions.ts); the functions here do the I/O.
 * The steps of a holder's calls (acquire, renew, release, checkpoint) are in
 * holder-steps.ts.
 */

import { addMs, millis, type Millis } from '../../store/millis';
import type { LeaseRow, SessionRow } from '../../store/types';
import { LeaseholdError } from '../core/errors';
import { recordAnswer, type IdemKey } from '../core/idempotency';
import { randomId } from '../core/ids';
import type { Step } from '../core/step';
import { leaseRoom, type EngineContext } from './context';
import { type HeldLease, type Metadata } from '../core/views';
import type { AcquireResult } from '../core/model';
import { leaseTransition, type LeaseEnd } from './lease-transitions';
import type { Reserved, WaiterParams } from '../waiters/waiters';
import { activeLockDelay, beginLockDelay } from './lock-delay';

export type { AcquireResult } from '../core/model';

export interface RenewResult {
  lease: HeldLease;
}

export interface ReleaseResult {
  route: string;
  fencing_token: number;
}

export interface CheckpointWritten {
  checkpoint: { route: string; fencing_token: number; written_at: string; version: number };
}

/** The identity a holder presents with renew, release and checkpoint. */
export interface HolderProof {
  sessionHash: string;
  leaseId: string;
  fencingToken: number;
}

/**
 * The live session with this hash in this family, or undefined. A session
 * past its deadline is expired here first (its leases released), so no answer
 * ever treats it as alive.
 */
export async function liveSession(ctx: EngineContext, step: Step, family: string, hash: string): Promise<SessionRow | undefined> {
  const s = await step.tx.getSession(hash);
  // An ending session is closed already; later steps end its remaining leases.
  if (!s || s.family !== family || s.ending) return undefined;
  if (s.expiresAt <= step.now) {
    await endSession(ctx, step, s, 'session_expired');
    return undefined;
  }
  return s;
}

/** How a closed or expired session's leases end, kept on its row while later steps still end some (`SessionRow.ending`). */
interface Ending {
  why: 'session_closed' | 'session_expired';
  /** The holder closed its own session: its leases end without lock-delay where the policy allows (lock-delay.ts). */
  consent: boolean;
  /** When the session ended: a lease whose own deadline came before ends `expired`. */
  at: number;
  /** The operator's cap on the lock-delay, when an operator closed it. */
  cap?: number;
}

/**
 * Close a session: release every lease it holds (change `session_closed`,
 * each freed route granted to its next waiter), drop its queued waits and
 * delete it. Returns how many leases this step released.
 *
 * A step ends at most `leaseRoom` leases (CONTRACT §19): the first step
 * closes the session (its event, its waits refused, no longer live) and
 * marks it `ending`; the sweeper's next steps end the rest, a bounded page
 * each, and delete the session with its last lease (docs/design.md
 * "Bounded steps").
 */
export async function endSession(ctx: EngineContext, step: Step, s: SessionRow, why: 'session_closed' | 'session_expired', consent = why === 'session_closed'): Promise<number> {
  return (await drainSession(ctx, step, s, why, consent)).released;
}

/** `endSession`, also saying whether the session is gone (`done`) or has leases left for later steps. */
export async function drainSession(ctx: EngineContext, step: Step, s: SessionRow, why: 'session_closed' | 'session_expired', consent = why === 'session_closed'): Promise<{ released: number; done: boolean }> {
  let ending: Ending;
  if (s.ending) {
    ending = JSON.parse(s.ending) as Ending;
  } else {
    // A lease whose own deadline came first ends as `expired`, as the sweep
    // would have ended it: before the session's deadline (on expiry, ties go
    // to the session), or already past (on close).
    ending = { why, consent, at: why === 'session_expired' ? s.expiresAt : step.now + 1, ...(step.delayCapMs === undefined ? {} : { cap: step.delayCapMs }) };
    // Its waits go first: a lease it frees is never granted to itself.
    const taken = await ctx.waiters.takeSession(step, s.idHash);
    for (const row of taken.remote) step.notices.push({ kind: 'refuse', to: row.instance, family: row.family, route: row.route, requestId: row.requestId });
    for (const w of taken.local) step.refused.push({ waiter: w, error: sessionGone() });
    // Its parked places lapsed: the sweep drops them and serves the routes they kept.
    if (taken.lapsed > 0) step.backlog = true;
    step.events.push({ type: ending.why, family: s.family, incarnation: s.incarnation, ownerId: s.ownerId });
  }
  const room = leaseRoom(ctx, step);
  // One more than fits tells whether any are left.
  const leases = await step.tx.sessionLeases(s.idHash, room + 1);
  let released = 0;
  for (const l of leases.slice(0, room)) if (await endSessionLease(ctx, step, ending, l)) released++;
  const done = leases.length <= room;
  if (done) {
    await step.tx.deleteSession(s.idHash);
  } else {
    // Closed from this step on, and due at once: the sweeper ends the rest.
    if (!s.ending) await step.tx.setSessionEnding(s.idHash, JSON.stringify(ending), millis(Math.min(s.expiresAt, step.now)));
    step.backlog = true;
  }
  return { released, done };
}

/** End one lease of an ending session, as its `ending` says; true if it was released (not already expired). */
async function endSessionLease(ctx: EngineContext, step: Step, e: Ending, l: LeaseRow): Promise<boolean> {
  const kind = l.expiresAt < e.at ? 'expired' : 'session_closed';
  // An expired session's leases ended at its deadline, however late this step noticed it (their lock-delay runs from then).
  const at = kind === 'session_closed' && e.why === 'session_expired' ? e.at : undefined;
  const cap = step.delayCapMs;
  if (e.cap !== undefined) step.delayCapMs = e.cap;
  try {
    const sessionEnd = kind === 'session_closed' ? (e.why === 'session_expired' ? 'expired' : 'closed') : undefined;
    return (await endLease(ctx, step, l, kind, kind === 'session_closed' && e.consent, at, sessionEnd)) !== false && kind === 'session_closed';
  } finally {
    step.delayCapMs = cap;
  }
}

/** End this route's lease now if its session is ending (it would otherwise wait for a later step of that session's end). */
async function endIfEnding(ctx: EngineContext, step: Step, family: string, route: string, sessionHash: string): Promise<void> {
  const l = await step.tx.getLease(family, route);
  if (!l || l.sessionHash !== sessionHash) return;
  const s = await step.tx.getSession(sessionHash);
  if (s?.ending) await endSessionLease(ctx, step, JSON.parse(s.ending) as Ending, l);
}

/** How many acquires wait for a route (on every instance, on a shared store). */
export function waiterCount(ctx: EngineContext, step: Step, family: string, route: string): Promise<number> {
  return ctx.waiters.count(step, family, route);
}

export function sessionGone(): LeaseholdError {
  return new LeaseholdError('session_not_found', 'the session closed or expired while waiting');
}

/** What ending a lease did besides deleting it: the lock-delay it started, if any. */
export interface LeaseEnded {
  lockDelayUntil: number | undefined;
}

/**
 * End one lease (compare-and-delete), publish its change and grant the route
 * to its next waiter, unless the end starts a lock-delay (`consent`: the
 * holder closed its own session; `endedAt`: when it ended, if not now;
 * `sessionEnd`: for `session_closed`, whether the session was closed or
 * expired). The change carries when the lease ended and the delay it
 * started, so the audit trail records the end on its route (audit.ts,
 * `leaseEnded`). Returns false if the lease was no longer there.
 */
export async function endLease(
  ctx: EngineContext,
  step: Step,
  l: LeaseRow,
  kind: LeaseEnd,
  consent = false,
  endedAt?: number,
  sessionEnd?: 'closed' | 'expired',
): Promise<false | LeaseEnded> {
  if (!(await step.tx.deleteLease(l.family, l.route, l.leaseId, l.fencingToken))) return false;
  step.endedLeases++;
  const revision = await step.tx.bumpRevision(l.family);
  const event = leaseTransition(l, { type: kind, revision }, step.now).event;
  const until = await beginLockDelay(ctx, step, l, kind, consent, endedAt);
  // The moment it ended, as the delay counts it: never in the future.
  const at = Math.min(endedAt ?? (kind === 'expired' ? l.expiresAt : step.now), step.now);
  step.events.push({ ...event, endedAt: at, ...(until === undefined ? {} : { lockDelayUntil: until }), ...(sessionEnd ? { sessionEnd } : {}), ...(l.renewalCount > 0 ? { renewalCount: l.renewalCount } : {}) });
  if (until === undefined) await grantNext(ctx, step, l.family, l.route);
  return { lockDelayUntil: until };
}

/**
 * The active lease of a route, after processing its expiry (or its holder
 * session's expiry, whichever deadline came first) if due. Ending it grants
 * the route to its head waiter in this same step, so the answer is then that
 * waiter's new lease. Undefined if free.
 */
export async function settleRoute(ctx: EngineContext, step: Step, family: string, route: string, known?: SessionRow): Promise<LeaseRow | undefined> {
  const l = await step.tx.getLease(family, route);
  if (!l) return undefined;
  // The caller may already have read the holder's session in this step.
  const s = known?.idHash === l.sessionHash ? known : await step.tx.getSession(l.sessionHash);
  if (s && s.expiresAt <= step.now && (s.ending || s.expiresAt <= l.expiresAt)) {
    if (!s.ending) await endSession(ctx, step, s, 'session_expired');
    // A session ended over several steps may not have reached this route yet.
    await endIfEnding(ctx, step, family, route, s.idHash);
  } else if (l.expiresAt <= step.now) {
    await endLease(ctx, step, l, 'expired');
  } else if (!s) {
    // A lease without its session cannot be renewed or released: end it now.
    await endLease(ctx, step, l, 'session_closed');
  } else {
    return l;
  }
  return step.tx.getLease(family, route);
}

/** Create a lease for a free route (bumping the revision, which is also its fencing token). */
export async function createLease(step: Step, p: WaiterParams, s: SessionRow, queued: boolean, waiters: number): Promise<{ row: LeaseRow; held: HeldLease }> {
  const revision = await step.tx.bumpRevision(p.family);
  const { row, event } = leaseTransition(undefined, { type: 'acquire', revision, leaseId: randomId('ls_'), terms: p, session: s, queued, waiters }, step.now);
  await step.tx.insertLease(row);
  step.events.push(event);
  // The holder's answer: what observers see, plus its lease_id (as `heldLease` orders it).
  return { row, held: { ...event.lease, lease_id: row.leaseId } };
}

export function acquireKey(p: { family: string; route: string; requestId: string }): IdemKey {
  return { family: p.family, op: 'acquire', route: p.route, requestId: p.requestId };
}

/** An acquisition's answer is kept as long as the lease could live, and at least the idempotency TTL. */
export function acquireRecordExpiry(ctx: EngineContext, step: Step, row: LeaseRow): Millis {
  return millis(Math.max(addMs(step.now, ctx.limits.idempotencyTtlMs), row.maxExpiresAt));
}

/**
 * Grant a freed route to the head of its queue, in the same step that freed
 * it, whichever instance holds that waiter (on a shared store). This
 * instance's own waiter is answered after commit; another instance's is
 * told by a notice sent with the commit (its grant is rolled back there if
 * its client has left). Waiters whose client left or whose session is gone
 * are skipped. A parked place at the head (docs/design.md "Queue tickets")
 * keeps the route: nothing is granted, and it is returned (`Reserved`).
 */
export async function grantNext(ctx: EngineContext, step: Step, family: string, route: string): Promise<Reserved | undefined> {
  for (;;) {
    const c = await ctx.waiters.claimHead(step, family, route);
    if (!c) return undefined;
    if ('reserved' in c) {
      // A parked place at the head keeps the route for its return (docs/design.md "Queue tickets"), while its session lives.
      if (await liveSession(ctx, step, family, c.sessionHash)) return c;
      await ctx.waiters.dropPlace(step, family, route, c.place);
      continue;
    }
    const s = await liveSession(ctx, step, family, c.params.sessionHash);
    if (!s) {
      if (c.waiter) step.refused.push({ waiter: c.waiter, error: sessionGone() });
      else step.notices.push({ kind: 'refuse', to: c.instance, family, route, requestId: c.params.requestId });
      continue;
    }
    const { row: lease, held } = await createLease(step, c.params, s, true, await waiterCount(ctx, step, family, route));
    const answer: AcquireResult = { lease: held, queued: true };
    await recordAnswer(step, acquireKey(c.params), c.params.digest, answer, acquireRecordExpiry(ctx, step, lease));
    if (c.waiter) step.grants.push({ waiter: c.waiter, lease, answer });
    else step.notices.push({ kind: 'grant', to: c.instance, family, route, requestId: c.params.requestId, answer, lease });
    return undefined;
  }
}

/**
 * Serve a route whose parked place was dropped: if it is free (no lease,
 * no lock-delay), grant it to its next waiter, as the end of a lease would.
 */
async function serveRoute(ctx: EngineContext, step: Step, family: string, route: string): Promise<void> {
  if (await settleRoute(ctx, step, family, route)) return;
  const grant = (f: string, r: string) => grantNext(ctx, step, f, r).then(() => undefined);
  if ((await activeLockDelay(step, family, route, grant)) !== undefined) return;
  if (!(await step.tx.getLease(family, route))) await grantNext(ctx, step, family, route);
}

/**
 * Drop a family's parked places whose time ran out (their tickets no longer
 * continue them) and serve the routes they kept, a bounded batch a step.
 * Returns how many were due.
 */
export async function endDueParked(ctx: EngineContext, step: Step, family: string, limit: number): Promise<number> {
  const due = await ctx.waiters.dueParked(step, family, limit);
  for (const d of due) {
    if (await ctx.waiters.dropPlace(step, family, d.route, d.place)) await serveRoute(ctx, step, family, d.route);
  }
  return due.length;
}

/**
 * Process due expirations in deadline order (a session whose deadline came
 * first closes its leases as `session_closed`), of one family when given
 * (a step scoped to that family). Returns how many were due.
 */
export async function expireDue(ctx: EngineContext, step: Step, limit: number, family?: string): Promise<number> {
  const leases = await step.tx.dueLeases(step.now, limit, family);
  const sessions = await step.tx.dueSessions(step.now, limit, family);
  type Due = { at: number; lease?: LeaseRow; session?: SessionRow };
  const due: Due[] = [
    ...sessions.map((s): Due => ({ at: s.expiresAt, session: s })),
    ...leases.map((l): Due => ({ at: l.expiresAt, lease: l })),
  ].sort((a, b) => a.at - b.at || (a.session ? -1 : 1));
  // More is due than this step may end (CONTRACT §19): say so, so the sweeper runs another step.
  let more = false;
  for (const d of due) {
    if (leaseRoom(ctx, step) === 0) {
      more = true;
      break;
    }
    if (d.session) {
      const s = await step.tx.getSession(d.session.idHash);
      if (s && s.expiresAt <= step.now && !(await drainSession(ctx, step, s, 'session_expired')).done) more = true;
    } else {
      await settleRoute(ctx, step, d.lease!.family, d.lease!.route);
    }
  }
  const n = leases.length + sessions.length;
  return more ? Math.max(n, limit) : n;
}

export type { Metadata };
