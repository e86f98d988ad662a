/**
 * Every state change of a lease in one pure function (docs/design.md "Lease
 * and waiter transitions"; the rules are docs/semantics.md §2, §5, §9 and
 * docs/release-requests.md).
 *
 * `leaseTransition(current, action, now)` decides the lease's next row
 * (null: the lease ends) and the event its step publishes. It does no I/O:
 * the callers (leases.ts, operators.ts, waiting.ts, release-requests.ts)
 * read the current row, bump the family's revision where the change calls
 * for one, and write the decided row (insert, update, or compare-and-delete
 * on (lease_id, fencing_token)) in their step. An action the current state
 * does not allow is a fault of the caller and throws.
 */

import { addMs, millis, type Millis } from '../../store/millis';
import { renewedRow, type LeaseRow, type SessionRow } from '../../store/types';
import type { ChangeKind, LeaseChange, LeaseRenewed, ReleaseRequestedEvent } from '../core/events';
import { leaseView, type LeaseView, type StoredReleaseRequest } from '../core/views';

export type { StoredReleaseRequest } from '../core/views';
import type { WaiterParams } from '../waiters/waiters';

/** The ways a lease ends: each is the change kind its end publishes. */
export type LeaseEnd = Exclude<ChangeKind, 'acquired'>;

/** A new lease on a free route, for this session, on these terms. */
export interface AcquireAction {
  type: 'acquire';
  /** The family's revision, bumped for this change: the new lease's fencing token. */
  revision: number;
  leaseId: string;
  /** The granted terms (ttl and max lifetime already bounded by the route's policy). */
  terms: Pick<WaiterParams, 'family' | 'route' | 'ttlMs' | 'maxLifetimeMs' | 'metadata'>;
  session: Pick<SessionRow, 'idHash' | 'ownerId' | 'incarnation'>;
  /** Granted to a waiter (not at once). */
  queued: boolean;
  /** The route's queue length, for the event's view. */
  waiters: number;
}

/** A renewal: `ttlMs` is the TTL to run from now (already bounded by the route's policy). */
export interface RenewAction {
  type: 'renew';
  ttlMs: number;
}

/** A release request (docs/release-requests.md): stored in the row, replacing an earlier one. */
export interface RequestReleaseAction {
  type: 'request_release';
  reason: string;
  tokenId: string;
}

/** The lease ends; `revision`: the family's revision, bumped for this change. */
export interface EndAction {
  type: LeaseEnd;
  revision: number;
}

export type LeaseAction = AcquireAction | RenewAction | RequestReleaseAction | EndAction;

export interface AcquireOutcome {
  row: LeaseRow;
  event: LeaseChange & { lease: LeaseView };
}

export interface RenewOutcome {
  row: LeaseRow;
  event: LeaseRenewed;
}

export interface RequestReleaseOutcome {
  row: LeaseRow;
  event: ReleaseRequestedEvent;
}

export interface EndOutcome {
  row: null;
  event: LeaseChange;
}

export type LeaseTransition = AcquireOutcome | RenewOutcome | RequestReleaseOutcome | EndOutcome;

/** A transition the lease's state does not allow: a fault in the caller, never a client's. */
export class IllegalLeaseTransition extends Error {
  constructor(from: string, action: string) {
    super(`illegal lease transition: ${action} on ${from}`);
    this.name = 'IllegalLeaseTransition';
  }
}

export function leaseTransition(current: undefined, action: AcquireAction, now: Millis): AcquireOutcome;
export function leaseTransition(current: LeaseRow, action: RenewAction, now: Millis): RenewOutcome;
export function leaseTransition(current: LeaseRow, action: RequestReleaseAction, now: Millis): RequestReleaseOutcome;
export function leaseTransition(current: LeaseRow, action: EndAction, now: Millis): EndOutcome;
export function leaseTransition(current: LeaseRow | undefined, action: LeaseAction, now: Millis): LeaseTransition;
export function leaseTransition(current: LeaseRow | undefined, action: LeaseAction, now: Millis): LeaseTransition {
  if (action.type === 'acquire') {
    // Leases are not re-entrant and a route has one holder: only a free route is acquired.
    if (current) throw new IllegalLeaseTransition('a held route', 'acquire');
    const { revision, terms, session } = action;
    const row: LeaseRow = {
      family: terms.family,
      route: terms.route,
      leaseId: action.leaseId,
      fencingToken: revision,
      sessionHash: session.idHash,
      ownerId: session.ownerId,
      incarnation: session.incarnation,
      acquiredAt: now,
      renewedAt: now,
      // The first TTL never runs past the max lifetime either.
      expiresAt: addMs(now, Math.min(terms.ttlMs, terms.maxLifetimeMs)),
      maxExpiresAt: addMs(now, terms.maxLifetimeMs),
      ttlMs: terms.ttlMs,
      renewalCount: 0,
      revision,
      metadata: terms.metadata === null ? null : JSON.stringify(terms.metadata),
    };
    const lease = leaseView(row, now, action.waiters);
    return { row, event: { type: 'change', family: row.family, route: row.route, change: 'acquired', revision, fencingToken: revision, queued: action.queued, lease } };
  }
  if (!current) throw new IllegalLeaseTransition('a free route', action.type);
  switch (action.type) {
    case 'renew': {
      // A lease past its deadline is ended (expired), never renewed.
      if (current.expiresAt <= now) throw new IllegalLeaseTransition('an expired lease', 'renew');
      const row = renewedRow(current, now, millis(Math.min(addMs(now, action.ttlMs), current.maxExpiresAt)), action.ttlMs, current.renewalCount + 1);
      return { row, event: { type: 'renewed', family: row.family, route: row.route, expiresAt: row.expiresAt, renewalCount: row.renewalCount } };
    }
    case 'request_release': {
      if (current.expiresAt <= now) throw new IllegalLeaseTransition('an expired lease', 'request_release');
      const stored: StoredReleaseRequest = { at: now, reason: action.reason, token_id: action.tokenId };
      const row: LeaseRow = { ...current, releaseRequest: JSON.stringify(stored) };
      return { row, event: { type: 'release_requested', family: row.family, route: row.route, fencingToken: row.fencingToken, reason: action.reason, requestedAt: now } };
    }
    default: {
      // Only a lease whose deadline has come ends as `expired`.
      if (action.type === 'expired' && current.expiresAt > now) throw new IllegalLeaseTransition('an unexpired lease', 'expired');
      return {
        row: null,
        event: { type: 'change', family: current.family, route: current.route, change: action.type, revision: action.revision, fencingToken: current.fencingToken, ownerId: current.ownerId, incarnation: current.incarnation },
      };
    }
  }
}
