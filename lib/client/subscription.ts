/**
 * One live stream (docs/semantics.md §8) read with
 * fetch streaming, so it carries the bearer token when the client has one
 * (else the browser's cookie). Registrations are named by their selector: the
 * server's subscription ids never leave this file.
 *
 * Events are hints. The stream ends (see `done`) on overflow, a `closed`
 * event, a lost connection or a missed heartbeat. A new stream opened with
 * `since` (the last revision applied) and the same selectors gets the
 * changes it missed replayed first (docs/semantics.md §8, "Resuming"), unless the server
 * answers `resync`: then the caller lists again. `observeInventory` does all
 * of that; use this class directly only to react to changes, not to know the
 * held set.
 */

import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { LeaseholdError, closedError, isLeaseholdError } from './errors';
import { streamSubscriptionsPath } from './paths';
import type { TimerHandle } from './runtime';
import { networkReason, parseAnswer, type Transport } from './transport';
import type { ChangeKind, LeaseView } from './types';

export interface HelloEvent {
  readonly type: 'hello';
  readonly epoch: string;
  /** The family's revision when the stream opened. */
  readonly revision: number;
  readonly heartbeat_ms: number;
  /**
   * The stream was opened with `since` and the server replays the changes
   * after it (maybe none) before live ones. False for a fresh stream, and
   * when a `resync` follows instead.
   */
  readonly resumed: boolean;
}

export interface SubscribedEvent {
  readonly type: 'subscribed';
  readonly selector: string;
  readonly created: boolean;
}

export interface ChangeEvent {
  readonly type: 'change';
  /** The registration (selector string as registered) this event is for. */
  readonly selector: string;
  readonly route: string;
  readonly change: ChangeKind;
  readonly revision: number;
  /** On `acquired`: whether the grant came from the wait queue. */
  readonly queued?: boolean;
  /** On `acquired` only. */
  readonly lease?: LeaseView;
}

export interface RenewedEvent {
  readonly type: 'renewed';
  readonly selector: string;
  readonly route: string;
  readonly expires_at: string;
  readonly renewal_count: number;
}

/** Someone asked the holder of `route` to release (docs/release-requests.md); not a change, no revision. */
export interface ReleaseRequestNotice {
  readonly type: 'release_requested';
  readonly selector: string;
  readonly route: string;
  readonly fencing_token: number;
  readonly reason: string;
  readonly requested_at: string;
}

export interface OverflowEvent {
  readonly type: 'overflow';
  readonly reason: 'slow_consumer' | 'resync';
}

/**
 * The server cannot replay from the stream's `since` (docs/semantics.md §8, "Resuming"):
 * the log's horizon passed it, it belongs to another store lifetime
 * (`epoch`), or the replay would be too long. The stream stays open, its
 * registrations live: the caller lists again, as after `overflow`, without
 * reconnecting. `revision` is the family's revision when the stream opened.
 */
export interface ResyncEvent {
  readonly type: 'resync';
  readonly reason: 'horizon' | 'epoch' | 'too_many';
  readonly revision: number;
}

export interface ClosedEvent {
  readonly type: 'closed';
  readonly reason: 'token_revoked' | 'token_expired' | 'logged_out' | 'shutdown';
}

export type StreamEvent = HelloEvent | SubscribedEvent | ChangeEvent | RenewedEvent | ReleaseRequestNotice | ResyncEvent | OverflowEvent | ClosedEvent;

/**
 * Why a stream ended: `overflow` and `closed` (the server said so; `detail`
 * holds its reason), `disconnected` (the connection ended), `heartbeat_timeout`
 * (nothing arrived for two heartbeats), `refused` (the server refused to open
 * it: `error` says why), `closed_by_client`.
 */
export interface StreamEnd {
  readonly reason: 'overflow' | 'closed' | 'disconnected' | 'heartbeat_timeout' | 'refused' | 'closed_by_client';
  readonly detail?: string;
  readonly error?: LeaseholdError;
}

export interface SubscribeOptions {
  /** Ask renewal hints (`renewed` events) for the selectors given at open. */
  renewals?: boolean;
  signal?: AbortSignal;
  /**
   * Resume: the last revision the caller applied. The server replays every
   * matching change after it before live events, or sends `resync`
   * (docs/semantics.md §8, "Resuming"). The selectors must be given at open, so that
   * the replay covers them.
   */
  since?: number | undefined;
  /**
   * The async iterator pauses reading the socket while this many events wait
   * for it (default 1,024), so a slow loop leads the server to `overflow`
   * instead of the client buffering without bound.
   */
  highWaterMark?: number;
}

