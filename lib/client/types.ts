/**
 * The API's views, exactly as they travel (docs/semantics.md "The wire"): the SDK hands
 * them over unchanged, so a field keeps one name from the wire to the console.
 * Options and handles, which are the SDK's own, are camelCase.
 */

import type { LeaseView, Metadata, SessionView, StoreKind } from '../wire';

// The lease and session views are the wire's own (lib/wire), declared once for the server, the SDK and the console.
export type { HeldLease, LeaseView, Metadata, ReleaseRequest, SessionView } from '../wire';

/** A pending release request of one of the session's leases, as renew and keepalive answers list them. */
export interface PendingReleaseRequest {
  readonly route: string;
  readonly fencing_token: number;
  readonly requested_at: string;
  readonly reason: string;
}

export interface LeasePage {
  readonly items: readonly LeaseView[];
  readonly next_cursor: string | null;
  /** The revision at which the page was read. */
  readonly revision: number;
  readonly epoch: string;
}

/** How many held leases match a selector and LIST's filters, and who holds them (GET /api/v1/leases/summary). */
export interface LeaseSummary {
  /** Matching leases counted: all of them when `exact`, else a lower bound. */
  readonly total: number;
  /** False when the server stopped at its per-read budget of examined routes. */
  readonly exact: boolean;
  readonly examined: number;
  /** The owners holding the most matching leases (at most 10), most first. */
  readonly owners: ReadonlyArray<{ readonly owner_id: string; readonly leases: number }>;
  /** Matching leases of the owners not named. */
  readonly others: number;
  readonly owner_count: number;
}

/** A free route that accepts no new holder until `lock_delay_until`. */
export interface LockDelayView {
  readonly route: string;
  readonly lock_delay_until: string;
  readonly remaining_ms: number;
}

export interface LockDelayPage {
  readonly items: readonly LockDelayView[];
  readonly next_cursor: string | null;
}

/** A session as the sessions list shows it: its last batched calls too (docs/semantics.md, sessions). */
export interface ListedSession extends SessionView {
  /** The session's last batched renewal (POST /api/v1/sessions/renew), or null. */
  readonly last_batch_renewal: { readonly at: string; readonly renewed: number; readonly lost: number } | null;
  /** The session's last all-or-nothing acquire that granted (POST /api/v1/sessions/acquire), or null. */
  readonly last_batch_acquire: { readonly at: string; readonly acquired: number } | null;
}

export interface SessionPage {
  readonly items: readonly ListedSession[];
  readonly next_cursor: string | null;
}

export interface Checkpoint {
  readonly route: string;
  readonly value: unknown;
  readonly fencing_token: number;
  readonly written_at: string;
  readonly version: number;
}

export type CheckpointWritten = Omit<Checkpoint, 'value'>;

export type Permission = 'read' | 'write' | 'admin';

export interface Whoami {
  readonly token_id: string;
  readonly name: string;
  readonly family: string;
  readonly grants: readonly string[];
  readonly root: boolean;
}

export interface TokenInfo {
  readonly token_id: string;
  readonly name: string;
  readonly family: string;
  readonly grants: readonly string[];
  readonly root: boolean;
  readonly created_at: string;
  readonly expires_at: string | null;
  /** `embed`: a read-only inventory token minted for the embeddable widget. */
  readonly kind: 'api' | 'embed';
  /** The token that minted this one: revoking that one revokes this one too. */
  readonly created_by: string | null;
}

export interface CreatedToken {
  readonly token_id: string;
  readonly token: string;
  readonly family: string;
}

export interface CreatedEmbedToken {
  readonly token_id: string;
  readonly token: string;
  readonly expires_at: string;
}

export type AuditEventType =
  | 'session_open'
  | 'session_close'
  | 'session_expire'
  | 'lease_acquire'
  | 'lease_renew'
  | 'lease_release'
  | 'lease_expire'
  | 'lease_checkpoint'
  | 'lease_force_release'
  | 'lease_revoke'
  | 'lease_release_request'
  | 'token_create'
  | 'token_revoke'
  | 'embed_token_create'
  | 'access_denied'
  | 'policy_set'
  | 'policy_delete';

