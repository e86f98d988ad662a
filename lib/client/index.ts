/** The Leasehold TypeScript SDK (`leasehold/client`). See docs/sdk.md. */

export { LeaseholdClient } from './client';
export type { AuditQuery, CreateTokenOptions, LeaseFilters, LeaseholdClientOptions, ListOptions, ListPageOptions, OperatorActionOptions, PolicyFields, ReleaseRequestOptions } from './client';
export { Policies } from './client';
export { LeaseholdError, isLeaseholdError, CLIENT_ERROR_CODES } from './errors';
export type { ClientErrorCode, LeaseholdErrorCode } from './errors';
export type { ErrorCode } from '../error-codes';
export { Session } from './session';
export type { AcquireOptions, OpenSessionOptions, SessionEventMap, SessionState } from './session';
export { LeaseHandle, ReleaseRequestedEvent } from './lease-handle';
export type { LeaseHandleEventMap, LeaseState } from './lease-handle';
export { Subscription } from './subscription';
export type { ChangeEvent, ClosedEvent, HelloEvent, OverflowEvent, ReleaseRequestNotice, RenewedEvent, ResyncEvent, StreamEnd, StreamEvent, SubscribeOptions, SubscribedEvent } from './subscription';
export { InventoryObserver } from './observer';
export type { InventorySnapshot, ObserveOptions, ObservedChange, ObserverHooks, ObserverPhase, ObserverRecovery, ObserverState, ObserverStats } from './observer';
export { LiveFeed } from './live-feed';
export type { FeedEvent, LiveFeedNotice, LiveFeedOptions } from './live-feed';
export { judgeResume, ResumePoint } from './resume';
export type { Recovery, RelistReason } from './resume';
export { applyChange, applyRenewal, asView, REMOVAL_KINDS } from './merge';
export type { ViewUpdate } from './merge';
export { defaultReconcileIntervalMs, RECONCILE_JITTER, RECONCILE_MAX_MS, RECONCILE_MIN_MS } from './reconcile';
export type { RetryPolicy } from './transport';
export type { Clock } from './runtime';
export type * from './types';
