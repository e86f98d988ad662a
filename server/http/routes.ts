/**
 * The route table: one entry per API call, each with its schemas, its
 * permission check (run before the body is read, as the contract orders) and
 * a thin handler that calls the engine and names the success code.
 */

import type { z } from 'zod';
import type { ParsedSelector, Triple } from '@/lib/selector';
import { CHECKPOINT_VALUE_BYTES, LIMITS } from '@/lib/limits';
import { requestDigest, ALL, authorize, authorizeAnyWrite, checkFields, type LeaseEngine, type PolicyFields } from '../engine';
import type { Caller, Outcome } from '../engine/core/model';
import { fail, type ErrorCode } from '../engine/core/errors';
import type { Permission } from '@/lib/grants';
import { routeSegments, parseSelector } from '@/lib/selector';
import type { Answers, Operation } from './answers';
import * as S from './schemas';
import type { SseSink } from './sse';
import type { MetricsCollector } from '../metrics/collector';
import { LOGIN_COOKIE } from './credentials';

/** A request's query parameters or body: always an object (a body's schema is a strict object). */
type Fields = Record<string, unknown>;

/** A request schema: what it returns is `Fields`. */
type Schema = z.ZodType<Fields>;

/**
 * A request as its handler sees it: `body` and `query` are what the route's
 * schemas returned (`z.output`), so no handler casts them.
 */
export interface ApiRequest<B = Fields, Q = Fields> {
  method: string;
  params: Record<string, string>;
  query: Q;
  body: B;
  /** The authenticated principal, with this request's correlation id and start time. */
  principal: Caller;
  /** The route from the path, validated (lease paths only). */
  route: string;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
  /** The console login cookie's secret, when the request carried one. */
  loginCookie: string | undefined;
  /** The `Last-Event-ID` header (an SSE client's reconnection), when present and not empty. */
  lastEventId: string | undefined;
  /** Add a response header (login and logout set the cookie). */
  setHeader(name: string, value: string): void;
  /** A permission check that depends on the body; a refusal is an audited `access_denied`, like the path's (naming `route` when given). */
  authorize(target: Triple, need: Permission, route?: string): void;
  /** True when the caller authenticated with the console's login cookie (no bearer token). */
  viaCookie: boolean;
  /** The response as a live SSE stream (for a handler that answers `STREAMED`); nothing is written until its first event. */
  openSse(): SseSink;
  /** Whether cookies must be marked Secure (the public origin is https). */
  secureCookies: boolean;
  /** The metrics, when they are on (`LEASEHOLD_METRICS`). */
  metrics: MetricsCollector | undefined;
}

/** What an operation's handler answers: typed by its schema in `answers.ts`, so the two cannot drift. */
export type Answer<A extends Operation> = z.output<(typeof Answers)[A]>;

export interface RouteDef<A extends Operation = Operation, B extends Schema = Schema, Q extends Schema = Schema> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path pattern; `{name}` matches one segment. */
  path: string;
  operation: A;
  summary: string;
  /** False for the calls that need no token. */
  auth: boolean;
  body: B;
  query: Q;
  success: { status: number; code: string };
  /** The error codes particular to this call (the ones every call may answer are added by the OpenAPI document). */
  errors?: readonly ErrorCode[];
  /** Authorization that depends on the path or query only: it runs before the query is validated, so it sees the raw parameters. */
  permit?: (req: Pick<ApiRequest, 'principal' | 'route' | 'query'>) => void;
  /** Open to embed tokens (inventory reads); every other call refuses them. */
  embed?: true;
  /** Query parameters that may repeat (each becomes an array). */
  repeatable?: readonly string[];
  /** The answer is an SSE stream, not a JSON envelope. */
  stream?: true;
  /** Served only when metrics are on; an unknown path otherwise. */
  metrics?: true;
  /** A method, so a route typed by its own schemas is still one of AnyRoute (whose handlers take any validated request). */
  handle(req: ApiRequest<z.output<B>, z.output<Q>>, engine: LeaseEngine): Promise<Answer<A> | Outcome<Answer<A>> | (A extends 'feed_open' ? typeof STREAMED : never)>;
}

