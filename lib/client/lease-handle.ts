/**
 * A held lease that keeps itself: it renews at a third of its TTL (±20 %
 * jitter), aborts `signal` the moment the lease is lost (the server says
 * `lease_lost`, no renewal succeeded before the local deadline, or the
 * session was lost), and releases on `release()` or `await using`.
 *
 * Deadlines are local and conservative: an answer's `remaining_ms` counts from
 * the moment the call was *sent*, so clock skew between client and server can
 * only make the handle give up early, never late.
 */

import { LeaseholdError, closedError, isLeaseholdError } from './errors';
import { installAsyncDispose } from './disposable';
import { leasePath } from './paths';
import { attemptTimeoutMs, Keeper } from './keeper';
import { newRequestId } from './runtime';
import type { Transport } from './transport';
import type { Checkpoint, CheckpointWritten, HeldLease, PendingReleaseRequest } from './types';

export type LeaseState = 'held' | 'released' | 'lost';


/** What a handle needs of its session (internal). */
export interface HandleHost {
  readonly transport: Transport;
  readonly sessionId: string;
  /** Called once when the handle ends, however it ends. */
  ended(handle: LeaseHandle): void;
  /** A renew answer listed the session's pending release requests (the host tells each handle). */
  releaseRequests(requests: readonly PendingReleaseRequest[]): void;
  /**
   * The handle's scheduled renewal, in the session's next batched renew
   * (`POST /api/v1/sessions/renew`); undefined when the session does not
   * batch (turned off, or a server without the endpoint): renew alone then.
   */
  batchRenew?(handle: LeaseHandle): Promise<HeldLease> | undefined;
}

/** Dispatched on a lease handle when someone asked its holder to release (docs/release-requests.md). */
export class ReleaseRequestedEvent extends Event {
  constructor(readonly request: PendingReleaseRequest) {
    super('releaseRequested');
  }
}

/** The events a lease handle dispatches, by type: what `addEventListener` gives each listener. */
export interface LeaseHandleEventMap {
  /** Someone asked the holder to release this lease; `event.request` is the request. */
  releaseRequested: ReleaseRequestedEvent;
}

