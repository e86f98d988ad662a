/**
 * Operator actions (docs/semantics.md §9): force-release (operational) and revoke
 * (security). Both are compare-and-delete on the token the operator saw, so
 * an operator never removes a successor they did not see; the freed route
 * goes to its next waiter in the same step, and the former holder's next
 * renew, release or checkpoint no longer matches anything (`lease_lost`).
 */

import { addMs } from '../../store/millis';
import { fail } from '../core/errors';
import { findReplay, recordAnswer, type IdemKey } from '../core/idempotency';
import { endLease, endSession, settleRoute } from './leases';
import type { ChangeKind } from '@/lib/wire';
import type { Step } from '../core/step';
import type { EngineContext } from './context';

export interface ForceEndInput {
  kind: Extract<ChangeKind, 'force_released' | 'revoked'>;
  expectedFencingToken: number;
  /** Revoke only: also close the holder's session, releasing its other leases. */
  closeSession: boolean;
  requestId: string;
  digest: string;
  /** The operator's cap on the lock-delay (0 skips it), for this route and every lease a closed session frees. */
  lockDelayMs?: number;
  /**
   * With `closeSession`: throws (`access_denied`) unless the caller may end
   * the lease of this route too. Every route the holder's session holds is
   * checked before anything changes. Absent: the caller may end any lease
   * (an admin of every route), and the session's leases are not read.
   */
  mayEnd?: (route: string) => void;
}

export interface ForceReleased {
  route: string;
  fencing_token: number;
}

export interface Revoked extends ForceReleased {
  sessions_closed: 0 | 1;
}

/**
 * End the route's current lease as `force_released` or `revoked`, if it
 * carries the expected token; else `lease_mismatch` (or `lease_not_found`)
 * and nothing changes. With `closeSession` the holder's session is closed
 * after its lease was revoked, so this route ends `revoked` and its other
 * routes `session_closed`.
 */
export async function forceEndStep(ctx: EngineContext, step: Step, family: string, route: string, input: ForceEndInput): Promise<ForceReleased | Revoked> {
  const key: IdemKey = { family, op: input.kind === 'revoked' ? 'revoke' : 'force_release', route, requestId: input.requestId };
  const replay = await findReplay<ForceReleased | Revoked>(step, key, input.digest);
  if (replay) return replay;
  const l = await settleRoute(ctx, step, family, route);
  if (!l) fail('lease_not_found', 'no lease is held on this route');
  step.facts.ownerId = l.ownerId;
  step.facts.incarnation = l.incarnation;
  step.facts.fencingToken = l.fencingToken;
  // Closing the session ends every lease it holds: the caller needs admin on
  // each of them, or nothing changes (a route admin cannot end leases beyond its grant).
  // The check reads at most one step's leases (stepMaxLeases, CONTRACT §19);
  // a larger session is closed by an admin of every route, who needs no check.
  if (input.kind === 'revoked' && input.closeSession && input.mayEnd) {
    const budget = ctx.limits.stepMaxLeases;
    const others = await step.tx.sessionLeases(l.sessionHash, budget + 1);
    if (others.length > budget) {
      fail('access_denied', `the session holds more than ${budget} leases, too many to check your grants on each; revoke without close_session, or ask an admin of lease://**`);
    }
    for (const other of others) input.mayEnd(other.route);
  }
  if (l.fencingToken !== input.expectedFencingToken) {
    fail('lease_mismatch', `the current lease has fencing token ${l.fencingToken}, not ${input.expectedFencingToken}`);
  }
  step.delayCapMs = input.lockDelayMs;
  const ended = await endLease(ctx, step, l, input.kind);
  if (ended && l.renewalCount > 0) step.facts.renewalCount = l.renewalCount;
  // The delay this end started goes in the operator's event (its `details`), so the history can shade it.
  if (ended && ended.lockDelayUntil !== undefined) step.facts.lockDelayUntil = ended.lockDelayUntil;
  let answer: ForceReleased | Revoked = { route, fencing_token: l.fencingToken };
  if (input.kind === 'revoked') {
    let closed: 0 | 1 = 0;
    if (input.closeSession) {
      const s = await step.tx.getSession(l.sessionHash);
      if (s) {
        // Closed by an operator, not by its holder: its leases get their delay.
        await endSession(ctx, step, s, 'session_closed', false);
        closed = 1;
      }
    }
    answer = { ...answer, sessions_closed: closed };
  }
  await recordAnswer(step, key, input.digest, answer, addMs(step.now, ctx.limits.idempotencyTtlMs));
  return answer;
}
