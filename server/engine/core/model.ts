/**
 * The engine's shared model: the types every aggregate names (who calls,
 * what a step learned for its audit event, a waiter and the answer it
 * waits for). Plain types, importing only core/ (docs/design.md "Engine map").
 */

import type { Grant } from '@/lib/grants';
import type { TimerHandle } from './scheduler';
import type { HeldLease, Json, Metadata } from './views';

export interface Principal {
  tokenId: string;
  name: string;
  family: string;
  grants: Grant[];
  root: boolean;
  /** `embed` tokens only read the inventory (the embeddable widget's token). */
  kind: 'api' | 'embed';
  expiresAt: number | null;
  /** The token that minted this one (embed tokens count against it); absent or null for the bootstrap token. */
  createdBy?: string | null;
}

/** The request an engine call serves: its correlation id and when it started (backend time). */
export interface RequestInfo {
  correlationId: string;
  startedAt: number;
}

/** A principal, plus the request it is acting in (absent for direct engine calls). */
export type Caller = Principal & { request?: RequestInfo };

/** What an operation learned about its subject, for its audit event. */
export interface AuditFacts {
  ownerId?: string;
  incarnation?: string;
  fencingToken?: number;
  subjectTokenId?: string;
  /** Values the event records (the `details` object: a policy's fields, an operator's choices): never a secret or a metadata value. */
  details?: Record<string, Json>;
  /** The lock-delay the operation started (an operator's force-release or revoke): `details.lock_delay_until`. */
  lockDelayUntil?: number;
  /** How many times the lease the operation ended was renewed (a release, force-release or revoke): `details.renewal_count`, when more than 0. */
  renewalCount?: number;
  /** The answer was an idempotent replay: nothing happened, nothing is audited. */
  replayed?: boolean;
  /** The answer is not known yet (an acquire waiting in its queue). */
  pending?: boolean;
}

export interface AcquireResult {
  lease: HeldLease;
  queued: boolean;
}

export interface WaiterParams {
  family: string;
  route: string;
  sessionHash: string;
  requestId: string;
  digest: string;
  ttlMs: number;
  maxLifetimeMs: number;
  metadata: Metadata | null;
}

/** Where a waiter is: see `transitionWaiter` for the moves between them. */
export type WaiterState = 'waiting' | 'claimed' | 'done';

export interface Waiter extends WaiterParams {
  /** Changed by `transitionWaiter` only. */
  state: WaiterState;
  /** Its place in the queue: kept by the requests that continue it (their tickets name it). */
  place: string;
  parked?: undefined;
  /** Aborted when the client goes away. */
  signal: AbortSignal | undefined;
  timer: TimerHandle | undefined;
  resolve: (r: AcquireResult) => void;
  reject: (e: unknown) => void;
}

/** An engine call's answer, and whether it replays an earlier success. */
export interface Outcome<T> {
  answer: T;
  /** True when this is an idempotent replay of an earlier success. */
  replayed: boolean;
}
