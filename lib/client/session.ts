/**
 * A session that keeps itself alive: a keepalive at a third of its TTL (±20 %
 * jitter), retried on transient faults until the local deadline. It reports
 * loss through `lost` (an AbortSignal) and a `lost` event, and closing it (or
 * `await using`) releases every lease it holds.
 */

import { LeaseholdError, closedError, isLeaseholdError } from './errors';
import { installAsyncDispose } from './disposable';
import { attemptTimeoutMs, Keeper, REFRESH_FRACTION } from './keeper';
import { LeaseHandle, type HandleHost } from './lease-handle';
import { leasePath } from './paths';
import { newRequestId, Timer } from './runtime';
import type { Answer, Transport } from './transport';
import type { AcquireAllOptions, AcquireAllRoute, HeldLease, Metadata, PendingReleaseRequest, SessionView } from './types';

/** Items of one batched renew at most (the server's bound). */
export const MAX_BATCH_RENEW = 1000;
/** Routes of one all-or-nothing acquire at most (the server's bound). */
export const MAX_ACQUIRE_ALL = 16;
/** Renewals falling due this close together go out in one request. */
const COALESCE_MS = 5;
/**
 * A batch going out takes along every handle at least this share of its own
 * interval (TTL/3) past its last renewal: it renews early rather than in a
 * request of its own. Two groups of handles out of step merge at the next
 * tick (a group fires at 0.8 to 1.2 of the interval, so when one fires the
 * other is at least 0.4 of it past its renewal, or in flight), and only
 * while they merge does a handle renew sooner than its schedule says.
 */
const PULL_FORWARD = 0.3;
/** A batch's body stays below the server's 128 KiB limit: split by size too. */
const MAX_BATCH_BYTES = 100_000;
/**
 * Items per request the SDK sends (the server takes up to MAX_BATCH_RENEW): a
 * batch is one atomic step, and the store runs a family's steps one at a
 * time, so a step of 1,000 renewals (about 50 ms of server CPU) delays every
 * request behind it. Steps of 250 keep renew p99 low for the whole family
 * and cost the same per lease (docs/benchmarks.md "Fleets").
 */
const REQUEST_ITEMS = 250;

/** How a session keeps its handles: batched renewals unless turned off (or the server lacks them). */
export interface SessionOptions {
  /** Renew the session's handles through `POST /api/v1/sessions/renew` (default true). */
  batchRenewals?: boolean | undefined;
}

interface BatchItem {
  handle: LeaseHandle;
  resolve(lease: HeldLease): void;
  reject(e: unknown): void;
}

interface Waiter {
  resolve(): void;
  reject(e: unknown): void;
}

export type SessionState = 'open' | 'closed' | 'lost';

export interface OpenSessionOptions {
  ownerId: string;
  /** 2 s to 300 s; the server's default (15 s) when omitted. */
  ttlMs?: number | undefined;
}

export interface AcquireOptions {
  /** 1 s to 600 s; the server's default (30 s) when omitted. */
  ttlMs?: number | undefined;
  maxLifetimeMs?: number | undefined;
  /**
   * Wait in the route's FIFO queue up to this long: any duration
   * (`Infinity`: until `signal` aborts). A request waits 30 s at most on the
   * server; a longer wait re-issues it with the server's `queue_ticket`, so
   * it keeps its place throughout. 0 answers `lease_conflict` at once.
   * Absent: 0, or with `signal` alone, until it aborts.
   */
  waitMs?: number | undefined;
  metadata?: Metadata | undefined;
  /** Abandons the call: a waiting acquire leaves the queue (a place kept between two requests lapses within 5 s). */
  signal?: AbortSignal | undefined;
  /** Continue the place an earlier acquire of this session for this route kept (`LeaseholdError.queueTicket`, good for 5 s). */
  queueTicket?: string | undefined;
}

/** The longest one acquire request waits on the server (its `wait_ms` maximum): longer waits are re-issued with their queue ticket. */
export const MAX_WAIT_PER_REQUEST_MS = 30_000;

/** The events a session dispatches, by type: what `addEventListener` gives each listener. */
export interface SessionEventMap {
  /** The session was lost (expired, or gone on the server); `session.lost.reason` says why. */
  lost: Event;
}

