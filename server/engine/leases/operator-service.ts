/**
 * The operator service (`engine.operators`): force-release and revoke a
 * route's lease (operators.ts), audited inside their step: no success
 * without its audit event (docs/design.md "Engine map", docs/operations.md).
 */

import { allowingGrant } from '@/lib/grants';
import { routeSegments } from '@/lib/selector';
import type { AuditEventType } from '../audit/audit';
import { fail } from '../core/errors';
import type { Caller, Outcome } from '../core/model';
import { spec, type Runner } from '../runner';
import { ALL, assertLiveChain } from '../tokens/tokens';
import { forceEndStep, type ForceReleased, type Revoked } from './operators';

export interface ForceEndRequest {
  requestId: string;
  reason: string;
  expectedFencingToken: number;
  digest: string;
  /** Shorten (never lengthen) or skip (0) the lock-delay this end starts. */
  lockDelayMs?: number;
}

export class OperatorService {
  constructor(private readonly r: Runner) {}

  /**
   * End the route's lease as `force_released` if it carries the expected
   * token (`lease_mismatch` otherwise, `lease_not_found` if free; nothing
   * changes). The next waiter is granted in the same step, and the audit
   * event is written in it too: no success without its audit.
   */
  async forceRelease(p: Caller, route: string, input: ForceEndRequest): Promise<Outcome<ForceReleased>> {
    return this.forceEnd(p, route, input, false, 'lease_force_release', 'lease_force_released');
  }

  /** As forceRelease, ending the lease as `revoked`; `closeSession` also closes the holder's session. */
  async revoke(p: Caller, route: string, input: ForceEndRequest & { closeSession: boolean }): Promise<Outcome<Revoked>> {
    return this.forceEnd(p, route, input, input.closeSession, 'lease_revoke', 'lease_revoked') as Promise<Outcome<Revoked>>;
  }

  private async forceEnd(p: Caller, route: string, input: ForceEndRequest, closeSession: boolean, type: AuditEventType, success: string): Promise<Outcome<ForceReleased | Revoked>> {
    const kind = type === 'lease_revoke' ? 'revoked' : 'force_released';
    let replayed = false;
    const answer = await this.r.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        // An admin of every route (lease://**) may end any lease: no check, so no read of the session's leases.
        const mayEnd = allowingGrant(p.grants, ALL, 'admin')
          ? undefined
          : (r: string) => {
              const [a, b, c] = routeSegments(r);
              if (!allowingGrant(p.grants, [a, b, c], 'admin')) fail('access_denied', 'closing the session would end leases on routes you may not administer; revoke without close_session, or ask an admin of lease://**');
            };
        const a = await forceEndStep(this.r.ctx, step, p.family, route, { ...input, kind, closeSession, mayEnd });
        const choices = { ...(closeSession ? { close_session: true } : {}), ...(input.lockDelayMs === undefined ? {} : { lock_delay_ms: input.lockDelayMs }) };
        if (Object.keys(choices).length > 0) step.facts.details = choices;
        replayed = step.facts.replayed === true;
        if (!replayed && 'sessions_closed' in a && a.sessions_closed === 1) {
          // The operator closed the holder's session too: that is a change of its own, audited in the same step.
          const closed = spec(p, 'session_close', null, 'session_closed', { reason: input.reason });
          await step.tx.insertAudit([this.r.audit.row(closed, 'session_closed', { ownerId: step.facts.ownerId, incarnation: step.facts.incarnation, details: { revoke_of: route } })]);
        }
        return a;
      },
      // The reason is the operator's, verbatim; their choices (closing the session, the lock-delay) are the event's details.
      spec(p, type, route, success, { inTx: true, reason: input.reason }),
    );
    return { answer, replayed };
  }
}
