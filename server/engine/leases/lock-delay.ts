/**
 * Lock-delay (docs/policies.md): when a lease ends without its holder's
 * consent, its route accepts no new holder for the policy's `lock_delay_ms`,
 * so a paused former holder has time to notice its loss before a successor
 * acts. The deadline is stored (it survives restart and is shared by every
 * instance); the sweep ends due delays family by family under the family's
 * lock, and each end is a compare-and-delete on the deadline, so one delay
 * is processed once whichever instance sweeps first.
 */

import type { LeaseRow } from '../../store/types';
import type { ChangeKind } from '../core/events';
import { boundsOf } from '../policies/policies';
import type { Step } from '../core/step';
import type { EngineContext } from './context';

/** Ends that carry the holder's consent never start a delay. */
const CONSENTED: ReadonlySet<ChangeKind> = new Set<ChangeKind>(['released', 'rolled_back']);

/**
 * Start the route's delay if this end calls for one. `consent`: the holder
 * itself ended it (closing its own session). `endedAt`: when the lease
 * ended, if not now (its holder session's deadline, for a session that
 * expired before anything noticed); an expiry's own end is its deadline.
 * Returns the delay's deadline, or undefined when the route is free at once.
 */
export async function beginLockDelay(ctx: EngineContext, step: Step, l: LeaseRow, kind: ChangeKind, consent: boolean, endedAt?: number): Promise<number | undefined> {
  if (consent || CONSENTED.has(kind) || !ctx.policies) return undefined;
  const policy = await ctx.policies.policyFor(step.tx, l.family, l.route);
  let ms = boundsOf(policy, ctx.limits).lockDelayMs;
  // An operator may shorten (never lengthen) it.
  if (step.delayCapMs !== undefined) ms = Math.min(ms, step.delayCapMs);
  if (ms <= 0) return undefined;
  // The delay runs from the moment the lease ended (for an expiry, its deadline), never from the future.
  const until = Math.min(endedAt ?? (kind === 'expired' ? l.expiresAt : step.now), step.now) + ms;
  if (until <= step.now) return undefined;
  await step.tx.policies.setLockDelay({ family: l.family, route: l.route, until });
  return until;
}

/**
 * The route's delay deadline if one is running. A delay found past its
 * deadline is ended here (its head waiter granted by `grantNext`), so an
 * acquire never jumps the queue of a delay the sweep has not reached yet.
 */
export async function activeLockDelay(
  step: Step,
  family: string,
  route: string,
  grantNext: (family: string, route: string) => Promise<unknown>,
): Promise<number | undefined> {
  const until = await step.tx.policies.getLockDelay(family, route);
  if (until === undefined) return undefined;
  if (until > step.now) return until;
  if (await step.tx.policies.deleteLockDelay(family, route, until)) await grantNext(family, route);
  return undefined;
}

/** End a family's due delays, earliest first, granting each route's head waiter. Returns how many were due. */
export async function endDueLockDelays(step: Step, family: string, limit: number, grantNext: (family: string, route: string) => Promise<unknown>): Promise<number> {
  const due = await step.tx.policies.dueLockDelays(family, step.now, limit);
  for (const d of due) {
    if (!(await step.tx.policies.deleteLockDelay(d.family, d.route, d.until))) continue;
    // A lease may hold the route already (an operator skipped the delay): nothing to grant then.
    if (!(await step.tx.getLease(d.family, d.route))) await grantNext(d.family, d.route);
  }
  return due.length;
}