export interface Session extends AsyncDisposable {
  addEventListener<K extends keyof SessionEventMap>(type: K, listener: (this: Session, event: SessionEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof SessionEventMap>(type: K, listener: (this: Session, event: SessionEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

export class Session extends EventTarget {
  readonly ownerId: string;
  readonly ttlMs: number;
  readonly holderIncarnation: string;
  readonly #transport: Transport;
  readonly #id: string;
  readonly #controller = new AbortController();
  readonly #handles = new Set<LeaseHandle>();
  readonly #host: HandleHost;
  #view: SessionView;
  #state: SessionState = 'open';
  readonly #keeper: Keeper;
  /** False once batching is off, or the server answered that it has no batched renew. */
  #batching: boolean;
  readonly #queue: BatchItem[] = [];
  /** The session's keepalive, waiting for the next batch to do it. */
  #waiters: Waiter[] = [];
  readonly #flushTimer: Timer;
  #flushSet = false;

  /** @internal Made by `LeaseholdClient.openSession`. */
  constructor(transport: Transport, id: string, view: SessionView, sentAt: number, opts: SessionOptions = {}) {
    super();
    this.#transport = transport;
    this.#id = id;
    this.#view = view;
    this.ownerId = view.owner_id;
    this.ttlMs = view.ttl_ms;
    this.holderIncarnation = view.holder_incarnation;
    this.#batching = opts.batchRenewals ?? true;
    this.#flushTimer = new Timer(transport.clock);
    const handles = this.#handles;
    this.#host = {
      transport,
      sessionId: id,
      ended: (h) => {
        handles.delete(h);
      },
      releaseRequests: (requests) => this.#releaseRequests(requests),
      batchRenew: (h) => (this.#batching ? this.#enqueue(h) : undefined),
    };
    this.#keeper = new Keeper(
      {
        transport,
        ttlMs: () => this.ttlMs,
        refresh: () => this.#refresh(),
        expired: () => this.#lose(new LeaseholdError({ code: 'session_not_found', message: 'no keepalive succeeded before the session expired', fromServer: false })),
      },
      sentAt + view.ttl_ms,
    );
  }

  get state(): SessionState {
    return this.#state;
  }

  /** Aborted when the session is lost (expired or gone on the server); `reason` says why. */
  get lost(): AbortSignal {
    return this.#controller.signal;
  }

  get expiresAt(): Date {
    return new Date(this.#view.expires_at);
  }

  /** The leases this session holds through this object. */
  get handles(): readonly LeaseHandle[] {
    return [...this.#handles];
  }

  /**
   * Acquire `route`. Resolves with a self-renewing handle; throws
   * `lease_conflict` when the route is held (after waiting, with `waitMs`,
   * or until `signal` aborts). A wait longer than one request's
   * (`MAX_WAIT_PER_REQUEST_MS`, or the server's own, shorter, maximum) is
   * re-issued with the server's `queue_ticket`: it keeps its place in the
   * queue however long it waits. Each request has its own request_id, which
   * serves every retry of it, so a lost answer never acquires twice. The
   * last `lease_conflict` of a wait carries the ticket (`queueTicket`).
   */
  async acquire(route: string, opts: AcquireOptions = {}): Promise<LeaseHandle> {
    this.#assertOpen();
    const waitMs = opts.waitMs ?? (opts.signal !== undefined ? Infinity : 0);
    if (!(waitMs >= 0)) throw new LeaseholdError({ code: 'invalid_request', message: `waitMs must be 0 or more (got ${String(opts.waitMs)})`, fromServer: false });
    const clock = this.#transport.clock;
    const deadline = clock.now() + waitMs;
    let ticket = opts.queueTicket;
    let sentAt: number;
    let answer: Answer<{ lease: HeldLease; queued: boolean }>;
    for (;;) {
      const segment = Math.floor(Math.min(MAX_WAIT_PER_REQUEST_MS, Math.max(0, deadline - clock.now())));
      const body: Record<string, unknown> = { session_id: this.#id, request_id: newRequestId() };
      if (opts.ttlMs !== undefined) body.ttl_ms = opts.ttlMs;
      if (opts.maxLifetimeMs !== undefined) body.max_lifetime_ms = opts.maxLifetimeMs;
      if (segment > 0 || opts.waitMs !== undefined) body.wait_ms = segment;
      if (opts.metadata !== undefined) body.metadata = opts.metadata;
      if (ticket !== undefined) body.queue_ticket = ticket;
      sentAt = clock.now();
      try {
        answer = await this.#transport.call<{ lease: HeldLease; queued: boolean }>('POST', leasePath(route, 'acquire'), {
          body,
          retry: 'idempotent',
          signal: opts.signal,
          extraTimeoutMs: segment,
        });
        break;
      } catch (e) {
        // The wait ended without a grant and its place is kept: continue from it while time is left.
        if (!isLeaseholdError(e, 'lease_conflict') || e.queueTicket === undefined || deadline - clock.now() <= 0 || opts.signal?.aborted === true) throw e;
        this.#assertOpen();
        ticket = e.queueTicket;
      }
    }
    const handle = new LeaseHandle(this.#host, answer.data.lease, answer.data.queued, sentAt);
    if (this.#state !== 'open') {
      // The session ended while the call was in flight: the server released
      // (or will expire) the lease with it.
      handle.end(this.#state === 'lost' ? this.#lostError() : 'released');
      throw this.#state === 'lost' ? this.#lostError() : closedError('session');
    }
    this.#handles.add(handle);
    return handle;
  }

  /**
   * Acquire every route or none, in one atomic step
   * (`POST /api/v1/sessions/acquire`, 1 to 16 distinct routes). Resolves with
   * one handle per route, in the order given, each renewing (batched with the
   * session's others), releasable and losable on its own. When any route is
   * held (or in lock-delay) it throws `lease_conflict` with `held` (those
   * routes) and `retryAfterMs`, having acquired nothing. It never waits:
   * waiting for several routes is how deadlocks start.
   */
  async acquireAll(routes: readonly AcquireAllRoute[], opts: AcquireAllOptions = {}): Promise<LeaseHandle[]> {
    this.#assertOpen();
    if (routes.length === 0 || routes.length > MAX_ACQUIRE_ALL) {
      throw new LeaseholdError({ code: 'invalid_request', message: `acquireAll takes 1 to ${MAX_ACQUIRE_ALL} routes (got ${routes.length})`, fromServer: false });
    }
    const leases = routes.map((r) => {
      const terms = typeof r === 'string' ? { route: r } : r;
      const item: Record<string, unknown> = { route: terms.route };
      const ttlMs = terms.ttlMs ?? opts.ttlMs;
      const maxLifetimeMs = terms.maxLifetimeMs ?? opts.maxLifetimeMs;
      const metadata = terms.metadata ?? opts.metadata;
      if (ttlMs !== undefined) item.ttl_ms = ttlMs;
      if (maxLifetimeMs !== undefined) item.max_lifetime_ms = maxLifetimeMs;
      if (metadata !== undefined) item.metadata = metadata;
      return item;
    });
    const body = { session_id: this.#id, request_id: newRequestId(), leases };
    const sentAt = this.#transport.clock.now();
    const answer = await this.#transport.call<{ leases: HeldLease[] }>('POST', '/api/v1/sessions/acquire', { body, retry: 'idempotent', signal: opts.signal });
    const handles = answer.data.leases.map((lease) => new LeaseHandle(this.#host, lease, false, sentAt));
    if (this.#state !== 'open') {
      for (const h of handles) h.end(this.#state === 'lost' ? this.#lostError() : 'released');
      throw this.#state === 'lost' ? this.#lostError() : closedError('session');
    }
    for (const h of handles) this.#handles.add(h);
    return handles;
  }

  /** Keep the session alive now (it also does this by itself). Throws `session_not_found` (and reports loss) if it is gone. */
  async keepAlive(): Promise<void> {
    this.#assertOpen();
    const sentAt = this.#transport.clock.now();
    try {
      const answer = await this.#transport.call<{ session: SessionView; release_requests?: PendingReleaseRequest[] }>('POST', '/api/v1/sessions/keepalive', {
        body: { session_id: this.#id },
        retry: 'safe',
        signal: this.#controller.signal,
        timeoutMs: attemptTimeoutMs(this.ttlMs, this.#transport.timeoutMs),
      });
      if (this.#state !== 'open') return;
      this.#view = answer.data.session;
      this.#keeper.extend(sentAt + this.#view.ttl_ms);
      if (answer.data.release_requests?.length) this.#releaseRequests(answer.data.release_requests);
    } catch (e) {
      if (isLeaseholdError(e, 'session_not_found')) this.#lose(e);
      throw e;
    }
  }

  /**
   * Close the session: the server releases every lease it holds (change
   * `session_closed`) and each handle's signal aborts. Closing a session that
   * is already gone resolves.
   */
  async close(): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'closed';
    this.#keeper.stop();
    this.#dropQueue(closedError('session'));
    try {
      await this.#transport.call('POST', '/api/v1/sessions/close', { body: { session_id: this.#id }, retry: 'idempotent' });
    } catch (e) {
      // Gone already (a retry after a lost answer, or expiry): closed either way.
      if (!isLeaseholdError(e, 'session_not_found')) {
        this.#endHandles('released');
        throw e;
      }
    }
    this.#endHandles('released');
    this.#controller.abort(closedError('session'));
  }

  dispose(): Promise<void> {
    return this.close();
  }

  /**
   * The session's own refresh: with handles to renew, the next batch keeps it
   * alive (the handle due first goes now); without, a keepalive.
   */
  #refresh(): Promise<void> {
    if (!this.#batching || this.#handles.size === 0) return this.keepAlive();
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#flush();
    });
  }

  /** A handle's renewal is due: it goes in the next batch, sent within a few ms with whatever else is due. */
  #enqueue(handle: LeaseHandle): Promise<HeldLease> {
    return new Promise<HeldLease>((resolve, reject) => {
      this.#queue.push({ handle, resolve, reject });
      if (!this.#flushSet) {
        this.#flushSet = true;
        this.#flushTimer.set(() => {
          this.#flushSet = false;
          this.#flush();
        }, COALESCE_MS);
      }
    });
  }

  /** Send what is queued, with every handle due soon, in as few requests as the bounds allow. */
  #flush(): void {
    const now = this.#transport.clock.now();
    // Handles joining now go in this flush: no timer for another.
    this.#flushTimer.clear();
    this.#flushSet = true;
    for (const h of this.#handles) h.joinBatch(now, h.lease.ttl_ms * REFRESH_FRACTION * PULL_FORWARD);
    if (this.#queue.length === 0 && this.#waiters.length > 0) {
      // The keepalive is due before any handle: the handle due first renews early.
      let first: LeaseHandle | undefined;
      for (const h of this.#handles) if (first === undefined || h.renewDueAt < first.renewDueAt) first = h;
      if (first !== undefined && first.renewDueAt < Number.POSITIVE_INFINITY) first.joinBatch(now, Number.NEGATIVE_INFINITY);
    }
    this.#flushSet = false;
    const items = this.#queue.splice(0);
    const waiters = this.#waiters;
    this.#waiters = [];
    if (items.length === 0) {
      // Every handle is renewing already: the session keeps itself alive.
      if (waiters.length > 0) this.keepAlive().then(() => settle(waiters), (e: unknown) => settle(waiters, e));
      return;
    }
    const chunks: BatchItem[][] = [[]];
    let bytes = 0;
    for (const item of items) {
      const size = item.handle.route.length + item.handle.leaseId.length + 64;
      const chunk = chunks.at(-1)!;
      if (chunk.length === REQUEST_ITEMS || (chunk.length > 0 && bytes + size > MAX_BATCH_BYTES)) {
        chunks.push([]);
        bytes = 0;
      }
      chunks.at(-1)!.push(item);
      bytes += size;
    }
    // One after another: sent together they would share one group commit and
    // each wait for all of them. The first keeps the session alive.
    // One jitter draw for all of them: each handle drawing its own, the
    // earliest of hundreds always fell at the window's start (0.8 of the
    // interval) and pulled the rest forward, so sessions that once renewed
    // together stayed in lockstep for good, and renewed a fifth more often
    // than their interval; a draw per batch moves the whole batch, and
    // sessions drift apart (docs/sdk.md "Batched renewals").
    const draw = this.#transport.random();
    void (async () => {
      for (const [i, chunk] of chunks.entries()) await this.#sendBatch(chunk, i === 0 ? waiters : [], draw);
    })();
  }

  /** One `POST /api/v1/sessions/renew`: each item's outcome goes to its handle alone. */
  async #sendBatch(items: BatchItem[], waiters: Waiter[], draw: number): Promise<void> {
    const leases = items.map(({ handle: h }) => ({ route: h.route, lease_id: h.leaseId, fencing_token: h.fencingToken }));
    const body = { session_id: this.#id, request_id: newRequestId(), leases };
    const shortestTtl = Math.min(this.ttlMs, ...items.map(({ handle: h }) => h.lease.ttl_ms));
    const sentAt = this.#transport.clock.now();
    type Outcome = { route: string; code: 'lease_renewed'; lease: HeldLease } | { route: string; code: 'lease_lost' };
    let answer;
    try {
      answer = await this.#transport.call<{ session: SessionView; results: Outcome[]; release_requests?: PendingReleaseRequest[] }>('POST', '/api/v1/sessions/renew', {
        body,
        retry: 'idempotent',
        signal: this.#controller.signal,
        timeoutMs: attemptTimeoutMs(shortestTtl, this.#transport.timeoutMs),
      });
    } catch (e) {
      if (isLeaseholdError(e) && (e.status === 404 || e.status === 405) && e.code !== 'session_not_found') {
        // A server without batched renewals: every handle renews alone from now on.
        this.#batching = false;
        for (const item of items) item.handle.renewAlone().then(item.resolve, item.reject);
        if (waiters.length > 0) this.keepAlive().then(() => settle(waiters), (err: unknown) => settle(waiters, err));
        return;
      }
      if (isLeaseholdError(e, 'session_not_found')) this.#lose(e);
      // Anything else is transient: each handle (and the session) retries on its own schedule, within its deadline.
      for (const item of items) item.reject(e);
      settle(waiters, e);
      return;
    }
    const { session, results, release_requests } = answer.data;
    if (!Array.isArray(results) || results.length !== items.length) {
      const e = new LeaseholdError({ code: 'invalid_response', message: 'a batched renew answered without one result per item', status: answer.status, correlationId: answer.correlationId });
      for (const item of items) item.reject(e);
      settle(waiters, e);
      return;
    }
    if (this.#state === 'open') {
      this.#view = session;
      this.#keeper.extend(sentAt + session.ttl_ms);
      if (waiters.length === 0) this.#keeper.reschedule();
    }
    items.forEach((item, i) => {
      const outcome = results[i];
      if (outcome?.code === 'lease_renewed') {
        item.handle.settleBatch(outcome.lease, sentAt, draw);
        item.resolve(outcome.lease);
        return;
      }
      const lost = new LeaseholdError({
        code: 'lease_lost',
        message: 'the lease is not held by this session with this lease_id and token',
        status: 409,
        correlationId: answer.correlationId,
        fromServer: true,
      });
      item.handle.settleBatch(lost, sentAt);
      item.reject(lost);
    });
    if (release_requests?.length) this.#releaseRequests(release_requests);
    settle(waiters);
  }

  #assertOpen(): void {
    if (this.#state === 'lost') throw this.#lostError();
    if (this.#state === 'closed') throw closedError('session');
  }

  #lostError(): LeaseholdError {
    const reason = this.#controller.signal.reason;
    return new LeaseholdError({
      code: 'session_lost',
      message: `the session was lost: ${reason instanceof Error ? reason.message : 'expired'}`,
      cause: reason,
    });
  }

  /** Hand each pending release request to the handle of its exact lease. */
  #releaseRequests(requests: readonly PendingReleaseRequest[]): void {
    for (const h of this.#handles) for (const r of requests) h.noteReleaseRequest(r);
  }

  /** The session ended: nothing queued goes out. */
  #dropQueue(reason: unknown): void {
    this.#flushTimer.clear();
    this.#flushSet = false;
    for (const item of this.#queue.splice(0)) item.reject(reason);
    settle(this.#waiters.splice(0), reason);
  }

  #endHandles(how: 'released' | LeaseholdError): void {
    for (const h of [...this.#handles]) h.end(how);
    this.#handles.clear();
  }

  #lose(reason: LeaseholdError): void {
    if (this.#state !== 'open') return;
    this.#state = 'lost';
    this.#keeper.stop();
    this.#dropQueue(reason);
    this.#controller.abort(reason);
    this.#endHandles(this.#lostError());
    this.dispatchEvent(new Event('lost'));
  }
}

function settle(waiters: readonly Waiter[], error?: unknown): void {
  for (const w of waiters) {
    if (error === undefined) w.resolve();
    else w.reject(error);
  }
}

installAsyncDispose(Session.prototype);