export interface LeaseHandle extends AsyncDisposable {
  addEventListener<K extends keyof LeaseHandleEventMap>(type: K, listener: (this: LeaseHandle, event: LeaseHandleEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof LeaseHandleEventMap>(type: K, listener: (this: LeaseHandle, event: LeaseHandleEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

export class LeaseHandle extends EventTarget {
  readonly route: string;
  readonly leaseId: string;
  /** Pass this to every store the work writes to, and have the store check it (docs/sdk.md). */
  readonly fencingToken: number;
  /** True when the lease was granted from the wait queue. */
  readonly queued: boolean;
  readonly #host: HandleHost;
  /**
   * Made when first asked for (`signal`, `releaseRequested`): a fleet holds
   * thousands of handles whose signals nobody reads, and each controller
   * with its signal is an event target of its own (docs/sdk.md "Memory").
   */
  #controller: AbortController | undefined;
  #releaseController: AbortController | undefined;
  /** Why the handle ended (set once, with its state). */
  #endReason: LeaseholdError | undefined;
  #releaseRequest: PendingReleaseRequest | undefined;
  #lease: HeldLease;
  #state: LeaseState = 'held';
  readonly #keeper: Keeper;
  #renewing: Promise<HeldLease> | undefined;
  /** When the last successful renewal (or the acquire) was sent, on the local clock. */
  #renewedAt: number;
  #releasing = false;
  /** The jitter draw of the batch that renewed this handle last, for its next renewal's time (keeper.ts, `draw`). */
  #batchDraw: number | undefined;

  /** @internal Made by `Session.acquire`. */
  constructor(host: HandleHost, lease: HeldLease, queued: boolean, sentAt: number) {
    super();
    this.#host = host;
    this.#lease = Object.freeze({ ...lease });
    this.route = lease.route;
    this.leaseId = lease.lease_id;
    this.fencingToken = lease.fencing_token;
    this.queued = queued;
    this.#renewedAt = sentAt;
    this.#keeper = new Keeper(
      {
        transport: host.transport,
        ttlMs: () => this.#lease.ttl_ms,
        refresh: () => this.#scheduledRenew(),
        expired: () => this.#lose(new LeaseholdError({ code: 'lease_lost', message: 'no renewal succeeded before the lease expired', fromServer: false })),
        draw: () => {
          const x = this.#batchDraw;
          this.#batchDraw = undefined;
          return x;
        },
      },
      sentAt + lease.remaining_ms,
    );
  }

  /** The latest answer from the server about this lease. */
  get lease(): HeldLease {
    return this.#lease;
  }

  get expiresAt(): Date {
    return new Date(this.#lease.expires_at);
  }

  /** Aborted when the lease ends for any reason; `signal.reason` is a LeaseholdError saying why. */
  get signal(): AbortSignal {
    return (this.#controller ??= abortedWith(this.#endReason)).signal;
  }

  /**
   * Aborted when someone asks the holder to release this lease (a contender
   * or an operator; docs/release-requests.md): `reason` is the request
   * (`{ route, fencing_token, requested_at, reason }`). The lease is still
   * held: finish the current unit of work, checkpoint and `release()`.
   * A `releaseRequested` event (a ReleaseRequestedEvent) fires at the same
   * moment. Learned from renew and keepalive answers, so within one renewal
   * interval.
   */
  get releaseRequested(): AbortSignal {
    return (this.#releaseController ??= abortedWith(this.#releaseRequest)).signal;
  }

  /** The pending release request, once one arrived. */
  get releaseRequest(): PendingReleaseRequest | undefined {
    return this.#releaseRequest;
  }

  /** @internal A renew or keepalive answer listed this request; only this exact lease's request counts. */
  noteReleaseRequest(request: PendingReleaseRequest): void {
    if (this.#state !== 'held' || request.route !== this.route || request.fencing_token !== this.fencingToken) return;
    if (this.#releaseRequest !== undefined) return;
    this.#releaseRequest = request;
    this.#releaseController?.abort(request);
    this.dispatchEvent(new ReleaseRequestedEvent(request));
  }

  get state(): LeaseState {
    return this.#state;
  }

  /** Why the lease was lost (`lease_lost` or `session_lost`), once it was. */
  get lostReason(): LeaseholdError | undefined {
    return this.#state === 'lost' ? this.#endReason : undefined;
  }

  /**
   * Renew now (the handle also does this by itself). Resolves with the renewed
   * lease; throws `lease_lost` (and aborts `signal`) if the lease is gone.
   */
  renew(ttlMs?: number): Promise<HeldLease> {
    this.#assertHeld();
    this.#renewing ??= this.#renewOnce(ttlMs).finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  /**
   * Release the lease (compare-and-delete on lease id and token). Resolves
   * when the server confirms; throws `lease_lost` if the lease was already
   * lost, so the caller knows its work may have been fenced off.
   */
  async release(): Promise<void> {
    if (this.#state === 'released') return;
    if (this.#state === 'lost') throw this.lostReason;
    this.#keeper.pause();
    const body = { session_id: this.#host.sessionId, request_id: newRequestId(), lease_id: this.leaseId, fencing_token: this.fencingToken };
    this.#releasing = true;
    try {
      await this.#host.transport.call('POST', leasePath(this.route, 'release'), { body, retry: 'idempotent' });
    } catch (e) {
      this.#releasing = false;
      if (isLeaseholdError(e, 'lease_lost')) {
        this.#lose(e);
        throw e;
      }
      // The outcome is unknown: keep renewing so the lease is not silently
      // abandoned in an unknown state, and let the caller retry.
      if (this.#state === 'held') this.#keeper.resume(true);
      throw e;
    }
    this.#releasing = false;
    this.end('released');
  }

  /**
   * The fenced write (docs/semantics.md §5): stores `value` as this route's
   * checkpoint if, in the same atomic step, this lease is still the active one.
   * Throws `lease_lost` (and aborts `signal`) otherwise.
   */
  async checkpoint(value: unknown): Promise<CheckpointWritten> {
    this.#assertHeld();
    const body = { session_id: this.#host.sessionId, request_id: newRequestId(), lease_id: this.leaseId, fencing_token: this.fencingToken, value };
    try {
      const answer = await this.#host.transport.call<{ checkpoint: CheckpointWritten }>('PUT', leasePath(this.route, 'checkpoint'), { body, retry: 'idempotent' });
      return answer.data.checkpoint;
    } catch (e) {
      if (isLeaseholdError(e, 'lease_lost')) this.#lose(e);
      throw e;
    }
  }

  /** The route's checkpoint (linearizable), or undefined when it never had one. */
  async readCheckpoint(): Promise<Checkpoint | undefined> {
    try {
      const answer = await this.#host.transport.call<{ checkpoint: Checkpoint }>('GET', leasePath(this.route, 'checkpoint'), { retry: 'safe' });
      return answer.data.checkpoint;
    } catch (e) {
      if (isLeaseholdError(e, 'checkpoint_not_found')) return undefined;
      throw e;
    }
  }

  /** Release, ignoring a lease that is already gone: what `await using` calls. */
  async dispose(): Promise<void> {
    try {
      await this.release();
    } catch (e) {
      if (!isLeaseholdError(e)) throw e;
    }
  }

  /** @internal Join the batch going out now if the last renewal was sent at least `minAgeMs` ago (and none runs). */
  joinBatch(now: number, minAgeMs: number): void {
    if (this.#state === 'held' && this.#renewing === undefined && now - this.#renewedAt >= minAgeMs) this.#keeper.refreshNow();
  }

  /** @internal When the handle's next renewal is due (local clock). */
  get renewDueAt(): number {
    return this.#state === 'held' && this.#renewing === undefined ? this.#keeper.dueAt : Number.POSITIVE_INFINITY;
  }

  /**
   * @internal A batched renew (sent at `sentAt`) answered for this lease: the
   * renewed lease, or `lease_lost` (ignored while this handle's own release
   * is in flight: the release, not a loss, ended it). `draw` places the
   * next renewal in its jitter window, the same for the whole batch.
   */
  settleBatch(outcome: HeldLease | LeaseholdError, sentAt: number, draw?: number): void {
    if (this.#state !== 'held') return;
    if (outcome instanceof LeaseholdError) {
      if (!this.#releasing) this.#lose(outcome);
      return;
    }
    // The answer's own object, parsed for this handle alone: frozen, not copied (a fleet renews thousands a second).
    this.#lease = Object.freeze(outcome);
    this.#renewedAt = sentAt;
    this.#batchDraw = draw;
    this.#keeper.extend(sentAt + outcome.remaining_ms);
  }

  /** @internal Renew alone, as before batching (a server without the batched endpoint). */
  renewAlone(): Promise<HeldLease> {
    return this.#renewOnce();
  }

  /** @internal End the handle without a call (its session closed, or was lost). */
  end(how: 'released' | LeaseholdError): void {
    if (this.#state !== 'held') return;
    if (how === 'released') {
      this.#state = 'released';
      this.#keeper.stop();
      this.#endReason = closedError('the lease handle', 'was released');
      this.#controller?.abort(this.#endReason);
      this.#host.ended(this);
    } else {
      this.#lose(how);
    }
  }

  #assertHeld(): void {
    if (this.#state === 'lost') throw this.lostReason;
    if (this.#state === 'released') throw closedError('the lease handle', 'was released');
  }

  /** The keeper's renewal: batched with the session's other due handles when the session batches. */
  #scheduledRenew(): Promise<HeldLease> {
    if (this.#renewing !== undefined) return this.#renewing;
    const batched = this.#host.batchRenew?.(this);
    if (batched === undefined) return this.renew();
    this.#renewing = batched.finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #renewOnce(ttlMs?: number): Promise<HeldLease> {
    const body: Record<string, unknown> = { session_id: this.#host.sessionId, request_id: newRequestId(), lease_id: this.leaseId, fencing_token: this.fencingToken };
    if (ttlMs !== undefined) body.ttl_ms = ttlMs;
    const sentAt = this.#host.transport.clock.now();
    try {
      const answer = await this.#host.transport.call<{ lease: HeldLease; release_requests?: PendingReleaseRequest[] }>('POST', leasePath(this.route, 'renew'), {
        body,
        retry: 'idempotent',
        signal: this.signal,
        timeoutMs: attemptTimeoutMs(this.#lease.ttl_ms, this.#host.transport.timeoutMs),
      });
      if (this.#state === 'held') {
        this.#lease = Object.freeze(answer.data.lease);
        this.#renewedAt = sentAt;
        this.#keeper.extend(sentAt + answer.data.lease.remaining_ms);
      }
      if (answer.data.release_requests?.length) this.#host.releaseRequests(answer.data.release_requests);
      return answer.data.lease;
    } catch (e) {
      if (isLeaseholdError(e, 'lease_lost')) this.#lose(e);
      throw e;
    }
  }

  #lose(reason: LeaseholdError): void {
    if (this.#state !== 'held') return;
    this.#state = 'lost';
    this.#keeper.stop();
    this.#endReason = reason;
    this.#controller?.abort(reason);
    this.#host.ended(this);
  }
}

/** A controller made after the fact: aborted with `reason` when the thing it signals already happened. */
function abortedWith(reason: unknown): AbortController {
  const c = new AbortController();
  if (reason !== undefined) c.abort(reason);
  return c;
}

installAsyncDispose(LeaseHandle.prototype);
