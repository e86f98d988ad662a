/**
 * The engine's entry for HTTP and metrics (docs/design.md "Engine map"):
 * the engine and its services' types, and the few pure helpers the HTTP
 * layer shares with the engine (authorization by grant, request digests,
 * audit event types). HTTP imports this, core/errors.ts and core/model.ts,
 * nothing else of the engine (eslint.config.mjs).
 */

export * from './engine';
export type { ListPage, ListQuery } from './leases/inventory';
export type { Outcome } from './core/model';
export type { AcquireInput, ProofInput } from './leases/service';
export type { SessionBatch } from './leases/session-service';
export type { ForceEndRequest } from './leases/operator-service';
export type { AuditPage, AuditQuery } from './audit/service';
export { DEFAULT_EMBED_TOKENS_PER_CREATOR } from './tokens/service';
export type { HealthService, StatsService } from './stats';
export { AUDIT_EVENT_TYPES, type AuditEventType } from './audit/audit';
export { recordedText } from './core/idempotency';
export { correlationId, requestDigest } from './core/ids';
export { errorFields, silentLogger, type LogFields, type Logger } from './core/logger';
export type { EngineEvent } from './core/events';
export type { Json } from './core/views';
export type { FeedFrame, FeedSink } from './feed/feed';
export { checkFields, type PolicyFields } from './policies/policies';
export { ALL, authorize, authorizeAnyWrite, FAMILY_RE } from './tokens/tokens';
export { MAX_TICKET_CHARS } from './waiters/queue-tickets';
