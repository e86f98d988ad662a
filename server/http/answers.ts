/**
 * What the API answers (zod), written once: the route table types every
 * handler's answer with these schemas, so an answer cannot drift from its
 * description, and the OpenAPI document (docs/openapi.json) is generated
 * from them. Schemas carrying an `id` become named components.
 *
 * Answers may gain fields (clients ignore unknown ones), so these objects are
 * not strict; tests check that no undocumented field is sent.
 */

import { z } from 'zod';
import { CHANGE_KINDS, STORE_KINDS } from '@/lib/wire';
import { AUDIT_EVENT_TYPES, type Json } from '../engine';
import { ERROR_CODES } from '../engine/core/errors';

const time = z.iso.datetime().describe('RFC 3339 UTC time with milliseconds');
const count = z.number().int().min(0);
const token = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('Fencing token: grows with every grant of the route; present it with every write it guards');

/** Any JSON value (a checkpoint's value): recursive, so a named component refers to itself. */
export const JsonValue: z.ZodType<Json> = z
  .lazy(() => z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValue), z.record(z.string(), JsonValue)]))
  .meta({ id: 'JsonValue', description: 'Any JSON value' });

export const Metadata = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .describe('At most 16 keys of 1–64 characters from A-Z a-z 0-9 _ . -, string, number or boolean values, at most 1 KiB encoded');

export const ReleaseRequestView = z
  .object({ requested_at: time, reason: z.string(), token_id: z.string().describe('The token that asked') })
  // Inline, not a named component: a nullable reference (`anyOf` [$ref, null]) defeats some generated clients.
  .describe('A request that the holder release its lease (the newest replaces an earlier one)');

/** The session's pending release requests, in renew and keepalive answers. */
const PendingReleaseRequests = z
  .array(z.object({ route: z.string(), fencing_token: token, requested_at: time, reason: z.string() }).meta({ id: 'PendingReleaseRequest' }))
  .describe('Pending release requests of this session’s leases (empty when none)');

export const LeaseView = z
  .object({
    route: z.string().describe('lease://realm/area/resource'),
    owner_id: z.string(),
    holder_incarnation: z.string().describe('Identifies the holder’s session without revealing its secret id'),
    fencing_token: token,
    acquired_at: time,
    renewed_at: time,
    expires_at: time,
    max_expires_at: time,
    ttl_ms: count,
    remaining_ms: count,
    renewal_count: count,
    revision: count.describe('The revision of the change that created this lease'),
    metadata: Metadata.nullable(),
    waiters: count,
    release_request: ReleaseRequestView.nullable().describe('The pending release request, or null; it ends with the lease'),
  })
  .meta({ id: 'LeaseView', description: 'What observers see of a held lease: no session id, no lease id' });

export const HeldLease = LeaseView.extend({ lease_id: z.string().describe('Present it, with the fencing token, to renew, release or checkpoint') }).meta({
  id: 'HeldLease',
  description: 'What the holder gets back from acquire and renew: a LeaseView plus lease_id',
});

/** One item of a batched renew: renewed, with the lease, or lost (nothing changed for it). */
const RenewOutcome = z
  .union([
    z.object({ route: z.string(), code: z.literal('lease_renewed'), lease: HeldLease }).meta({ id: 'LeaseRenewedItem', description: 'The lease was renewed, as POST …/renew would have' }),
    z.object({ route: z.string(), code: z.literal('lease_lost') }).meta({ id: 'LeaseLostItem', description: 'The lease presented is not the route’s active lease: stop writing under it (nothing changed)' }),
  ])
  .meta({ id: 'SessionRenewResult', description: 'One item’s outcome; one item’s loss never fails another' });

export const SessionView = z
  .object({
    holder_incarnation: z.string(),
    owner_id: z.string(),
    ttl_ms: count,
    created_at: time,
    expires_at: time,
    lease_count: count,
  })
  .meta({ id: 'SessionView' });

export const ListedSession = SessionView.extend({
  last_batch_renewal: z
    .object({
      at: time,
      renewed: count.describe('Items renewed'),
      lost: count.describe('Items lost (lease_lost): nothing changed for them'),
    })
    .nullable()
    .describe('The session’s last batched renewal (POST /api/v1/sessions/renew; a replay is not another): when, how many items renewed, how many lost; null before the first'),
  last_batch_acquire: z
    .object({ at: time, acquired: count.describe('Leases acquired') })
    .nullable()
    .describe('The session’s last all-or-nothing acquire that acquired (POST /api/v1/sessions/acquire; a refusal changes nothing): when and how many leases; null before the first'),
}).meta({
  id: 'ListedSession',
  description: 'A SessionView plus the session’s last batched calls (CONTRACT §20), in the sessions list',
});

