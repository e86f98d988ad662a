/**
 * The Leasehold client (docs/sdk.md): one typed method per API call, plus the
 * objects that make the protocols safe (Session, LeaseHandle, Subscription,
 * InventoryObserver). Runs in Node.js 20+ and in browsers: fetch and Web
 * Streams only.
 */

import { LiveFeed, type LiveFeedOptions } from './live-feed';
import { isStoreKind } from '../wire';
import { isLeaseholdError, LeaseholdError } from './errors';
import { InventoryObserver, type ObserveOptions } from './observer';
import { effectivePolicyPath, leasePath } from './paths';
import { newRequestId } from './runtime';
import { Session, type OpenSessionOptions } from './session';
import { Subscription, type SubscribeOptions } from './subscription';
import { Transport, type TransportOptions } from './transport';
import type {
  AuditEventType,
  AuditPage,
  Checkpoint,
  CreatedEmbedToken,
  CreatedToken,
  EffectivePolicy,
  Health,
  LeasePage,
  LeaseSummary,
  LeaseView,
  LockDelayPage,
  MetricsSummary,
  Policy,
  SessionPage,
  ReleaseRequest,
  SessionView,
  TokenInfo,
  Whoami,
} from './types';

export interface LeaseholdClientOptions extends TransportOptions {
  /**
   * Renew each session's handles through one batched request per tick
   * (`POST /api/v1/sessions/renew`, which also keeps the session alive).
   * Default true; false renews every handle alone and keeps sessions alive
   * with their own keepalives.
   */
  batchRenewals?: boolean | undefined;
}

export interface ListOptions {
  /** Items per page (default 100, at most 1,000). */
  pageSize?: number | undefined;
  ownerId?: string | undefined;
  holderIncarnation?: string | undefined;
}

export interface ListPageOptions extends LeaseFilters {
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** LIST's filters (docs/api.md), which `leaseSummary` takes too; a cursor is bound to them. */
export interface LeaseFilters {
  ownerId?: string | undefined;
  holderIncarnation?: string | undefined;
  /** "Expiring soon": only leases expiring within this many milliseconds (1 to 3,600,000). */
  expiresWithinMs?: number | undefined;
  /** Only leases whose route has waiters. */
  withWaiters?: boolean | undefined;
  /** Only leases with a pending release request. */
  releaseRequested?: boolean | undefined;
}

/** LIST's filters as query parameters (an unset one is left out). */
function filterQuery(opts: LeaseFilters) {
  return {
    owner_id: opts.ownerId,
    holder_incarnation: opts.holderIncarnation,
    expires_within_ms: opts.expiresWithinMs,
    with_waiters: opts.withWaiters ? 'true' : undefined,
    release_requested: opts.releaseRequested ? 'true' : undefined,
  };
}

/** What `requestRelease` takes: asking ends nothing, so there is no lock-delay to choose. */
export interface ReleaseRequestOptions {
  /** 10 to 500 characters; lands in the audit log. */
  reason: string;
  /** The fencing token the operator saw: if another lease holds the route now, the answer is `lease_mismatch`. */
  expectedFencingToken: number;
}

/** What `forceRelease` and `revoke` take. */
export interface OperatorActionOptions extends ReleaseRequestOptions {
  /** Shorten (never lengthen) the lock-delay this end starts; 0 skips it (the old holder is known dead). */
  lockDelayMs?: number;
}

/** A policy's fields (absent or null: the global limit applies). See docs/policies.md. */
export interface PolicyFields {
  ttlMinMs?: number | null;
  ttlMaxMs?: number | null;
  ttlDefaultMs?: number | null;
  maxLifetimeMs?: number | null;
  lockDelayMs?: number | null;
  maxWaiters?: number | null;
}

/** `client.policies`: per-pattern TTL bounds, lifetime caps, lock-delay and waiter caps. */
export class Policies {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Create or replace the policy of exactly `selector` (admin on it; the reason is audited). */
  async set(selector: string, fields: PolicyFields & { reason: string }): Promise<Policy> {
    const body: Record<string, unknown> = { selector, reason: fields.reason };
    const names = { ttlMinMs: 'ttl_min_ms', ttlMaxMs: 'ttl_max_ms', ttlDefaultMs: 'ttl_default_ms', maxLifetimeMs: 'max_lifetime_ms', lockDelayMs: 'lock_delay_ms', maxWaiters: 'max_waiters' } as const;
    for (const [k, wire] of Object.entries(names)) {
      const v = fields[k as keyof PolicyFields];
      if (v !== undefined) body[wire] = v;
    }
    const { data } = await this.#transport.call<{ policy: Policy }>('PUT', '/api/v1/policies', { body, retry: 'idempotent' });
    return data.policy;
  }

