/**
 * Reads while the store refuses writes (CONTRACT §19: on a full disk,
 * inspect and LIST keep being answered). A read normally ends what fell due
 * on its way, in its own step (a lease past its deadline or its session's,
 * a lock-delay that ran out), so that what it reports is written. With
 * writes refused it cannot; these decide the same thing without writing it.
 * The ends themselves (their changes, revisions and events) are written by
 * the sweep once there is room again.
 */

import type { LeaseRow } from '../../store/types';
import type { Step } from '../core/step';

/** Whether a lease row is held at `step.now`: before its deadline, with its session live (not past its own, not ending). */
async function isHeld(step: Step, l: LeaseRow): Promise<boolean> {
  if (l.expiresAt <= step.now) return false;
  const s = await step.tx.getSession(l.sessionHash);
  return s !== undefined && !s.ending && s.expiresAt > step.now;
}

/** The route's lease if it is held now (`settleRoute` without ending anything). */
export async function heldLease(step: Step, family: string, route: string): Promise<LeaseRow | undefined> {
  const l = await step.tx.getLease(family, route);
  return l && (await isHeld(step, l)) ? l : undefined;
}

/** The leases among `rows` that are held now. */
export async function heldOnly(step: Step, rows: readonly LeaseRow[]): Promise<LeaseRow[]> {
  const out: LeaseRow[] = [];
  for (const l of rows) if (await isHeld(step, l)) out.push(l);
  return out;
}

/** The route's lock-delay deadline if it still runs (`activeLockDelay` without ending one that ran out). */
export async function runningLockDelay(step: Step, family: string, route: string): Promise<number | undefined> {
  const until = await step.tx.policies.getLockDelay(family, route);
  return until !== undefined && until > step.now ? until : undefined;
}
