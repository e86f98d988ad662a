/**
 * Request schemas (zod), strict: unknown fields are rejected. The same
 * schemas generate the OpenAPI document, so the contract is written once.
 * Limits are docs/semantics.md §13's.
 */

import { z } from 'zod';
import { parseGrant } from '@/lib/grants';
import { codePoints, identifierProblem } from '@/lib/identifiers';
import { inRange, LIMITS, SESSION_BATCH, type LimitRow } from '@/lib/limits';
import { parseRoute } from '@/lib/selector';
import { AUDIT_EVENT_TYPES, FAMILY_RE, MAX_TICKET_CHARS } from '../engine';
import { JsonValue } from './answers';

/**
 * 1–128 Unicode code points, none that spoofs how the name reads (owner_id,
 * token names): lib/identifiers.ts.
 */
const displayName = z
  .string()
  .refine((s) => { const n = codePoints(s); return n >= 1 && n <= 128; }, 'must be 1 to 128 characters')
  .superRefine((s, ctx) => {
    const problem = identifierProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const requestId = z.string().regex(/^[!-~]{1,128}$/, 'must be 1 to 128 visible ASCII characters');
export const sessionId = z.string().min(1).max(256);
export const fencingToken = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
/** An integer inside one row of lib/limits.ts. */
const limited = (row: LimitRow) => z.number().int().min(row.min).max(row.max);
const leaseTtl = limited(LIMITS.leaseTtlMs);
const sessionTtl = limited(LIMITS.sessionTtlMs);
export const maxLifetime = limited(LIMITS.maxLifetimeMs);
export const waitMs = limited(LIMITS.waitMs);

const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
export const metadata = z
  .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
  .superRefine((m, ctx) => {
    const keys = Object.keys(m);
    if (keys.length > 16) ctx.addIssue({ code: 'custom', message: 'at most 16 keys' });
    for (const k of keys) {
      const problem = identifierProblem(k);
      if (problem) ctx.addIssue({ code: 'custom', message: `a key ${problem}` });
      else if (!METADATA_KEY.test(k)) ctx.addIssue({ code: 'custom', message: `key ${JSON.stringify(k.slice(0, 70))} must be 1 to 64 characters from A-Z a-z 0-9 _ . -` });
      const v = m[k];
      if (typeof v === 'number' && !Number.isFinite(v)) ctx.addIssue({ code: 'custom', message: `value of ${k} must be finite` });
    }
    if (Buffer.byteLength(JSON.stringify(m)) > 1024) ctx.addIssue({ code: 'custom', message: 'at most 1 KiB encoded' });
  });

export const OpenSessionBody = z.strictObject({ owner_id: displayName, ttl_ms: sessionTtl.optional() });
export const SessionIdBody = z.strictObject({ session_id: sessionId });

export const AcquireBody = z.strictObject({
  session_id: sessionId,
  request_id: requestId,
  ttl_ms: leaseTtl.optional(),
  max_lifetime_ms: maxLifetime.optional(),
  wait_ms: waitMs.optional(),
  metadata: metadata.optional(),
  queue_ticket: z
    .string()
    .min(1)
    .max(MAX_TICKET_CHARS)
    .optional()
    .describe('Continue the queue place of an earlier acquire of this session for this route whose wait ended without a grant (its `lease_conflict` answer’s `queue_ticket`, kept 5 s); one whose place lapsed queues at the back'),
});

/** What a holder presents to renew, release or checkpoint: the exact lease. */
const holderProof = {
  session_id: sessionId,
  request_id: requestId,
  lease_id: z.string().min(1).max(128),
  fencing_token: fencingToken,
};

export const RenewBody = z.strictObject({ ...holderProof, ttl_ms: leaseTtl.optional() });

/** A route in a body (a batched call's item): the grammar's, never normalized; a wildcard is refused. */
const bodyRoute = z
  .string()
  .max(400)
  .superRefine((s, ctx) => {
    const r = parseRoute(s);
    if (!r.ok) ctx.addIssue({ code: 'custom', message: `route ${r.reason}` });
  })
  .describe('lease://realm/area/resource');

/** A batch names each route once: which of two items for one route should win is not the server's guess. */
function distinctRoutes(items: ReadonlyArray<{ route: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.route)) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(item.route.slice(0, 420))} appears more than once`, path: [i, 'route'] });
    seen.add(item.route);
  });
}

/** `POST /api/v1/sessions/renew` (docs/design.md "Batched calls"): each item is a renew's proof and TTL. */
export const SessionRenewBody = z.strictObject({
  session_id: sessionId,
  request_id: requestId,
  leases: z
    .array(z.strictObject({ route: bodyRoute, lease_id: holderProof.lease_id, fencing_token: fencingToken, ttl_ms: leaseTtl.optional() }))
    .min(1, 'must name at least one lease')
    .max(SESSION_BATCH.renewItems, `at most ${SESSION_BATCH.renewItems} leases a request`)
    .superRefine(distinctRoutes)
    .describe(`1 to ${SESSION_BATCH.renewItems} leases of the session, each route at most once; each renewed as POST …/renew would (ttl_ms absent: the lease’s own)`),
});

/** `POST /api/v1/sessions/acquire` (docs/design.md "Batched calls"): each item is an acquire's terms; it never waits (no `wait_ms`). */
export const SessionAcquireBody = z.strictObject({
  session_id: sessionId,
  request_id: requestId,
  leases: z
    .array(z.strictObject({ route: bodyRoute, ttl_ms: leaseTtl.optional(), max_lifetime_ms: maxLifetime.optional(), metadata: metadata.optional() }))
    .min(1, 'must name at least one route')
    .max(SESSION_BATCH.acquireItems, `at most ${SESSION_BATCH.acquireItems} routes a request`)
    .superRefine(distinctRoutes)
    .describe(`1 to ${SESSION_BATCH.acquireItems} routes, each at most once, all granted or none; no wait_ms: waiting for several routes is how deadlocks start`),
});
export const ReleaseBody = z.strictObject(holderProof);
export const CheckpointBody = z.strictObject({ ...holderProof, value: JsonValue });

/**
 * Grants and family are checked here, with the rest of the body, because
 * docs/semantics.md "The wire" orders body validation before the permission check for token
 * creation: a malformed grant is 400 even next to one the creator may not give.
 */
export const CreateTokenBody = z.strictObject({
  name: displayName,
  grants: z
    .array(
      z
        .string()
        .max(512)
        .refine((g) => parseGrant(g).ok, 'must be selector#permission (read, write or admin) with a valid selector'),
    )
    .min(1)
    .max(64),
  expires_at: z.iso.datetime({ offset: false }).optional(),
  family: z.string().regex(FAMILY_RE, 'must match [a-z0-9][a-z0-9-]{0,62}').optional(),
  root: z.boolean().optional(),
});

/** An operator's reason: 10–500 characters; line breaks and tabs allowed, other control characters not. */
export const reason = z
  .string()
  .refine((s) => [...s].length >= 10 && [...s].length <= 500, 'must be 10 to 500 characters')
  .refine((s) => !/[^\P{Cc}\n\t]/u.test(s), 'must not contain control characters other than line breaks and tabs');

/** An operator's cap on the lock-delay the end starts (0 skips it; it never lengthens it). */
const lockDelayMs = limited(LIMITS.lockDelayMs);
export const ForceReleaseBody = z.strictObject({ request_id: requestId, reason, expected_fencing_token: fencingToken, lock_delay_ms: lockDelayMs.optional() });
export const ReleaseRequestBody = z.strictObject({ request_id: requestId, reason, expected_fencing_token: fencingToken });
export const RevokeBody = z.strictObject({
  request_id: requestId,
  reason,
  expected_fencing_token: fencingToken,
  close_session: z.boolean().optional(),
  lock_delay_ms: lockDelayMs.optional(),
});

/** A policy's fields: ranges here, consistency (min ≤ default ≤ max) in the engine; absent means the global limit. */
const ms = z.number().int().min(0).max(86_400_000);
export const PolicyBody = z.strictObject({
  selector: z.string().max(1_024),
  reason,
  ttl_min_ms: ms.nullable().optional(),
  ttl_max_ms: ms.nullable().optional(),
  ttl_default_ms: ms.nullable().optional(),
  max_lifetime_ms: ms.nullable().optional(),
  lock_delay_ms: ms.nullable().optional(),
  max_waiters: z.number().int().min(0).max(LIMITS.waitersPerRoute.max).nullable().optional(),
});
export const PolicyDeleteQuery = z.strictObject({ selector: z.string().max(1_024), reason });
export const PolicyListQuery = z.strictObject({ selector: z.string().max(1_024).optional() });

/** The selector is checked against the grammar (`invalid_selector`) by the engine, with the permission. */
export const EmbedTokenBody = z.strictObject({
  selector: z.string().max(1_024),
  ttl_ms: limited(LIMITS.embedTokenTtlMs).optional(),
});

export const LoginBody = z.strictObject({ token: z.string().min(1).max(512) });

/** An empty body (or `{}`) for calls that take none. */
export const EmptyBody = z.strictObject({});

/** A whole number in a query parameter, inside one row of lib/limits.ts (at most four digits). */
const queryInt = (row: LimitRow) =>
  z
    .string()
    .regex(/^[0-9]{1,4}$/, `must be an integer from ${row.min} to ${row.max}`)
    .transform(Number)
    .pipe(z.number().int().min(row.min, `must be at least ${row.min}`).max(row.max, `must be at most ${row.max}`));

const limit = queryInt(LIMITS.pageItems);

/** A yes/no query filter: `true` or `false`, nothing else. */
const onlyIf = z.enum(['true', 'false']).transform((v) => v === 'true');

/** LIST's filters (docs/api.md): bound into its cursor, and the summary's too. */
const leaseFilters = {
  selector: z.string(),
  owner_id: displayName.optional(),
  holder_incarnation: z.string().min(1).max(64).optional(),
  expires_within_ms: z
    .string()
    .regex(/^[0-9]{1,7}$/, 'must be an integer from 1 to 3600000')
    .transform(Number)
    .pipe(z.number().int().min(1, 'must be at least 1').max(3_600_000, 'must be at most 3600000'))
    .optional()
    .describe('"Expiring soon": only leases expiring at most this many milliseconds after the read (1 to 3600000)'),
  with_waiters: onlyIf.optional().describe('`true`: only leases whose route has clients queued'),
  release_requested: onlyIf.optional().describe('`true`: only leases with a pending release request'),
};

export const ListLeasesQuery = z.strictObject({
  ...leaseFilters,
  limit: limit.optional(),
  cursor: z.string().min(1).max(4096).optional(),
});

export const LeaseSummaryQuery = z.strictObject(leaseFilters);

export const ListLockDelaysQuery = z.strictObject({
  selector: z.string(),
  limit: limit.optional(),
  cursor: z.string().min(1).max(4096).optional(),
});

export const ListSessionsQuery = z.strictObject({
  owner_id: displayName.optional(),
  limit: limit.optional(),
  cursor: z.string().min(1).max(4096).optional(),
});

export const AuditQuery = z.strictObject({
  /** A route or selector (default every route). A policy event's route is its selector: only that exact selector string (or every route) finds it. */
  route: z.string().optional(),
  event_type: z.enum(AUDIT_EVENT_TYPES).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  limit: limit.optional(),
  cursor: z.string().min(1).max(4096).optional(),
  /** `oldest`: oldest first, for one exact route (the lease timeline); default newest first. */
  order: z.enum(['newest', 'oldest']).optional(),
});

/** The summary's window: 1 to 900 seconds (the history's length). */
export const MetricsSummaryQuery = z.strictObject({
  window_s: queryInt(LIMITS.metricsWindowS).optional(),
});

export const ListTokensQuery = z.strictObject({ family: z.string().regex(FAMILY_RE, 'must match [a-z0-9][a-z0-9-]{0,62}').optional() });
export const NoQuery = z.strictObject({});

/** `renewals` as a query flag. */
const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');

/** Opening a stream: `selector` may repeat (zero or more registrations). */
/** A revision as text: a non-negative whole number, no sign, no leading zero. */
export const REVISION_RE = /^(0|[1-9][0-9]{0,15})$/;

export const StreamQuery = z.strictObject({
  selector: z.array(z.string()).optional(),
  renewals: flag.optional(),
  since: z
    .string()
    .regex(REVISION_RE, 'must be a revision (a non-negative integer)')
    .transform(Number)
    .refine(Number.isSafeInteger, 'must be a revision (a non-negative integer)')
    .optional()
    .describe('Resume after this revision (the `id` of the last change applied): the matching changes after it are replayed before live events. Wins over `Last-Event-ID`'),
});

export const SubscribeBody = z.strictObject({
  selector: z.string().max(1024),
  renewals: z.boolean().optional(),
});

// ---- fast paths ---------------------------------------------------------------

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const REQUEST_ID_RE = /^[!-~]{1,128}$/;
const str = (v: unknown, min: number, max: number) => typeof v === 'string' && v.length >= min && v.length <= max;
const int = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;

/** Every own key is one of `allowed`: strictObject's rule. */
function onlyKeys(o: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const k in o) if (!Object.hasOwn(o, k) || !allowed.has(k)) return false;
  return true;
}

const ACQUIRE_KEYS: ReadonlySet<string> = new Set(['session_id', 'request_id', 'ttl_ms', 'max_lifetime_ms', 'wait_ms']);
const PROOF_KEYS: ReadonlySet<string> = new Set(['session_id', 'request_id', 'lease_id', 'fencing_token']);
const RENEW_KEYS: ReadonlySet<string> = new Set([...PROOF_KEYS, 'ttl_ms']);
const NO_KEYS: ReadonlySet<string> = new Set();

const SESSION_RENEW_KEYS: ReadonlySet<string> = new Set(['session_id', 'request_id', 'leases']);
const RENEW_ITEM_KEYS: ReadonlySet<string> = new Set(['route', 'lease_id', 'fencing_token', 'ttl_ms']);

/** A batched renew's items: 1 to the limit, each a proof and TTL of a concrete route, no route twice (SessionRenewBody). */
function renewItemsOk(items: unknown): boolean {
  if (!Array.isArray(items) || items.length < 1 || items.length > SESSION_BATCH.renewItems) return false;
  const seen = new Set<string>();
  for (const item of items) {
    if (!isRecord(item) || !onlyKeys(item, RENEW_ITEM_KEYS)) return false;
    const route = item.route;
    if (typeof route !== 'string' || route.length > 400 || seen.has(route) || !parseRoute(route).ok) return false;
    seen.add(route);
    if (!str(item.lease_id, 1, 128) || !int(item.fencing_token, 1, Number.MAX_SAFE_INTEGER)) return false;
    if (item.ttl_ms !== undefined && !inRange(LIMITS.leaseTtlMs, item.ttl_ms)) return false;
  }
  return true;
}

function proofOk(o: Record<string, unknown>): boolean {
  return str(o.session_id, 1, 256) && typeof o.request_id === 'string' && REQUEST_ID_RE.test(o.request_id) && str(o.lease_id, 1, 128) && int(o.fencing_token, 1, Number.MAX_SAFE_INTEGER);
}

/**
 * Hand-written checks for the bodies and queries of the hot calls (acquire,
 * renew, release, the batched renew, the empty query): true only for a
 * value the schema accepts and would return unchanged, so the router may
 * skip zod for it. Anything else (metadata, any fault) goes through the
 * schema, which also words the refusal. server/http/fast-paths.test.ts
 * holds them to the schemas.
 */
export const FAST_PATHS: ReadonlyMap<z.ZodType, (v: unknown) => boolean> = new Map<z.ZodType, (v: unknown) => boolean>([
  [
    AcquireBody,
    (v) =>
      isRecord(v) &&
      onlyKeys(v, ACQUIRE_KEYS) &&
      str(v.session_id, 1, 256) &&
      typeof v.request_id === 'string' &&
      REQUEST_ID_RE.test(v.request_id) &&
      (v.ttl_ms === undefined || inRange(LIMITS.leaseTtlMs, v.ttl_ms)) &&
      (v.max_lifetime_ms === undefined || inRange(LIMITS.maxLifetimeMs, v.max_lifetime_ms)) &&
      (v.wait_ms === undefined || inRange(LIMITS.waitMs, v.wait_ms)),
  ],
  [ReleaseBody, (v) => isRecord(v) && onlyKeys(v, PROOF_KEYS) && proofOk(v)],
  [RenewBody, (v) => isRecord(v) && onlyKeys(v, RENEW_KEYS) && proofOk(v) && (v.ttl_ms === undefined || inRange(LIMITS.leaseTtlMs, v.ttl_ms))],
  [
    SessionRenewBody,
    (v) => isRecord(v) && onlyKeys(v, SESSION_RENEW_KEYS) && str(v.session_id, 1, 256) && typeof v.request_id === 'string' && REQUEST_ID_RE.test(v.request_id) && renewItemsOk(v.leases),
  ],
  [NoQuery, (v) => isRecord(v) && onlyKeys(v, NO_KEYS)],
  [EmptyBody, (v) => isRecord(v) && onlyKeys(v, NO_KEYS)],
]);
