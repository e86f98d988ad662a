/**
 * A session that keeps itself alive: a keepalive at a third of its TTL (±20 %
 * jitter), retried on transient faults until the local deadline. It reports
 * loss through `lost` (an AbortSignal) and a `lost` event, and closing it (or
 * `await using`) releases every lease it holds.
 */

import { LeaseholdError, closedError, isLeaseholdError } from './errors';
import { installAsyncDispose } from './disposable';
import { attemptTimeoutMs, Keeper } from './keeper';
import { LeaseHandle, type HandleHost } from './lease-handle';
import { leasePath } from './paths';
import { newRequestId } from './runtime';
import type { Transport } from './transport';
import type { HeldLease, Metadata, PendingReleaseRequest, SessionView } from './types';

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
  /** Wait in the route's FIFO queue up to this long (0 to 30 s); 0 answers `lease_conflict` at once. */
  waitMs?: number | undefined;
  metadata?: Metadata | undefined;
  /** Abandons the call (a waiting acquire leaves the queue). */
  signal?: AbortSignal | undefined;
}

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

  /** @internal Made by `LeaseholdClient.openSession`. */
  constructor(transport: Transport, id: string, view: SessionView, sentAt: number) {
    super();
    this.#transport = transport;
    this.#id = id;
    this.#view = view;
    this.ownerId = view.owner_id;
    this.ttlMs = view.ttl_ms;
    this.holderIncarnation = view.holder_incarnation;
    const handles = this.#handles;
    this.#host = {
      transport,
      sessionId: id,
      ended: (h) => {
        handles.delete(h);
      },
      releaseRequests: (requests) => this.#releaseRequests(requests),
    };
    this.#keeper = new Keeper(
      {
        transport,
        ttlMs: () => this.ttlMs,
        refresh: () => this.keepAlive(),
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
   * `lease_conflict` when the route is held (after waiting, with `waitMs`).
   * One request_id serves every retry, so a lost answer never acquires twice.
   */
  async acquire(route: string, opts: AcquireOptions = {}): Promise<LeaseHandle> {
    this.#assertOpen();
    const body: Record<string, unknown> = { session_id: this.#id, request_id: newRequestId() };
    if (opts.ttlMs !== undefined) body.ttl_ms = opts.ttlMs;
    if (opts.maxLifetimeMs !== undefined) body.max_lifetime_ms = opts.maxLifetimeMs;
    if (opts.waitMs !== undefined) body.wait_ms = opts.waitMs;
    if (opts.metadata !== undefined) body.metadata = opts.metadata;
    const sentAt = this.#transport.clock.now();
    const answer = await this.#transport.call<{ lease: HeldLease; queued: boolean }>('POST', leasePath(route, 'acquire'), {
      body,
      retry: 'idempotent',
      signal: opts.signal,
      extraTimeoutMs: opts.waitMs ?? 0,
    });
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

  #endHandles(how: 'released' | LeaseholdError): void {
    for (const h of [...this.#handles]) h.end(how);
    this.#handles.clear();
  }

  #lose(reason: LeaseholdError): void {
    if (this.#state !== 'open') return;
    this.#state = 'lost';
    this.#keeper.stop();
    this.#controller.abort(reason);
    this.#endHandles(this.#lostError());
    this.dispatchEvent(new Event('lost'));
  }
}

installAsyncDispose(Session.prototype);