export interface AuditEvent {
  readonly id: string;
  readonly time: string;
  readonly event_type: AuditEventType;
  readonly family: string;
  readonly route: string | null;
  readonly token_id: string | null;
  readonly owner_id: string | null;
  readonly holder_incarnation: string | null;
  readonly result: string;
  readonly fencing_token: number | null;
  readonly reason: string | null;
  readonly correlation_id: string;
  readonly latency_ms: number;
  /** The token a token event is about (an extension of AuditEvent; see docs/design.md). */
  readonly subject_token_id?: string | null;
  /** What the event recorded besides the reason: a policy's values, an operator's choices (`close_session`, `lock_delay_ms`), the route a session was closed for (`revoke_of`), the lock-delay an end of a lease started (`lock_delay_until`). */
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface AuditPage {
  readonly items: readonly AuditEvent[];
  readonly next_cursor: string | null;
}

export interface Health {
  readonly status: 'ok' | 'unavailable';
  readonly store: StoreKind;
  readonly epoch?: string;
  readonly version?: string;
  readonly uptime_ms?: number;
}

/** The per-family series of the metrics summary: rates per second, the others gauges sampled each second. */
export type MetricsFamilySeries =
  | 'acquisitions_per_s'
  | 'conflicts_per_s'
  | 'releases_per_s'
  | 'active_leases'
  | 'active_sessions'
  | 'waiters'
  | 'notifications_per_s'
  | 'notifications_dropped_per_s';

/** One point of a metrics series: `[unix time in ms, value]`, one per `step_s`. */
export type MetricsPoint = [number, number];

/**
 * `GET /api/v1/metrics/summary` (docs/operations.md "Metrics"): the last
 * `window_s` seconds of the caller's family's series, the current second
 * included as it stands, and request latency per operation (instance-wide)
 * as `latency_p50_ms.<operation>` and `latency_p99_ms.<operation>`, with a
 * point only for the seconds that had requests.
 */
export interface MetricsSummary {
  readonly window_s: number;
  readonly step_s: number;
  /** By name: every `MetricsFamilySeries`, then the latency series of each operation seen in the window. */
  readonly series: Readonly<Record<string, MetricsPoint[]>>;
}

/** Change kinds of the feed (docs/semantics.md §8). */
export type { ChangeKind, StoreKind } from '../wire';

/** A family's rule for the routes its selector matches (null: the global limit applies). See docs/policies.md. */
export interface Policy {
  readonly selector: string;
  readonly ttl_min_ms: number | null;
  readonly ttl_max_ms: number | null;
  readonly ttl_default_ms: number | null;
  readonly max_lifetime_ms: number | null;
  readonly lock_delay_ms: number | null;
  readonly max_waiters: number | null;
  readonly updated_at: string;
  readonly updated_by: string;
}

/** Which policy applies to a route, and the bounds its leases get. */
export interface EffectivePolicy {
  readonly policy: Policy | null;
  readonly limits: {
    readonly ttl_min_ms: number;
    readonly ttl_max_ms: number;
    readonly ttl_default_ms: number;
    /** The cap a requested max_lifetime_ms is clamped to. */
    readonly max_lifetime_ms: number;
    /** What an acquire without max_lifetime_ms gets. */
    readonly max_lifetime_default_ms: number;
    readonly lock_delay_ms: number;
    readonly max_waiters: number;
  };
}

/** One route of `session.acquireAll`: the route alone, or the route with its own terms (which override the call's). */
export type AcquireAllRoute =
  | string
  | {
      readonly route: string;
      /** 1 s to 600 s; the call's `ttlMs`, else the server's default (30 s), when omitted. */
      readonly ttlMs?: number | undefined;
      readonly maxLifetimeMs?: number | undefined;
      readonly metadata?: Readonly<Metadata> | undefined;
    };

/** Options of `session.acquireAll` (all or nothing; it never waits). */
export interface AcquireAllOptions {
  /** Every route's TTL unless its entry gives one: 1 s to 600 s; the server's default (30 s) when omitted. */
  ttlMs?: number | undefined;
  maxLifetimeMs?: number | undefined;
  metadata?: Readonly<Metadata> | undefined;
  /** Abandons the call (its outcome is then unknown; a granted batch expires with its TTL, or with the session). */
  signal?: AbortSignal | undefined;
}