/** One route of the table, its handler typed by its own schemas (`req.body` is `z.output<typeof body>`, `req.query` likewise). */
function route<A extends Operation, B extends Schema, Q extends Schema>(def: RouteDef<A, B, Q>): RouteDef<A, B, Q> {
  return def;
}

/** One route per operation, each checked against its own answer schema. */
export type AnyRoute = { [A in Operation]: RouteDef<A> }[Operation];

const LEASE = '/api/v1/leases/{realm}/{area}/{resource}';
const STREAM = '/api/v1/inventory/streams/{stream_id}';

/** What a streaming handler returns: it has taken the response over. */
export const STREAMED = Object.freeze({ streamed: true });

/** Every `selector` of a stream query, parsed (the first bad one is `invalid_selector`); raw (for the permission) or validated. */
function streamSelectors(query: Fields): ParsedSelector[] {
  const texts: unknown[] = Array.isArray(query.selector) ? query.selector : [];
  return texts.map((t) => {
    if (typeof t !== 'string') fail('invalid_selector', 'selector must be a string');
    const r = parseSelector(t);
    if (!r.ok) fail('invalid_selector', `selector ${JSON.stringify(t.slice(0, 80))} ${r.reason}`);
    return r.value;
  });
}

/**
 * Where a stream resumes (docs/semantics.md §8): the `since` query parameter
 * (validated by its schema) wins over `Last-Event-ID`; a header that is not
 * a revision is null (the stream is sent `resync`, reason `epoch`, as a
 * browser's reconnection must never be refused).
 */
function resumeFrom(req: Pick<ApiRequest<unknown, z.output<typeof S.StreamQuery>>, 'query' | 'lastEventId'>): number | null | undefined {
  if (req.query.since !== undefined) return req.query.since;
  const h = req.lastEventId;
  if (h === undefined) return undefined;
  const n = Number(h);
  return S.REVISION_RE.test(h) && Number.isSafeInteger(n) ? n : null;
}

function routeTriple(route: string): Triple {
  return routeSegments(route);
}

const needOnRoute = (perm: Permission) => (req: Pick<ApiRequest, 'principal' | 'route'>) =>
  authorize(req.principal, routeTriple(req.route), perm);

/** Parsed selector of a query parameter, `invalid_selector` if bad (or absent with no default). */
export function querySelector(query: Record<string, unknown>, name = 'selector', fallback?: string): ParsedSelector {
  const text = query[name] ?? fallback;
  if (typeof text !== 'string') fail('invalid_selector', `${name} is required`);
  const r = parseSelector(text);
  if (!r.ok) fail('invalid_selector', `selector ${r.reason}`);
  return r.value;
}

/** LIST's filters from its query (the summary takes the same), as the engine's `ListQuery` names them. */
function leaseFiltersOf(query: z.output<typeof S.LeaseSummaryQuery>) {
  return {
    ownerId: query.owner_id,
    incarnation: query.holder_incarnation,
    expiresWithinMs: query.expires_within_ms,
    withWaiters: query.with_waiters,
    releaseRequested: query.release_requested,
  };
}

/** An operator's end of a lease (force-release, revoke) or a release request: the body all three share. */
function forceEndOf(body: z.output<typeof S.ReleaseRequestBody> & { lock_delay_ms?: number | undefined }) {
  return {
    requestId: body.request_id,
    reason: body.reason,
    expectedFencingToken: body.expected_fencing_token,
    lockDelayMs: body.lock_delay_ms,
    digest: requestDigest(body),
  };
}

/** An RFC 3339 query time as epoch ms (validated by the schema). */
function queryTime(v: unknown): number | undefined {
  return typeof v === 'string' ? Date.parse(v) : undefined;
}

/** What a holder presents (renew, release, checkpoint): the exact lease. */
function proofOf(body: z.output<typeof S.ReleaseBody>) {
  return {
    sessionId: body.session_id,
    requestId: body.request_id,
    leaseId: body.lease_id,
    fencingToken: body.fencing_token,
    digest: requestDigest(body),
  };
}


function cookie(req: ApiRequest, value: string, maxAgeS: number): string {
  return `${LOGIN_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeS}${req.secureCookies ? '; Secure' : ''}`;
}

