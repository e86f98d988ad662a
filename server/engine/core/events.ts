/**
 * The engine's typed change events. The feed, metrics and audit subscribe to
 * them; business logic never calls those inline. Events are published after
 * the atomic step that made them has committed, in revision order.
 */

import type { ChangeKind } from '@/lib/wire';
import type { LeaseView } from './views';

export type { ChangeKind };

/** A change of the held set of one route. */
export interface LeaseChange {
  type: 'change';
  family: string;
  route: string;
  change: ChangeKind;
  revision: number;
  fencingToken: number;
  /** Present on `acquired` only. */
  queued?: boolean;
  lease?: LeaseView;
  /** The former holder, on the changes that end a lease (for the audit trail; never sent to the feed). */
  ownerId?: string;
  incarnation?: string;
  /**
   * On the changes that end a lease (for the audit trail, which records
   * every end on its route): when it ended (an expiry at its deadline, a
   * lease of an expired session at the session's deadline, else the step's
   * time), the lock-delay it started (the route takes no holder before it),
   * and for `session_closed` whether the session was closed or expired.
   */
  endedAt?: number;
  lockDelayUntil?: number;
  sessionEnd?: 'closed' | 'expired';
  /** On the changes that end a lease, when its tenure was renewed: how many times (the audit's `details.renewal_count`). */
  renewalCount?: number;
  /** Made by another instance (shared store): never audited here. */
  remote?: true;
}

/** A renewal: no membership change, no revision (renewal hints). */
export interface LeaseRenewed {
  type: 'renewed';
  family: string;
  route: string;
  expiresAt: number;
  renewalCount: number;
  remote?: true;
}

/** A release request (docs/release-requests.md): no membership change, no revision; sent to every matching registration. */
export interface ReleaseRequestedEvent {
  type: 'release_requested';
  family: string;
  route: string;
  fencingToken: number;
  reason: string;
  requestedAt: number;
  remote?: true;
}

export interface SessionEvent {
  type: 'session_opened' | 'session_closed' | 'session_expired';
  family: string;
  incarnation: string;
  ownerId: string;
  remote?: true;
}

/** A credential ended: the feed closes the streams it opened. */
export type CredentialEvent = { type: 'token_revoked'; tokenId: string; remote?: true } | { type: 'logged_out'; loginHash: string; remote?: true };

/**
 * One LIST page was read (docs/semantics.md §7): how many stored routes it examined
 * and how many items it returned. For metrics; the feed ignores it.
 */
export interface ListedEvent {
  type: 'listed';
  family: string;
  examined: number;
  returned: number;
  remote?: true;
}

/**
 * Every family's held leases and live sessions as the store holds them,
 * published in order with the changes (`LeaseEngine.census`): a subscriber
 * that takes these counts and then applies every later change and session
 * event keeps exact gauges, across restarts.
 */
export interface CensusEvent {
  type: 'census';
  families: ReadonlyArray<{ family: string; leases: number; sessions: number }>;
  remote?: true;
}

/** A family's policies changed: every instance drops its cached index of them (server/engine/policies/policies.ts). */
export interface PolicyChanged {
  type: 'policy_changed';
  family: string;
  remote?: true;
}

export type EngineEvent = LeaseChange | LeaseRenewed | SessionEvent | CredentialEvent | ListedEvent | CensusEvent | PolicyChanged | ReleaseRequestedEvent;

export type Listener = (event: EngineEvent) => void;

/** A minimal subscribable: listeners are called synchronously, in order, and must not throw. */
export class EventHub {
  private readonly listeners = new Set<Listener>();

  /** Subscribe; returns the unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(event: EngineEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // A listener's fault must never reach the engine or other listeners.
      }
    }
  }
}