export const OpenedSession = SessionView.extend({ session_id: z.string().describe('The session’s secret: shown only here') }).meta({
  id: 'OpenedSession',
  description: 'A SessionView plus session_id, only in the answer to opening a session',
});

export const CheckpointWritten = z
  .object({ route: z.string(), fencing_token: token, written_at: time, version: z.number().int().min(1).describe('Starts at 1 and grows by 1 a write') })
  .meta({ id: 'CheckpointWritten' });

export const Checkpoint = CheckpointWritten.extend({ value: JsonValue }).meta({ id: 'Checkpoint' });

export const AuditEvent = z
  .object({
    id: z.string(),
    time,
    event_type: z.enum(AUDIT_EVENT_TYPES),
    family: z.string(),
    route: z.string().nullable().describe('The route; for policy_set and policy_delete, the policy’s selector'),
    token_id: z.string().nullable(),
    subject_token_id: z.string().nullable().optional().describe('The token a token event is about'),
    owner_id: z.string().nullable(),
    holder_incarnation: z.string().nullable(),
    result: z.string().describe('The answer’s code'),
    fencing_token: token.nullable(),
    reason: z.string().nullable(),
    correlation_id: z.string(),
    latency_ms: z.number().min(0),
    details: z
      .record(z.string(), JsonValue)
      .optional()
      .describe('What the event recorded besides its reason, when anything: for policy_set the policy’s values as set, for policy_delete the values it had (null: unset); for lease_force_release and lease_revoke the operator’s choices (close_session, lock_delay_ms); for the session_close a revoke made, revoke_of (the route); for an end of a lease that started a lock-delay (lease_force_release, lease_revoke, lease_expire, and lease_release with result session_closed), lock_delay_until (RFC 3339); for every end of a lease whose tenure was renewed, renewal_count; for a batched renew (lease_renew without a route, result session_renewed), items, renewed and lost'),
  })
  .meta({ id: 'AuditEvent' });

export const TokenInfo = z
  .object({
    token_id: z.string(),
    name: z.string(),
    family: z.string(),
    grants: z.array(z.string()),
    root: z.boolean(),
    created_at: time,
    expires_at: time.nullable(),
    kind: z.enum(['api', 'embed']).describe('`embed`: a read-only inventory token minted for the embeddable widget'),
    created_by: z.string().nullable().describe('The token that minted this one: revoking that one revokes this one too (null for the bootstrap token)'),
  })
  .meta({ id: 'TokenInfo' });

export const PolicyView = z
  .object({
    selector: z.string(),
    ttl_min_ms: count.nullable(),
    ttl_max_ms: count.nullable(),
    ttl_default_ms: count.nullable(),
    max_lifetime_ms: count.nullable(),
    lock_delay_ms: count.nullable(),
    max_waiters: count.nullable(),
    updated_at: time,
    updated_by: z.string().describe('The token id that set it'),
  })
  .meta({ id: 'Policy', description: 'A family’s rule for the routes its selector matches (null: the global limit applies)' });

const PolicyLimits = z
  .object({
    ttl_min_ms: count,
    ttl_max_ms: count,
    ttl_default_ms: count,
    max_lifetime_ms: count.describe('The cap a requested max_lifetime_ms is clamped to'),
    max_lifetime_default_ms: count.describe('What an acquire without max_lifetime_ms gets'),
    lock_delay_ms: count,
    max_waiters: count,
  })
  .meta({ id: 'PolicyLimits', description: 'The bounds a route’s leases get' });

const nextCursor = z.string().nullable().describe('Pass it as `cursor` for the next page; null on the last page');