  /** The policies whose selector `within` contains (default every one). */
  async list(within = 'lease://**'): Promise<readonly Policy[]> {
    const { data } = await this.#transport.call<{ items: Policy[] }>('GET', '/api/v1/policies', { query: { selector: within }, retry: 'safe' });
    return data.items;
  }

  /** Delete the policy of exactly `selector`; throws `not_found` if it has none. */
  async delete(selector: string, opts: { reason: string }): Promise<void> {
    await this.#transport.call('DELETE', '/api/v1/policies', { query: { selector, reason: opts.reason }, retry: 'never' });
  }

  /** Which policy applies to `route` and the bounds its leases get. */
  async explain(route: string): Promise<EffectivePolicy> {
    const { data } = await this.#transport.call<EffectivePolicy>('GET', effectivePolicyPath(route), { retry: 'safe' });
    return { policy: data.policy, limits: data.limits };
  }
}

export interface AuditQuery {
  /** A route or selector (default `lease://**`). */
  route?: string | undefined;
  eventType?: AuditEventType | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  /** `oldest`: oldest first, for one exact route (default newest first). */
  order?: 'newest' | 'oldest' | undefined;
}

export interface CreateTokenOptions {
  name: string;
  /** `selector#permission` strings. */
  grants: readonly string[];
  expiresAt?: string | undefined;
  /** Root tokens only. */
  family?: string | undefined;
  root?: boolean | undefined;
}

export class LeaseholdClient {
  readonly #transport: Transport;
  readonly #batchRenewals: boolean;
  /** Per-pattern policies (set, list, delete, explain). */
  readonly policies: Policies;

