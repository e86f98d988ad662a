/**
 * Release requests (docs/release-requests.md): a contender (`write`) or an
 * operator (`admin`) asks the current holder to let go. The request is kept
 * in the lease's own row, so every instance sees it and it ends with the
 * lease however the lease ends; the newest request replaces an earlier one.
 * It is not a change of the held set (no revision): the holder learns of it
 * from its renew and keepalive answers and the feed's `release_requested`
 * event, and decides what to do.
 */

import { addMs } from '../../store/millis';
import type { LeaseRow } from '../../store/types';
import { fail } from '../core/errors';
import { findReplay, recordAnswer, type IdemKey } from '../core/idempotency';
import { settleRoute } from './leases';
import { leaseTransition } from './lease-transitions';
import type { Step } from '../core/step';
import type { EngineContext } from './context';
import { iso, releaseRequestOf, type ReleaseRequestView } from '../core/views';

export { releaseRequestOf, type ReleaseRequestView } from '../core/views';

export interface ReleaseRequestInput {
  requestId: string;
  reason: string;
  expectedFencingToken: number;
  digest: string;
}


/** The answer to a release request. */
export interface ReleaseRequested {
  route: string;
  fencing_token: number;
  release_request: ReleaseRequestView;
}

/** One pending request of a session's lease, as renew and keepalive answers list it. */
export interface PendingReleaseRequest {
  route: string;
  fencing_token: number;
  requested_at: string;
  reason: string;
}

/**
 * Ask the holder of the route's lease to release it, if the lease carries
 * the expected token (`lease_mismatch` otherwise, `lease_not_found` if free;
 * nothing changes). Publishes `release_requested` to the feed.
 */
export async function releaseRequestStep(ctx: EngineContext, step: Step, family: string, route: string, tokenId: string, input: ReleaseRequestInput): Promise<ReleaseRequested> {
  const key: IdemKey = { family, op: 'release_request', route, requestId: input.requestId };
  const replay = await findReplay<ReleaseRequested>(step, key, input.digest);
  if (replay) return replay;
  const l = await settleRoute(ctx, step, family, route);
  if (!l) fail('lease_not_found', 'no lease is held on this route');
  Object.assign(step.facts, { ownerId: l.ownerId, incarnation: l.incarnation, fencingToken: l.fencingToken });
  if (l.fencingToken !== input.expectedFencingToken) {
    fail('lease_mismatch', `the current lease has fencing token ${l.fencingToken}, not ${input.expectedFencingToken}`);
  }
  const { row, event } = leaseTransition(l, { type: 'request_release', reason: input.reason, tokenId }, step.now);
  await step.tx.setReleaseRequest(family, route, l.leaseId, l.fencingToken, row.releaseRequest!);
  step.events.push(event);
  const answer: ReleaseRequested = { route, fencing_token: l.fencingToken, release_request: { requested_at: iso(step.now), reason: input.reason, token_id: tokenId } };
  await recordAnswer(step, key, input.digest, answer, addMs(step.now, ctx.limits.idempotencyTtlMs));
  return answer;
}

/**
 * At most this many pending release requests are listed in one answer (the
 * first by route): an answer's size, like a step's, has a bound (CONTRACT
 * §19); a holder asked to let go of more leases than this learns of the
 * rest as it releases the first.
 */
export const RELEASE_REQUESTS_LISTED = 1_000;

/**
 * The leases of a session that carry a release request, read through the
 * store's partial index of them alone: a renew or keepalive costs the same
 * however many leases its session holds (docs/design.md "Batched calls").
 * Read it before the step writes anything: on SQLite a read the caches
 * cannot answer, made after the step's own writes, would make the step
 * write through under a savepoint and drop the caches
 * (server/store/unit-of-work.ts).
 */
export function askedLeases(step: Step, sessionHash: string): Promise<LeaseRow[]> {
  return step.tx.sessionReleaseRequests(sessionHash, RELEASE_REQUESTS_LISTED);
}

/**
 * The pending release requests of a session's unexpired leases, by route.
 * `asked`: the session's leases that carried one when the step began
 * (`askedLeases`); each is read again through the step (a point read the
 * caches answer), so the answer is the state at the end of the step. A
 * step never adds a request to a lease of the session it answers.
 */
export async function pendingReleaseRequests(step: Step, sessionHash: string, asked: readonly LeaseRow[]): Promise<PendingReleaseRequest[]> {
  const out: PendingReleaseRequest[] = [];
  for (const read of asked) {
    const l = await step.tx.getLease(read.family, read.route);
    if (!l || l.sessionHash !== sessionHash) continue;
    const r = l.expiresAt > step.now ? releaseRequestOf(l) : null;
    if (r) out.push({ route: l.route, fencing_token: l.fencingToken, requested_at: r.requested_at, reason: r.reason });
  }
  return out;
}

/** An answer plus the session's pending release requests (renew and keepalive answers); `asked` as for `pendingReleaseRequests`. */
export async function withReleaseRequests<T extends object>(
  step: Step,
  sessionHash: string,
  answer: T,
  asked: readonly LeaseRow[],
): Promise<T & { release_requests: PendingReleaseRequest[] }> {
  return { ...answer, release_requests: await pendingReleaseRequests(step, sessionHash, asked) };
}