/** Answer payloads by operation: what each handler returns, before the envelope. */
export const Answers = {
  session_open: z.object({ session: OpenedSession }),
  session_keepalive: z.object({ session: SessionView, release_requests: PendingReleaseRequests }),
  session_close: z.object({ released: count.describe('How many leases closing released') }),
  session_renew: z.object({
    session: SessionView.describe('The session as the renewal’s keepalive left it'),
    results: z.array(RenewOutcome).describe('One per item, in the request’s order'),
    release_requests: PendingReleaseRequests,
  }),
  session_acquire: z.object({ leases: z.array(HeldLease).describe('One per route, in the request’s order, each with its own fencing token') }),
  session_list: z.object({ items: z.array(ListedSession), next_cursor: nextCursor }),
  lease_list: z.object({
    items: z.array(LeaseView),
    next_cursor: nextCursor,
    revision: count.describe('The revision at which the page was read'),
    epoch: z.string(),
  }),
  lease_summary: z.object({
    total: count.describe('Matching leases counted: all of them when `exact`, else a lower bound'),
    exact: z.boolean().describe('False when the count stopped at the per-read budget of examined routes before the range ended'),
    examined: count.describe('Routes examined'),
    owners: z
      .array(z.object({ owner_id: z.string(), leases: count }))
      .describe('The owners holding the most matching leases (at most 10), most first, ties by owner id'),
    others: count.describe('Matching leases of the owners not named'),
    owner_count: count.describe('Distinct owners counted'),
  }),
  lock_delay_list: z.object({
    items: z.array(
      z.object({
        route: z.string(),
        lock_delay_until: time.describe('Until then the route accepts no new holder'),
        remaining_ms: count,
      }),
    ),
    next_cursor: nextCursor,
  }),
  lease_inspect: z.object({ lease: LeaseView }),
  lease_acquire: z.object({ lease: HeldLease, queued: z.boolean().describe('True when the grant came after waiting in the route’s queue') }),
  lease_renew: z.object({ lease: HeldLease, release_requests: PendingReleaseRequests }),
  lease_release: z.object({ route: z.string(), fencing_token: token }),
  checkpoint_write: z.object({ checkpoint: CheckpointWritten }),
  checkpoint_read: z.object({ checkpoint: Checkpoint }),
  login: z.object({ token_id: z.string(), name: z.string(), family: z.string(), expires_at: time }),
  logout: z.object({}),
  whoami: z.object({ token_id: z.string(), name: z.string(), family: z.string(), grants: z.array(z.string()), root: z.boolean() }),
  token_create: z.object({ token_id: z.string(), token: z.string().describe('The secret, shown once'), family: z.string() }),
  token_list: z.object({ items: z.array(TokenInfo) }),
  token_revoke: z.object({}),
  lease_force_release: z.object({ route: z.string(), fencing_token: token }),
  lease_revoke: z.object({ route: z.string(), fencing_token: token, sessions_closed: z.literal([0, 1]) }),
  lease_release_request: z.object({ route: z.string(), fencing_token: token, release_request: ReleaseRequestView }),
  embed_token_create: z.object({ token_id: z.string(), token: z.string().describe('The secret, shown once'), expires_at: time }),
  policy_set: z.object({ policy: PolicyView }),
  policy_delete: z.object({}),
  policy_list: z.object({ items: z.array(PolicyView) }),
  policy_effective: z.object({ policy: PolicyView.nullable(), limits: PolicyLimits }),
  audit_list: z.object({ items: z.array(AuditEvent), next_cursor: nextCursor }),
  feed_subscribe: z.object({ subscription_id: z.string(), selector: z.string(), created: z.boolean() }),
  feed_unsubscribe: z.object({}),
  metrics_summary: z.object({
    window_s: z.number().int().min(1),
    step_s: z.number().int().min(1),
    series: z
      .record(z.string(), z.array(z.tuple([z.number(), z.number()])))
      .describe('By name: [unix time in ms, value] points, one per step_s'),
  }),
  /** A stream's answer is the SSE body, not JSON; its events are `FeedEvents`. */
  feed_open: z.object({}),
} as const;

export type Operation = keyof typeof Answers;

export const HealthOk = z
  .object({ status: z.literal('ok'), store: z.enum(STORE_KINDS), epoch: z.string(), version: z.string(), uptime_ms: count })
  .meta({ id: 'Health', description: 'A plain body for load balancers, not the envelope' });
export const HealthUnavailable = z
  .object({ status: z.literal('unavailable'), store: z.enum(STORE_KINDS) })
  .meta({ id: 'HealthUnavailable' });
export const HealthLive = z.object({ status: z.literal('ok'), uptime_ms: count }).meta({ id: 'HealthLive', description: 'The process runs (a liveness probe)' });
const readinessChecks = z.object({
  store: z.enum(['ok', 'unavailable']),
  /** `mismatch`: the store's schema is not the one this build migrates to; `unknown` while the store does not answer. */
  schema: z.enum(['ok', 'mismatch', 'unknown']),
  draining: z.boolean(),
});
/** Why a serving instance is degraded (CONTRACT §19). */
export const DegradedReason = z
  .object({
    reason: z.enum(['no_space', 'backlog']).describe('`no_space`: the disk is full (reads served, writes refused with backend_unavailable); `backlog`: the expiry sweeper is more than 5 s behind a family’s due work'),
    family: z.string().optional().describe('`backlog`: the family'),
    due: z.number().int().min(0).optional().describe('`backlog`: leases still to end (counted up to 1,000,000)'),
    behind_ms: z.number().int().min(0).optional().describe('`backlog`: how long its oldest due work has waited'),
  })
  .meta({ id: 'DegradedReason', description: 'Why a serving instance is degraded (CONTRACT §19); one flat object so typed clients keep every field' });