  constructor(opts: LeaseholdClientOptions = {}) {
    this.#transport = new Transport(opts);
    this.#batchRenewals = opts.batchRenewals ?? true;
    this.policies = new Policies(this.#transport);
  }

  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  // --- health -------------------------------------------------------------

  /**
   * The health document (not an envelope); `status: 'unavailable'` when the
   * store is down, naming the store the server said it runs on (its 503 body,
   * docs/api.md "HealthUnavailable"). A 503 without that body (a proxy's) is
   * `backend_unavailable`: which store is behind it is not known.
   */
  async health(): Promise<Health> {
    const { data, status } = await this.#transport.call<Health>('GET', '/api/v1/health', { retry: 'never', answerStatuses: [503] });
    if (status === 503 && (data.status !== 'unavailable' || !isStoreKind(data.store))) {
      throw new LeaseholdError({ code: 'backend_unavailable', message: 'unexpected answer (HTTP 503)', status: 503, retryable: true });
    }
    return data;
  }

  /**
   * The console's chart data: the last `windowS` seconds (1 to 900; the
   * server's default is 900) of the caller's family's per-second series and
   * of request latency per operation. Needs `read` on `lease://**`; throws
   * `not_found` when the server runs with `LEASEHOLD_METRICS=off`.
   */
  async metricsSummary(windowS?: number, opts: { signal?: AbortSignal } = {}): Promise<MetricsSummary> {
    const { data } = await this.#transport.call<MetricsSummary>('GET', '/api/v1/metrics/summary', { query: { window_s: windowS }, retry: 'safe', signal: opts.signal });
    return { window_s: data.window_s, step_s: data.step_s, series: data.series };
  }

  // --- sessions and leases --------------------------------------------------

  /** Open a session that keeps itself alive until closed (docs/sdk.md). */
  async openSession(opts: OpenSessionOptions): Promise<Session> {
    const body: Record<string, unknown> = { owner_id: opts.ownerId };
    if (opts.ttlMs !== undefined) body.ttl_ms = opts.ttlMs;
    const sentAt = this.#transport.clock.now();
    const answer = await this.#transport.call<{ session: SessionView & { session_id: string } }>('POST', '/api/v1/sessions', { body, retry: 'never' });
    const { session_id, ...view } = answer.data.session;
    return new Session(this.#transport, session_id, view, sentAt, { batchRenewals: this.#batchRenewals });
  }

  async listSessions(opts: { ownerId?: string; limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const query = { owner_id: opts.ownerId, limit: opts.limit, cursor: opts.cursor };
    const { data } = await this.#transport.call<SessionPage>('GET', '/api/v1/sessions', { query, retry: 'safe' });
    return { items: data.items, next_cursor: data.next_cursor };
  }

  /** The lease on `route`, or undefined when none is held. */
  async inspect(route: string): Promise<LeaseView | undefined> {
    try {
      return await this.inspectOrThrow(route);
    } catch (e) {
      if (isLeaseholdError(e, 'lease_not_found')) return undefined;
      throw e;
    }
  }

  /** The lease on `route`; throws `lease_not_found` (with its correlation id and `lockDelayUntil`) when none is held. */
  async inspectOrThrow(route: string): Promise<LeaseView> {
    return (await this.#transport.call<{ lease: LeaseView }>('GET', leasePath(route), { retry: 'safe' })).data.lease;
  }

  /** When a free route leaves lock-delay (epoch ms), or undefined if it is held or not in a delay (docs/policies.md). */
  async lockDelayUntil(route: string): Promise<number | undefined> {
    try {
      await this.inspectOrThrow(route);
      return undefined;
    } catch (e) {
      if (isLeaseholdError(e, 'lease_not_found')) return e.lockDelayUntil;
      throw e;
    }
  }

  /** One page of LIST (docs/semantics.md §7). */
  async listPage(selector: string, opts: ListPageOptions = {}): Promise<LeasePage> {
    const query = { selector, ...filterQuery(opts), limit: opts.limit, cursor: opts.cursor };
    const { data } = await this.#transport.call<LeasePage>('GET', '/api/v1/leases', { query, retry: 'safe' });
    return { items: data.items, next_cursor: data.next_cursor, revision: data.revision, epoch: data.epoch };
  }

  /** How many held leases match `selector` and the filters, per owner (the top 10); counted up to the server's per-read budget (`exact: false` past it). */
  async leaseSummary(selector: string, opts: LeaseFilters = {}): Promise<LeaseSummary> {
    const { data } = await this.#transport.call<LeaseSummary>('GET', '/api/v1/leases/summary', { query: { selector, ...filterQuery(opts) }, retry: 'safe' });
    return { total: data.total, exact: data.exact, examined: data.examined, owners: data.owners, others: data.others, owner_count: data.owner_count };
  }

  /** One page of the free routes in lock-delay matching `selector`, in route order, with their deadlines. */
  async lockDelays(selector: string, opts: { limit?: number | undefined; cursor?: string | undefined } = {}): Promise<LockDelayPage> {
    const { data } = await this.#transport.call<LockDelayPage>('GET', '/api/v1/lock-delays', { query: { selector, limit: opts.limit, cursor: opts.cursor }, retry: 'safe' });
    return { items: data.items, next_cursor: data.next_cursor };
  }

  /**
   * Every lease matching `selector`, fetched a page at a time as the loop
   * asks; `break` stops fetching. A snapshot in keyset order, not live: use
   * `observeInventory` to follow changes.
   */
  async *list(selector: string, opts: ListOptions = {}): AsyncGenerator<LeaseView, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listPage(selector, { limit: opts.pageSize, cursor, ownerId: opts.ownerId, holderIncarnation: opts.holderIncarnation });
      yield* page.items;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** The route's checkpoint, or undefined when it never had one. */
  async readCheckpoint(route: string): Promise<Checkpoint | undefined> {
    try {
      return (await this.#transport.call<{ checkpoint: Checkpoint }>('GET', leasePath(route, 'checkpoint'), { retry: 'safe' })).data.checkpoint;
    } catch (e) {
      if (isLeaseholdError(e, 'checkpoint_not_found')) return undefined;
      throw e;
    }
  }

  // --- operators --------------------------------------------------------------

  /** Free a stuck lease (admin). Throws `lease_mismatch` if the route's lease is not the one seen. */
  async forceRelease(route: string, opts: OperatorActionOptions): Promise<{ route: string; fencing_token: number }> {
    const body: Record<string, unknown> = { request_id: newRequestId(), reason: opts.reason, expected_fencing_token: opts.expectedFencingToken };
    if (opts.lockDelayMs !== undefined) body.lock_delay_ms = opts.lockDelayMs;
    const { data } = await this.#transport.call<{ route: string; fencing_token: number }>('POST', leasePath(route, 'force-release'), { body, retry: 'idempotent' });
    return { route: data.route, fencing_token: data.fencing_token };
  }

  /**
   * Ask the holder to release (`write` or `admin`; docs/release-requests.md):
   * the lease then carries the request and its holder's handle signals
   * `releaseRequested`. Nothing else changes.
   */
  async requestRelease(route: string, opts: ReleaseRequestOptions): Promise<{ route: string; fencing_token: number; release_request: ReleaseRequest }> {
    const body = { request_id: newRequestId(), reason: opts.reason, expected_fencing_token: opts.expectedFencingToken };
    const { data } = await this.#transport.call<{ route: string; fencing_token: number; release_request: ReleaseRequest }>('POST', leasePath(route, 'release-request'), { body, retry: 'idempotent' });
    return { route: data.route, fencing_token: data.fencing_token, release_request: data.release_request };
  }

  /** Revoke a lease for security reasons (admin), optionally closing the holder's session. */
  async revoke(route: string, opts: OperatorActionOptions & { closeSession?: boolean }): Promise<{ route: string; fencing_token: number; sessions_closed: number }> {
    const body: Record<string, unknown> = { request_id: newRequestId(), reason: opts.reason, expected_fencing_token: opts.expectedFencingToken };
    if (opts.closeSession !== undefined) body.close_session = opts.closeSession;
    if (opts.lockDelayMs !== undefined) body.lock_delay_ms = opts.lockDelayMs;
    const { data } = await this.#transport.call<{ route: string; fencing_token: number; sessions_closed: number }>('POST', leasePath(route, 'revoke'), { body, retry: 'idempotent' });
    return { route: data.route, fencing_token: data.fencing_token, sessions_closed: data.sessions_closed };
  }

  async listAudit(query: AuditQuery = {}): Promise<AuditPage> {
    const q = { route: query.route, event_type: query.eventType, since: query.since, until: query.until, limit: query.limit, cursor: query.cursor, order: query.order };
    const { data } = await this.#transport.call<AuditPage>('GET', '/api/v1/audit', { query: q, retry: 'safe' });
    return { items: data.items, next_cursor: data.next_cursor };
  }

  // --- auth and tokens ----------------------------------------------------------

  /** Browser console login: sets the httpOnly session cookie. */
  async login(token: string): Promise<void> {
    await this.#transport.call('POST', '/api/v1/auth/login', { body: { token }, retry: 'never' });
  }

  async logout(): Promise<void> {
    await this.#transport.call('POST', '/api/v1/auth/logout', { retry: 'never' });
  }

  async whoami(): Promise<Whoami> {
    const { data } = await this.#transport.call<Whoami>('GET', '/api/v1/auth/whoami', { retry: 'safe' });
    return { token_id: data.token_id, name: data.name, family: data.family, grants: data.grants, root: data.root };
  }

  /** Create a token; its secret is in the answer only. */
  async createToken(opts: CreateTokenOptions): Promise<CreatedToken> {
    const body: Record<string, unknown> = { name: opts.name, grants: opts.grants };
    if (opts.expiresAt !== undefined) body.expires_at = opts.expiresAt;
    if (opts.family !== undefined) body.family = opts.family;
    if (opts.root !== undefined) body.root = opts.root;
    const { data } = await this.#transport.call<CreatedToken>('POST', '/api/v1/tokens', { body, retry: 'never' });
    return { token_id: data.token_id, token: data.token, family: data.family };
  }

  async listTokens(opts: { family?: string } = {}): Promise<readonly TokenInfo[]> {
    const { data } = await this.#transport.call<{ items: TokenInfo[] }>('GET', '/api/v1/tokens', { query: { family: opts.family }, retry: 'safe' });
    return data.items;
  }

  async revokeToken(tokenId: string): Promise<void> {
    await this.#transport.call('DELETE', `/api/v1/tokens/${encodeURIComponent(tokenId)}`, { retry: 'never' });
  }

  /** A read-only token for one selector (at most 24 h), for the embeddable widget. */
  async createEmbedToken(selector: string, opts: { ttlMs?: number } = {}): Promise<CreatedEmbedToken> {
    const body: Record<string, unknown> = { selector };
    if (opts.ttlMs !== undefined) body.ttl_ms = opts.ttlMs;
    const { data } = await this.#transport.call<CreatedEmbedToken>('POST', '/api/v1/embed-tokens', { body, retry: 'never' });
    return { token_id: data.token_id, token: data.token, expires_at: data.expires_at };
  }

  // --- live -----------------------------------------------------------------------

  /** Open a stream with `selectors` registered (a typed subscription; raw ids stay inside). */
  subscribe(selectors: readonly string[] = [], opts: SubscribeOptions = {}): Subscription {
    return new Subscription(this.#transport, selectors, opts);
  }

  /**
   * One stream shared by many watchers of different selectors, which
   * reconnects and resumes by itself (docs/sdk.md "One stream for a page").
   */
  liveFeed(opts: LiveFeedOptions = {}): LiveFeed {
    return new LiveFeed(
      { subscribe: (selectors, o) => this.subscribe(selectors, o), clock: this.#transport.clock, random: this.#transport.random },
      opts,
    );
  }

  /** The safe, self-healing view of what `selector` holds (docs/sdk.md). */
  observeInventory(selector: string, opts: ObserveOptions = {}): InventoryObserver {
    return new InventoryObserver(
      {
        transport: this.#transport,
        subscribe: (selectors, o) => this.subscribe(selectors, o),
        listPage: (s, o) => this.listPage(s, o),
        inspect: (route) => this.inspect(route),
      },
      selector,
      opts,
    );
  }
}