/** A policy's fields from a body (absent or null: the global limit applies). */
function policyFields(body: z.output<typeof S.PolicyBody>): PolicyFields {
  return {
    ttlMinMs: body.ttl_min_ms ?? null,
    ttlMaxMs: body.ttl_max_ms ?? null,
    ttlDefaultMs: body.ttl_default_ms ?? null,
    maxLifetimeMs: body.max_lifetime_ms ?? null,
    lockDelayMs: body.lock_delay_ms ?? null,
    maxWaiters: body.max_waiters ?? null,
  };
}

/** Changing a policy needs `admin` on a grant containing its selector. */
function policyAdmin(req: Pick<ApiRequest, 'principal'>, selector: unknown): void {
  authorize(req.principal, querySelector({ selector }).triple, 'admin');
}

const POLICY_ROUTES: AnyRoute[] = [
  route({
    method: 'PUT',
    path: '/api/v1/policies',
    operation: 'policy_set',
    summary: 'Create or replace the policy of exactly this selector',
    auth: true,
    body: S.PolicyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'policy_set' },
    errors: ['invalid_selector'],
    handle: (req, e) => {
      // The body decides the permission, so it is judged whole first (docs/api.md, order of checks).
      const fields = policyFields(req.body);
      checkFields(fields, e.limits);
      req.authorize(querySelector({ selector: req.body.selector }).triple, 'admin');
      return e.policies.set(req.principal, req.body.selector, fields, req.body.reason);
    },
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/policies',
    operation: 'policy_delete',
    summary: 'Delete the policy of exactly this selector',
    auth: true,
    body: S.EmptyBody,
    query: S.PolicyDeleteQuery,
    success: { status: 200, code: 'policy_deleted' },
    errors: ['invalid_selector', 'not_found'],
    permit: (req) => policyAdmin(req, req.query.selector),
    handle: (req, e) => e.policies.delete(req.principal, req.query.selector, req.query.reason),
  }),
  route({
    method: 'GET',
    path: '/api/v1/policies',
    operation: 'policy_list',
    summary: 'List the policies whose selector the given one contains',
    auth: true,
    body: S.EmptyBody,
    query: S.PolicyListQuery,
    success: { status: 200, code: 'policy_listed' },
    errors: ['invalid_selector'],
    permit: (req) => authorize(req.principal, querySelector(req.query, 'selector', 'lease://**').triple, 'read'),
    handle: (req, e) => e.policies.list(req.principal, querySelector(req.query, 'selector', 'lease://**')),
  }),
  route({
    method: 'GET',
    path: '/api/v1/policies/effective/{realm}/{area}/{resource}',
    operation: 'policy_effective',
    summary: 'The policy that applies to a route and the resulting bounds',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'policy_effective' },
    permit: needOnRoute('read'),
    handle: (req, e) => e.policies.effective(req.principal, req.route),
  }),
];