type Listener = (event: StreamEvent) => void;

/**
 * What an async iterator throws once the stream has ended and its events are
 * read: the refusal for a stream that never opened (`access_denied`,
 * `network_error`, …), `stream_closed` for one whose connection was lost;
 * nothing when it was closed (by `close()`, or by the server with a
 * `closed` or `overflow` event the loop has seen).
 */
function iteratorFailure(end: StreamEnd): LeaseholdError | undefined {
  switch (end.reason) {
    case 'refused':
      return end.error ?? new LeaseholdError({ code: 'stream_closed', message: 'the stream was refused', retryable: true });
    case 'disconnected':
    case 'heartbeat_timeout':
      return new LeaseholdError({ code: 'stream_closed', message: `the stream ended (${end.reason})`, retryable: true });
    default:
      return undefined;
  }
}

const STREAM_PATH = '/api/v1/inventory/stream';

export class Subscription implements AsyncIterable<StreamEvent> {
  /** Resolves once the stream is open and the selectors given at open are registered; rejects if refused. */
  readonly opened: Promise<HelloEvent>;
  /** Resolves (never rejects) when the stream has ended, saying why. */
  readonly done: Promise<StreamEnd>;
  readonly #transport: Transport;
  readonly #controller = new AbortController();
  readonly #listeners = new Set<Listener>();
  readonly #bySelector = new Map<string, string>();
  readonly #byId = new Map<string, string>();
  readonly #queue: StreamEvent[] = [];
  readonly #highWater: number;
  #waiter: (() => void) | undefined;
  #resumeReader: (() => void) | undefined;
  #iterating = false;
  /** Events queue for the iterator from the start, unless callbacks come first. */
  #queueing = true;
  #streamIdValue = '';
  #hello: HelloEvent | undefined;
  #end: StreamEnd | undefined;
  #resolveDone!: (end: StreamEnd) => void;
  #lastByteAt = 0;
  #watchdog: TimerHandle | undefined;
  #lastRevision: number | undefined;

  /** @internal Use `LeaseholdClient.subscribe`. */
  constructor(transport: Transport, selectors: readonly string[], opts: SubscribeOptions = {}) {
    this.#transport = transport;
    this.#highWater = opts.highWaterMark ?? 1024;
    this.done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
    if (opts.signal) {
      if (opts.signal.aborted) this.#controller.abort();
      else opts.signal.addEventListener('abort', () => this.close(), { once: true });
    }
    this.opened = this.#run(selectors, opts.renewals === true, opts.since);
    // `opened` is also observed through `done`; never leave it unhandled.
    this.opened.catch(() => undefined);
  }

  /** The stream's hello (epoch, revision at open), once open. */
  get hello(): HelloEvent | undefined {
    return this.#hello;
  }

  /** The revision of the newest change this stream delivered (its SSE id), or undefined before the first. */
  get lastRevision(): number | undefined {
    return this.#lastRevision;
  }

  get ended(): StreamEnd | undefined {
    return this.#end;
  }

  /** The selectors registered on this stream. */
  get selectors(): string[] {
    return [...this.#bySelector.keys()];
  }

  /**
   * Call `listener` for every event from now on, synchronously, in order.
   * Returns the unsubscribe function. A listener that throws does not end
   * the stream; its error is rethrown asynchronously (see `#emit`).
   */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    if (!this.#iterating) {
      this.#queueing = false;
      this.#queue.length = 0;
    }
    return () => this.#listeners.delete(listener);
  }