export const HealthReady = z
  .object({
    status: z.enum(['ready', 'degraded']).describe('`degraded`: serving, with the `reasons` listed'),
    store: z.enum(STORE_KINDS),
    checks: readinessChecks,
    reasons: z.array(DegradedReason).optional().describe('Present when `degraded`'),
  })
  .meta({ id: 'HealthReady', description: 'Send this instance traffic' });
export const HealthNotReady = z
  .object({ status: z.enum(['unavailable', 'draining']), store: z.enum(STORE_KINDS), checks: readinessChecks })
  .meta({ id: 'HealthNotReady', description: '`draining`: a graceful shutdown began; `unavailable`: the store does not answer or its schema does not match' });

// ---- the live inventory feed (text/event-stream) ------------------------------

/** The data of each SSE event type, by event name. */
export const FeedEvents = {
  hello: z
    .object({
      stream_id: z.string(),
      epoch: z.string(),
      revision: count,
      heartbeat_ms: z.number().int().min(1),
      resumed: z.boolean().optional().describe('Only on a stream opened with `since` or `Last-Event-ID`: true when a replay follows (even an empty one), false when `resync` does'),
    })
    .meta({ id: 'FeedHello', description: '`event: hello`, first on every stream' }),
  subscribed: z
    .object({ subscription_id: z.string(), selector: z.string(), created: z.boolean() })
    .meta({ id: 'FeedSubscribed', description: '`event: subscribed`, once per registration' }),
  change: z
    .object({
      subscription_id: z.string(),
      route: z.string(),
      change: z.enum(CHANGE_KINDS),
      queued: z.boolean().optional().describe('acquired only'),
      revision: count,
      lease: LeaseView.optional().describe('acquired only'),
    })
    .meta({ id: 'FeedChange', description: '`event: change` with `id: <revision>`' }),
  renewed: z
    .object({ subscription_id: z.string(), route: z.string(), expires_at: time, renewal_count: count })
    .meta({ id: 'FeedRenewed', description: '`event: renewed`, only to registrations that asked for renewal hints' }),
  release_requested: z
    .object({ subscription_id: z.string(), route: z.string(), fencing_token: token, reason: z.string(), requested_at: time })
    .meta({ id: 'FeedReleaseRequested', description: '`event: release_requested` (no `id`: not a change), to every registration matching the route' }),
  resync: z
    .object({ reason: z.enum(['horizon', 'epoch', 'too_many']), revision: count })
    .meta({
      id: 'FeedResync',
      description:
        '`event: resync`: a resuming stream could not be replayed (`horizon`: `since` is older than the change log keeps; `epoch`: beyond the current revision, or not a revision; `too_many`: more than 10,000 events). First after `hello` and the `subscribed` events; the stream stays open and live: relist, and apply the changes that follow',
    }),
  overflow: z
    .object({ reason: z.enum(['slow_consumer', 'resync']) })
    .meta({ id: 'FeedOverflow', description: '`event: overflow`: the server then closes the stream; relist and reopen' }),
  closed: z
    .object({ reason: z.enum(['token_revoked', 'token_expired', 'logged_out', 'shutdown']) })
    .meta({ id: 'FeedClosed', description: '`event: closed`: the last event of a stream the server ends' }),
} as const;

// ---- errors ---------------------------------------------------------------------

export const ErrorBody = z
  .object({
    status: z.literal('error'),
    code: z.enum(ERROR_CODES),
    message: z.string().describe('For people: never a stack trace, a backend message or a secret'),
    correlation_id: z.string(),
    retryable: z.boolean(),
    retry_after_ms: count.optional().describe('When to retry, when the server knows'),
    lock_delay_until: time.optional().describe('The route is in lock-delay until then (an acquire refused by it, inspect of a free route in it)'),
    held: z
      .array(z.string())
      .optional()
      .describe('An all-or-nothing acquire (`POST /api/v1/sessions/acquire`) refused with `lease_conflict`: the routes that were held or in lock-delay, in the request’s order; nothing was acquired'),
    queue_ticket: z
      .string()
      .optional()
      .describe('An acquire whose wait ended without a grant (`lease_conflict`): its place in the route’s queue is kept 5 s more for an acquire of the same session and route carrying this ticket'),
  })
  .meta({ description: 'The error envelope' });