export const ROUTES: AnyRoute[] = [
  ...POLICY_ROUTES,
  route({
    method: 'POST',
    path: '/api/v1/sessions',
    operation: 'session_open',
    summary: 'Open a session',
    auth: true,
    body: S.OpenSessionBody,
    query: S.NoQuery,
    success: { status: 201, code: 'session_opened' },
    permit: (req) => authorizeAnyWrite(req.principal),
    handle: (req, e) => e.sessions.open(req.principal, req.body.owner_id, req.body.ttl_ms ?? LIMITS.sessionTtlMs.default),
  }),
  route({
    method: 'POST',
    path: '/api/v1/sessions/keepalive',
    operation: 'session_keepalive',
    summary: 'Keep a session alive',
    auth: true,
    body: S.SessionIdBody,
    query: S.NoQuery,
    success: { status: 200, code: 'session_kept_alive' },
    errors: ['session_not_found'],
    permit: (req) => authorizeAnyWrite(req.principal),
    handle: (req, e) => e.sessions.keepAlive(req.principal, req.body.session_id),
  }),
  route({
    method: 'POST',
    path: '/api/v1/sessions/close',
    operation: 'session_close',
    summary: 'Close a session, releasing its leases',
    auth: true,
    body: S.SessionIdBody,
    query: S.NoQuery,
    success: { status: 200, code: 'session_closed' },
    errors: ['session_not_found'],
    permit: (req) => authorizeAnyWrite(req.principal),
    handle: (req, e) => e.sessions.close(req.principal, req.body.session_id),
  }),
  route({
    method: 'POST',
    path: '/api/v1/sessions/renew',
    operation: 'session_renew',
    summary: 'Renew many of a session’s leases in one step (each its own outcome) and keep the session alive',
    auth: true,
    body: S.SessionRenewBody,
    query: S.NoQuery,
    success: { status: 200, code: 'session_renewed' },
    errors: ['session_not_found', 'idempotency_conflict', 'outcome_unknown'],
    permit: (req) => authorizeAnyWrite(req.principal),
    handle: (req, e) => {
      const items = req.body.leases;
      // Each route needs `write`, as its single renew does; the body is judged whole first (docs/api.md, order of checks).
      for (const i of items) req.authorize(routeTriple(i.route), 'write', i.route);
      return e.sessions.renewAll(req.principal, {
        sessionId: req.body.session_id,
        requestId: req.body.request_id,
        digest: requestDigest(req.body),
        items: items.map((i) => ({ route: i.route, leaseId: i.lease_id, fencingToken: i.fencing_token, ttlMs: i.ttl_ms })),
      });
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/sessions/acquire',
    operation: 'session_acquire',
    summary: 'Acquire several routes for a session in one step: all of them, or none (never waits)',
    auth: true,
    body: S.SessionAcquireBody,
    query: S.NoQuery,
    success: { status: 200, code: 'leases_acquired' },
    errors: ['session_not_found', 'lease_conflict', 'idempotency_conflict', 'outcome_unknown'],
    permit: (req) => authorizeAnyWrite(req.principal),
    handle: (req, e) => {
      const items = req.body.leases;
      for (const i of items) req.authorize(routeTriple(i.route), 'write', i.route);
      return e.sessions.acquireAll(req.principal, {
        sessionId: req.body.session_id,
        requestId: req.body.request_id,
        digest: requestDigest(req.body),
        // Absent: the route's policy default (docs/policies.md).
        items: items.map((i) => ({ route: i.route, ttlMs: i.ttl_ms, maxLifetimeMs: i.max_lifetime_ms, metadata: i.metadata ?? null })),
      });
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/sessions',
    operation: 'session_list',
    summary: 'List sessions of the caller’s family',
    auth: true,
    body: S.EmptyBody,
    query: S.ListSessionsQuery,
    success: { status: 200, code: 'session_listed' },
    errors: ['cursor_invalid'],
    permit: (req) => authorize(req.principal, ALL, 'read'),
    handle: (req, e) =>
      e.sessions.list(req.principal, {
        ownerId: req.query.owner_id,
        limit: req.query.limit ?? LIMITS.pageItems.default,
        cursor: req.query.cursor,
      }),
  }),
  route({
    method: 'GET',
    path: '/api/v1/leases',
    operation: 'lease_list',
    summary: 'List held leases matching a selector',
    auth: true,
    body: S.EmptyBody,
    query: S.ListLeasesQuery,
    success: { status: 200, code: 'lease_listed' },
    errors: ['invalid_selector', 'cursor_invalid'],
    embed: true,
    permit: (req) => authorize(req.principal, querySelector(req.query).triple, 'read'),
    handle: (req, e) =>
      e.leases.list(req.principal, querySelector(req.query), {
        limit: req.query.limit ?? LIMITS.pageItems.default,
        cursor: req.query.cursor,
        ...leaseFiltersOf(req.query),
      }),
  }),
  route({
    method: 'GET',
    path: '/api/v1/leases/summary',
    operation: 'lease_summary',
    summary: 'Count held leases matching a selector and LIST’s filters, per owner (bounded)',
    auth: true,
    body: S.EmptyBody,
    query: S.LeaseSummaryQuery,
    success: { status: 200, code: 'lease_summary' },
    errors: ['invalid_selector'],
    permit: (req) => authorize(req.principal, querySelector(req.query).triple, 'read'),
    handle: (req, e) => e.leases.summary(req.principal, querySelector(req.query), leaseFiltersOf(req.query)),
  }),
  route({
    method: 'GET',
    path: '/api/v1/lock-delays',
    operation: 'lock_delay_list',
    summary: 'List free routes in lock-delay matching a selector',
    auth: true,
    body: S.EmptyBody,
    query: S.ListLockDelaysQuery,
    success: { status: 200, code: 'lock_delay_listed' },
    errors: ['invalid_selector', 'cursor_invalid'],
    permit: (req) => authorize(req.principal, querySelector(req.query).triple, 'read'),
    handle: (req, e) =>
      e.leases.lockDelays(req.principal, querySelector(req.query), {
        limit: req.query.limit ?? LIMITS.pageItems.default,
        cursor: req.query.cursor,
      }),
  }),
  route({
    method: 'GET',
    path: LEASE,
    operation: 'lease_inspect',
    summary: 'Inspect the lease of one route',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_inspected' },
    errors: ['lease_not_found'],
    embed: true,
    permit: needOnRoute('read'),
    handle: (req, e) => e.leases.inspect(req.principal, req.route),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/acquire`,
    operation: 'lease_acquire',
    summary: 'Acquire a lease (optionally waiting in the route’s FIFO queue)',
    auth: true,
    body: S.AcquireBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_acquired' },
    errors: ['session_not_found', 'lease_conflict', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('write'),
    handle: (req, e) =>
      e.leases.acquire(req.principal, req.route, {
        sessionId: req.body.session_id,
        requestId: req.body.request_id,
        // Absent: the route's policy default (docs/policies.md).
        ttlMs: req.body.ttl_ms,
        maxLifetimeMs: req.body.max_lifetime_ms,
        waitMs: req.body.wait_ms ?? LIMITS.waitMs.default,
        metadata: req.body.metadata ?? null,
        digest: requestDigest(req.body),
        signal: req.body.wait_ms ? req.signal : undefined,
        queueTicket: req.body.queue_ticket,
      }),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/renew`,
    operation: 'lease_renew',
    summary: 'Renew a held lease',
    auth: true,
    body: S.RenewBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_renewed' },
    errors: ['lease_lost', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('write'),
    handle: (req, e) => e.leases.renew(req.principal, req.route, { ...proofOf(req.body), ttlMs: req.body.ttl_ms }),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/release`,
    operation: 'lease_release',
    summary: 'Release a held lease',
    auth: true,
    body: S.ReleaseBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_released' },
    errors: ['lease_lost', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('write'),
    handle: (req, e) => e.leases.release(req.principal, req.route, proofOf(req.body)),
  }),
  route({
    method: 'PUT',
    path: `${LEASE}/checkpoint`,
    operation: 'checkpoint_write',
    summary: 'Write the route’s checkpoint, fenced by the lease',
    auth: true,
    body: S.CheckpointBody,
    query: S.NoQuery,
    success: { status: 200, code: 'checkpoint_written' },
    errors: ['lease_lost', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('write'),
    handle: (req, e) => {
      const value = JSON.stringify(req.body.value);
      if (Buffer.byteLength(value) > CHECKPOINT_VALUE_BYTES) fail('invalid_request', `checkpoint value is larger than ${CHECKPOINT_VALUE_BYTES / 1024} KiB`);
      return e.leases.writeCheckpoint(req.principal, req.route, { ...proofOf(req.body), value });
    },
  }),
  route({
    method: 'GET',
    path: `${LEASE}/checkpoint`,
    operation: 'checkpoint_read',
    summary: 'Read the route’s checkpoint',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'checkpoint_read' },
    errors: ['checkpoint_not_found'],
    permit: needOnRoute('read'),
    handle: (req, e) => e.leases.readCheckpoint(req.principal, req.route),
  }),
  route({
    method: 'POST',
    path: '/api/v1/auth/login',
    operation: 'login',
    summary: 'Exchange a token for the console’s httpOnly login cookie',
    auth: false,
    body: S.LoginBody,
    query: S.NoQuery,
    success: { status: 200, code: 'logged_in' },
    errors: ['invalid_credential', 'access_denied'],
    handle: async (req, e) => {
      const { cookieSecret, expiresAt, principal } = await e.tokens.login(req.body.token);
      req.setHeader('Set-Cookie', cookie(req, cookieSecret, Math.max(1, Math.floor((expiresAt - e.health.now()) / 1000))));
      return { token_id: principal.tokenId, name: principal.name, family: principal.family, expires_at: new Date(expiresAt).toISOString() };
    },
  }),
  route({
    method: 'POST',
    path: '/api/v1/auth/logout',
    operation: 'logout',
    summary: 'End the console login and clear its cookie',
    auth: false,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'logged_out' },
    handle: async (req, e) => {
      if (req.loginCookie) await e.tokens.logout(req.loginCookie);
      req.setHeader('Set-Cookie', cookie(req, '', 0));
      return {};
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/auth/whoami',
    operation: 'whoami',
    summary: 'Describe the calling token',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'whoami' },
    embed: true,
    handle: async (req) => ({
      token_id: req.principal.tokenId,
      name: req.principal.name,
      family: req.principal.family,
      grants: req.principal.grants.map((g) => g.text),
      root: req.principal.root,
    }),
  }),
  route({
    method: 'POST',
    path: '/api/v1/tokens',
    operation: 'token_create',
    summary: 'Create a token with grants contained in the caller’s admin grants',
    auth: true,
    body: S.CreateTokenBody,
    query: S.NoQuery,
    success: { status: 201, code: 'token_created' },
    handle: (req, e) =>
      e.tokens.create(req.principal, {
        name: req.body.name,
        grants: req.body.grants,
        expiresAt: req.body.expires_at === undefined ? undefined : Date.parse(req.body.expires_at),
        family: req.body.family,
        root: req.body.root,
      }),
  }),
  route({
    method: 'GET',
    path: '/api/v1/tokens',
    operation: 'token_list',
    summary: 'List tokens of the caller’s family',
    auth: true,
    body: S.EmptyBody,
    query: S.ListTokensQuery,
    success: { status: 200, code: 'token_listed' },
    permit: (req) => authorize(req.principal, ALL, 'admin'),
    handle: (req, e) => e.tokens.list(req.principal, req.query.family),
  }),
  route({
    method: 'DELETE',
    path: '/api/v1/tokens/{token_id}',
    operation: 'token_revoke',
    summary: 'Revoke a token',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'token_revoked' },
    errors: ['not_found'],
    permit: (req) => authorize(req.principal, ALL, 'admin'),
    handle: (req, e) => e.tokens.revoke(req.principal, req.params.token_id!),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/force-release`,
    operation: 'lease_force_release',
    summary: 'Free a stuck lease (operator); the audit event is written with the change',
    auth: true,
    body: S.ForceReleaseBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_force_released' },
    errors: ['lease_not_found', 'lease_mismatch', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('admin'),
    handle: (req, e) => e.operators.forceRelease(req.principal, req.route, forceEndOf(req.body)),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/release-request`,
    operation: 'lease_release_request',
    summary: 'Ask the holder to release its lease (write or admin); the holder decides (docs/release-requests.md)',
    auth: true,
    body: S.ReleaseRequestBody,
    query: S.NoQuery,
    success: { status: 200, code: 'release_requested' },
    errors: ['lease_not_found', 'lease_mismatch', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('write'),
    handle: (req, e) => e.leases.requestRelease(req.principal, req.route, forceEndOf(req.body)),
  }),
  route({
    method: 'POST',
    path: `${LEASE}/revoke`,
    operation: 'lease_revoke',
    summary: 'Revoke a lease for security reasons, optionally closing the holder’s session',
    auth: true,
    body: S.RevokeBody,
    query: S.NoQuery,
    success: { status: 200, code: 'lease_revoked' },
    errors: ['lease_not_found', 'lease_mismatch', 'idempotency_conflict', 'outcome_unknown'],
    permit: needOnRoute('admin'),
    handle: (req, e) => e.operators.revoke(req.principal, req.route, { ...forceEndOf(req.body), closeSession: req.body.close_session === true }),
  }),
  route({
    method: 'POST',
    path: '/api/v1/embed-tokens',
    operation: 'embed_token_create',
    summary: 'Create a read-only inventory token for one selector (at most 24 h)',
    auth: true,
    body: S.EmbedTokenBody,
    query: S.NoQuery,
    success: { status: 201, code: 'embed_token_created' },
    errors: ['invalid_selector'],
    handle: (req, e) => e.tokens.createEmbed(req.principal, req.body.selector, req.body.ttl_ms ?? LIMITS.embedTokenTtlMs.default),
  }),
  route({
    method: 'GET',
    path: '/api/v1/audit',
    operation: 'audit_list',
    summary: 'Read the audit trail, newest first (or oldest first for one exact route: `order=oldest`)',
    auth: true,
    body: S.EmptyBody,
    query: S.AuditQuery,
    success: { status: 200, code: 'audit_listed' },
    errors: ['invalid_selector', 'cursor_invalid', 'invalid_request'],
    permit: (req) => authorize(req.principal, querySelector(req.query, 'route', 'lease://**').triple, 'admin'),
    handle: (req, e) =>
      e.audit.list(req.principal, {
        selector: querySelector(req.query, 'route', 'lease://**'),
        eventType: req.query.event_type,
        since: queryTime(req.query.since),
        until: queryTime(req.query.until),
        limit: req.query.limit ?? LIMITS.pageItems.default,
        cursor: req.query.cursor,
        oldestFirst: req.query.order === 'oldest',
      }),
  }),
  route({
    method: 'GET',
    path: '/api/v1/inventory/stream',
    operation: 'feed_open',
    summary: 'Open a live inventory stream (Server-Sent Events) registering each selector',
    auth: true,
    body: S.EmptyBody,
    query: S.StreamQuery,
    repeatable: ['selector'],
    stream: true,
    success: { status: 200, code: 'stream' },
    errors: ['invalid_selector'],
    embed: true,
    permit: (req) => {
      for (const sel of streamSelectors(req.query)) authorize(req.principal, sel.triple, 'read');
    },
    handle: async (req, e) => {
      const loginCookie = req.viaCookie ? req.loginCookie : undefined;
      await e.feed.open(req.principal, streamSelectors(req.query), req.query.renewals === true, req.openSse(), loginCookie, resumeFrom(req));
      return STREAMED;
    },
  }),
  route({
    method: 'POST',
    path: `${STREAM}/subscriptions`,
    operation: 'feed_subscribe',
    summary: 'Register a selector on an open stream',
    auth: true,
    body: S.SubscribeBody,
    query: S.NoQuery,
    success: { status: 200, code: 'subscribed' },
    errors: ['invalid_selector', 'not_found'],
    embed: true,
    handle: async (req, e) => {
      const sel = querySelector(req.body);
      req.authorize(sel.triple, 'read');
      return e.feed.register(req.principal.tokenId, req.params.stream_id!, sel, req.body.renewals === true);
    },
  }),
  route({
    method: 'DELETE',
    path: `${STREAM}/subscriptions/{subscription_id}`,
    operation: 'feed_unsubscribe',
    summary: 'Remove one registration from an open stream',
    auth: true,
    body: S.EmptyBody,
    query: S.NoQuery,
    success: { status: 200, code: 'unsubscribed' },
    errors: ['not_found'],
    embed: true,
    handle: async (req, e) => {
      await e.feed.unregister(req.principal.tokenId, req.params.stream_id!, req.params.subscription_id!);
      return {};
    },
  }),
  route({
    method: 'GET',
    path: '/api/v1/metrics/summary',
    operation: 'metrics_summary',
    summary: 'Per-second series of the caller’s family (and request latency) for the console’s charts',
    auth: true,
    body: S.EmptyBody,
    query: S.MetricsSummaryQuery,
    success: { status: 200, code: 'metrics_summary' },
    errors: ['not_found'],
    metrics: true,
    permit: (req) => authorize(req.principal, ALL, 'read'),
    handle: async (req) => {
      if (!req.metrics) fail('not_found', 'metrics are off');
      return req.metrics.summaryOf(req.principal.family, req.query.window_s ?? LIMITS.metricsWindowS.default);
    },
  }),
];