  /**
   * Register `selector` on this stream. Resolves once the server has applied
   * it: every change committed after that reaches this stream. Registering the
   * same selector again is idempotent (`created: false`); with `renewals`, it
   * turns renewal hints on.
   */
  async add(selector: string, opts: { renewals?: boolean } = {}): Promise<{ created: boolean }> {
    await this.opened;
    this.#assertOpen();
    const body: Record<string, unknown> = { selector };
    if (opts.renewals) body.renewals = true;
    try {
      const answer = await this.#transport.call<{ subscription_id: string; selector: string; created: boolean }>(
        'POST',
        streamSubscriptionsPath(this.#streamIdValue),
        { body, retry: 'safe', signal: this.#controller.signal },
      );
      this.#map(answer.data.subscription_id, answer.data.selector);
      return { created: answer.data.created };
    } catch (e) {
      throw this.#streamError(e);
    }
  }

  /** Remove the registration of `selector` (no-op when it is not registered). */
  async remove(selector: string): Promise<void> {
    await this.opened;
    this.#assertOpen();
    const id = this.#bySelector.get(selector);
    if (id === undefined) return;
    try {
      await this.#transport.call('DELETE', streamSubscriptionsPath(this.#streamIdValue, id), { retry: 'safe', signal: this.#controller.signal });
    } catch (e) {
      // A retry whose first attempt went through finds nothing: removed all the same.
      if (!isLeaseholdError(e, 'not_found')) throw this.#streamError(e);
    }
    this.#bySelector.delete(selector);
    this.#byId.delete(id);
  }

  /** End the stream (its registrations die with it). */
  close(): void {
    this.#finish({ reason: 'closed_by_client' });
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    if (this.#iterating) throw new TypeError('a subscription has one iterator at a time');
    this.#iterating = true;
    this.#queueing = true;
    try {
      for (;;) {
        const next = this.#queue.shift();
        if (next !== undefined) {
          if (this.#queue.length < this.#highWater / 2) this.#wakeReader();
          yield next;
          continue;
        }
        if (this.#end) {
          const failure = iteratorFailure(this.#end);
          if (failure) throw failure;
          return;
        }
        await new Promise<void>((resolve) => {
          this.#waiter = resolve;
        });
      }
    } finally {
      this.#iterating = false;
      this.#queueing = false;
      this.#queue.length = 0;
      this.#wakeReader();
    }
  }


  #assertOpen(): void {
    if (this.#end) throw new LeaseholdError({ code: 'stream_closed', message: `the stream ended (${this.#end.reason})` });
  }

  #streamError(e: unknown): unknown {
    if (this.#end && !(isLeaseholdError(e) && e.fromServer && e.code !== 'not_found')) {
      return new LeaseholdError({ code: 'stream_closed', message: `the stream ended (${this.#end.reason})`, cause: e });
    }
    return e;
  }

  #map(id: string, selector: string): void {
    this.#byId.set(id, selector);
    this.#bySelector.set(selector, id);
  }

  async #run(selectors: readonly string[], renewals: boolean, since: number | undefined): Promise<HelloEvent> {
    const query: Record<string, string | readonly string[]> = { selector: selectors };
    if (renewals) query.renewals = '1';
    if (since !== undefined) query.since = String(since);
    const init = this.#transport.init('GET', undefined, this.#controller.signal);
    (init.headers as Record<string, string>).Accept = 'text/event-stream';
    let res: Response;
    try {
      res = await this.#transport.fetch(this.#transport.url(STREAM_PATH, query), init);
    } catch (cause) {
      const error = isLeaseholdError(cause, 'invalid_config')
        ? cause
        : new LeaseholdError({ code: 'network_error', message: `cannot open the live stream at ${this.#transport.baseUrl}${STREAM_PATH}: ${networkReason(cause)}`, retryable: true, cause });
      this.#finish(this.#end ?? { reason: 'refused', error });
      throw error;
    }
    if (!res.ok || !res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      let error: LeaseholdError;
      try {
        parseAnswer(res, await res.text());
        error = new LeaseholdError({ code: 'invalid_response', message: 'the stream answered without an event stream', status: res.status });
      } catch (e) {
        error = isLeaseholdError(e) ? e : new LeaseholdError({ code: 'network_error', message: 'the stream failed', cause: e, retryable: true });
      }
      this.#finish({ reason: 'refused', error });
      throw error;
    }
    let initial = selectors.length;
    let resolveOpened!: (hello: HelloEvent) => void;
    const opened = new Promise<HelloEvent>((resolve) => {
      resolveOpened = resolve;
    });
    const parser = createParser({
      onEvent: (msg) => {
        const event = this.#decode(msg);
        if (event === undefined) return;
        if (event.type === 'hello') {
          this.#hello = event;
          this.#armWatchdog(event.heartbeat_ms);
          if (initial === 0) resolveOpened(event);
        } else if (event.type === 'subscribed' && this.#hello && initial > 0 && --initial === 0) {
          resolveOpened(this.#hello);
        }
        this.#emit(event);
        if (event.type === 'overflow') this.#finish({ reason: 'overflow', detail: event.reason });
        if (event.type === 'closed') this.#finish({ reason: 'closed', detail: event.reason });
      },
    });
    void this.#pump(res.body, parser);
    const hello = await Promise.race([opened, this.done.then((end) => Promise.reject(this.#endError(end)))]);
    return hello;
  }

  #endError(end: StreamEnd): LeaseholdError {
    return end.error ?? new LeaseholdError({ code: 'stream_closed', message: `the stream ended before it was ready (${end.reason})`, retryable: true });
  }

  async #pump(body: ReadableStream<Uint8Array>, parser: ReturnType<typeof createParser>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        if (this.#end) break;
        if (this.#queueing && this.#queue.length >= this.#highWater) {
          await new Promise<void>((resolve) => {
            this.#resumeReader = resolve;
          });
          continue;
        }
        const { value, done } = await reader.read();
        if (done) break;
        this.#lastByteAt = this.#transport.clock.now();
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } catch {
      // A reset or aborted connection: reported as `disconnected` below.
    } finally {
      this.#finish(this.#end ?? { reason: 'disconnected' });
      reader.cancel().catch(() => undefined);
    }
  }

  #wakeReader(): void {
    const resume = this.#resumeReader;
    this.#resumeReader = undefined;
    resume?.();
  }

  #armWatchdog(heartbeatMs: number): void {
    const { clock } = this.#transport;
    this.#lastByteAt = clock.now();
    const limit = 2 * heartbeatMs + 1000;
    const check = (): void => {
      if (this.#end) return;
      const idle = clock.now() - this.#lastByteAt;
      if (idle > limit && !this.#resumeReader) {
        this.#finish({ reason: 'heartbeat_timeout' });
        return;
      }
      this.#watchdog = clock.setTimeout(check, Math.max(100, limit - idle));
    };
    this.#watchdog = clock.setTimeout(check, limit);
  }

  #decode(msg: EventSourceMessage): StreamEvent | undefined {
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(msg.data) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    switch (msg.event) {
      case 'hello':
        this.#streamIdValue = String(data.stream_id);
        return {
          type: 'hello',
          epoch: data.epoch as string,
          revision: data.revision as number,
          heartbeat_ms: data.heartbeat_ms as number,
          resumed: data.resumed === true,
        };
      case 'subscribed': {
        const id = data.subscription_id as string;
        this.#map(id, data.selector as string);
        return { type: 'subscribed', selector: data.selector as string, created: data.created === true };
      }
      case 'change':
      case 'renewed':
      case 'release_requested': {
        const { subscription_id, ...rest } = data;
        const selector = this.#byId.get(subscription_id as string);
        if (selector === undefined) return undefined;
        if (msg.event === 'change' && typeof rest.revision === 'number') this.#lastRevision = Math.max(this.#lastRevision ?? 0, rest.revision);
        return { type: msg.event, selector, ...rest } as ChangeEvent | RenewedEvent | ReleaseRequestNotice;
      }
      case 'resync':
        return { type: 'resync', reason: data.reason as ResyncEvent['reason'], revision: data.revision as number };
      case 'overflow':
        return { type: 'overflow', reason: data.reason as OverflowEvent['reason'] };
      case 'closed':
        return { type: 'closed', reason: data.reason as ClosedEvent['reason'] };
      default:
        return undefined;
    }
  }

  #emit(event: StreamEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (e) {
        // The application's bug, not the stream's: as with EventTarget, the
        // other listeners still get the event, the stream stays open, and the
        // error is rethrown on its own (an uncaught exception in Node, the
        // page's `error` event in a browser) rather than lost.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
    if (this.#queueing) {
      this.#queue.push(event);
      const wake = this.#waiter;
      this.#waiter = undefined;
      wake?.();
    }
  }

  #finish(end: StreamEnd): void {
    if (this.#end) return;
    this.#end = end;
    if (this.#watchdog !== undefined) this.#transport.clock.clearTimeout(this.#watchdog);
    this.#controller.abort(closedError('stream'));
    this.#wakeReader();
    const wake = this.#waiter;
    this.#waiter = undefined;
    wake?.();
    this.#resolveDone(end);
  }
}
