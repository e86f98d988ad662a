/**
 * One stream shared by many watchers of different selectors, kept open
 * (docs/sdk.md "One stream for a page"): the console opens one per browser
 * tab, since browsers allow few connections per origin. Watchers `watch` a
 * selector; the feed registers each selector once and hands each watcher the
 * events of its selector.
 *
 * When the stream ends it reconnects by the SDK's one resume policy
 * (resume.ts, the observer's too): at once, then with bounded jittered
 * backoff, with every accepted selector in the query and `since` = the last
 * change revision it delivered, so the server replays what the watchers
 * missed and they need not list again (`resumed`). Only when the server says
 * `resync`, the stream ended in `overflow`, or the store's epoch changed are
 * the watchers told to list again (`relisted`: their `onRegistered` runs
 * again, as on a fresh registration).
 *
 * What watchers keep is theirs: they apply events by the SDK's merge rule
 * (merge.ts) to whatever they listed.
 */

import { isLeaseholdError, type LeaseholdError } from './errors';
import { judgeResume, ResumePoint, type Recovery } from './resume';
import { backoffMs, sleep, type Clock, type Random } from './runtime';
import type { ChangeEvent, HelloEvent, ReleaseRequestNotice, RenewedEvent, ResyncEvent, StreamEnd, SubscribeOptions, Subscription } from './subscription';

export type FeedEvent = ChangeEvent | RenewedEvent | ReleaseRequestNotice;
type Listener = (event: FeedEvent) => void;

/** What the feed tells whoever shows its state (the console's Feed badge). */
export type LiveFeedNotice =
  /** A stream is being opened; `again` after the first. */
  | { readonly type: 'connecting'; readonly again: boolean }
  /** The stream is open and every watched selector registered; `recovery` after a reconnection. */
  | { readonly type: 'live'; readonly hello: HelloEvent; readonly recovery: Recovery | undefined }
  /** A change was delivered (its revision: what the feed has seen up to). */
  | { readonly type: 'change'; readonly revision: number }
  /** The stream ended; `terminal` when the feed stopped for good (credentials). */
  | { readonly type: 'lost'; readonly end: StreamEnd; readonly terminal: boolean }
  /** The server refused to stream this selector to this token (grammar or grants): that watcher's problem, not the stream's. */
  | { readonly type: 'refused'; readonly selector: string; readonly error: LeaseholdError }
  | { readonly type: 'accepted'; readonly selector: string };

/** What the feed needs of the client. */
export interface LiveFeedHost {
  subscribe(selectors: readonly string[], opts?: SubscribeOptions): Subscription;
  readonly clock: Clock;
  readonly random: Random;
}

export interface LiveFeedOptions {
  /** Backoff between failed attempts: first ceiling (default 250 ms), cap (default 15 s). The first retry is immediate. */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Resume after a disconnect (default true); false relists every time. */
  resume?: boolean;
}

interface Watch {
  listeners: Set<Listener>;
  /** Called each time the selector is registered afresh (first, or after a relist): a LIST made now is complete. */
  registered: Set<() => void>;
  /** How many watchers asked renewal hints; registered with them while any does. */
  renewals: number;
}

const REFUSED = new Set(['access_denied', 'invalid_selector']);

export class LiveFeed {
  readonly #host: LiveFeedHost;
  readonly #opts: LiveFeedOptions;
  readonly #watches = new Map<string, Watch>();
  readonly #notices = new Set<(notice: LiveFeedNotice) => void>();
  readonly #point = new ResumePoint();
  #sub: Subscription | undefined;
  /** Selector → renewals flag as registered on the current stream. */
  readonly #registered = new Map<string, boolean>();
  /**
   * The selectors registered on the last live stream: a resuming stream
   * carries them in its query (their watchers hold every change up to
   * `since`). Not those the server refused: one refusal would refuse it all.
   */
  #carried = new Set<string>();
  #running = false;
  #stop = new AbortController();
  #sync: Promise<void> = Promise.resolve();

  constructor(host: LiveFeedHost, opts: LiveFeedOptions = {}) {
    this.#host = host;
    this.#opts = opts;
  }

  /** Receive the events of `selector` until the returned function is called. */
  watch(selector: string, listener: Listener, opts: { renewals?: boolean; onRegistered?: () => void } = {}): () => void {
    let w = this.#watches.get(selector);
    if (!w) this.#watches.set(selector, (w = { listeners: new Set(), registered: new Set(), renewals: 0 }));
    w.listeners.add(listener);
    if (opts.onRegistered) w.registered.add(opts.onRegistered);
    if (opts.renewals) w.renewals++;
    this.#start();
    this.#reconcile();
    return () => {
      const cur = this.#watches.get(selector);
      if (!cur?.listeners.delete(listener)) return;
      if (opts.onRegistered) cur.registered.delete(opts.onRegistered);
      if (opts.renewals) cur.renewals--;
      if (cur.listeners.size === 0) this.#watches.delete(selector);
      // The stream itself stays open: the next page watches at once.
      this.#reconcile();
    };
  }

  /** State changes, for a status display. Returns the unsubscribe function. */
  onNotice(listener: (notice: LiveFeedNotice) => void): () => void {
    this.#notices.add(listener);
    return () => this.#notices.delete(listener);
  }

  /** The revision up to which the watchers have every change (what a new stream resumes from). */
  get revision(): number | undefined {
    return this.#point.revision;
  }

  /** Close the stream and forget every registration and the resume point (sign-out). */
  stop(): void {
    this.#running = false;
    this.#stop.abort();
    this.#stop = new AbortController();
    this.#sub?.close();
    this.#sub = undefined;
    this.#point.revision = undefined;
    this.#point.epoch = undefined;
    this.#carried.clear();
  }

  #notify(notice: LiveFeedNotice): void {
    for (const l of [...this.#notices]) l(notice);
  }

  #start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#loop(this.#stop.signal);
  }

  async #loop(stopped: AbortSignal): Promise<void> {
    const initialMs = this.#opts.backoff?.initialMs ?? 250;
    const maxMs = this.#opts.backoff?.maxMs ?? 15_000;
    let failures = 0;
    let opened = false;
    while (!stopped.aborted) {
      this.#notify({ type: 'connecting', again: opened });
      const plan = this.#point.next(this.#opts.resume !== false);
      const { since } = plan;
      // A resumed stream carries the selectors the last one had registered
      // (their watchers' views are complete up to `since`); one watched
      // since then is registered afresh, so its watcher lists.
      const initial = since === undefined ? [] : [...this.#carried].filter((sel) => this.#watches.has(sel));
      const sub = since === undefined ? this.#host.subscribe([]) : this.#host.subscribe(initial, { since });
      this.#sub = sub;
      this.#registered.clear();
      /** Set once the hello is judged; a `resync` before that is part of the verdict. */
      let judged = false;
      let resync: ResyncEvent | undefined;
      sub.on((event) => {
        if (event.type === 'resync') {
          // The stream stays open; whatever the watchers hold must be listed again.
          if (!judged) resync = event;
          else this.#relisted(sub, { kind: 'relisted', reason: 'resync', detail: event.reason });
          return;
        }
        if (event.type !== 'change' && event.type !== 'renewed' && event.type !== 'release_requested') return;
        if (event.type === 'change') {
          this.#point.applied(event.revision);
          this.#notify({ type: 'change', revision: event.revision });
        }
        const w = this.#watches.get(event.selector);
        if (w) for (const l of [...w.listeners]) l(event);
      });
      try {
        const hello = await sub.opened;
        let recovery: Recovery | undefined;
        if (since !== undefined) {
          recovery = judgeResume(since, this.#point.epoch, hello, resync);
          for (const sel of initial) this.#registered.set(sel, false);
        } else if (opened) {
          recovery = { kind: 'relisted', reason: plan.reason ?? 'not_resumed' };
        }
        judged = true;
        // Resumed: the selectors stand and the replay follows; only new ones
        // (and renewal hints) are registered. Otherwise every watcher lists.
        await this.#registerAll(sub, recovery?.kind !== 'resumed');
        this.#carried = new Set(this.#registered.keys());
        if (recovery?.kind !== 'resumed') this.#point.listed(hello.revision, hello.epoch);
        this.#notify({ type: 'live', hello, recovery });
        opened = true;
        failures = 0;
      } catch {
        // A stream that would not resume (a server from before resumable
        // feeds, or a selector no longer readable, refusing the whole
        // stream): the next one starts fresh and registers one by one.
        const refusal = sub.ended?.reason === 'refused' ? sub.ended.error : undefined;
        if (since !== undefined && refusal !== undefined && (refusal.status === 400 || refusal.status === 403)) this.#point.mustRelist = 'not_resumed';
        // Start over on a new stream. A refused stream has ended already.
        sub.close();
      }
      const end = await sub.done;
      if (stopped.aborted) break;
      this.#sub = undefined;
      if (end.reason === 'overflow') this.#point.mustRelist = 'overflow';
      const terminal =
        (end.reason === 'closed' && end.detail !== 'shutdown') ||
        (end.reason === 'refused' && (isLeaseholdError(end.error, 'invalid_credential') || (since === undefined && isLeaseholdError(end.error, 'access_denied'))));
      this.#notify({ type: 'lost', end, terminal });
      if (terminal) {
        this.#running = false;
        break;
      }
      failures++;
      // The first retry is immediate; later ones back off, with jitter.
      try {
        if (failures > 1) await sleep(backoffMs(failures - 1, initialMs, maxMs, this.#host.random), this.#host.clock, stopped);
      } catch {
        break;
      }
    }
  }

  /** Tell every watcher to list again (their onRegistered), after registrations stand on `sub`. */
  #relisted(sub: Subscription, recovery: Recovery): void {
    this.#sync = this.#sync.then(() => {
      if (this.#sub !== sub || sub.ended) return;
      if (sub.hello) this.#point.listed(sub.hello.revision, sub.hello.epoch);
      for (const w of this.#watches.values()) for (const cb of [...w.registered]) cb();
      if (sub.hello) this.#notify({ type: 'live', hello: sub.hello, recovery });
    });
  }

  /** Register every watched selector not yet on `sub`; `fresh`: tell their watchers to list (a fresh or relisted stream). */
  async #registerAll(sub: Subscription, fresh: boolean): Promise<void> {
    const want = [...this.#watches].map(([selector, w]) => [selector, w.renewals > 0] as const);
    await Promise.all(
      want.map(async ([selector, renewals]) => {
        const have = this.#registered.get(selector);
        if (have === undefined || (renewals && !have)) await this.#register(sub, selector, renewals, fresh || have === undefined);
        else if (fresh) for (const cb of [...(this.#watches.get(selector)?.registered ?? [])]) cb();
      }),
    );
  }

  async #register(sub: Subscription, selector: string, renewals: boolean, announce: boolean): Promise<void> {
    const before = this.#registered.get(selector);
    this.#registered.set(selector, renewals);
    try {
      await sub.add(selector, { renewals });
      if (this.#sub === sub) this.#carried.add(selector);
      this.#notify({ type: 'accepted', selector });
      if (announce) for (const cb of [...(this.#watches.get(selector)?.registered ?? [])]) cb();
    } catch (e) {
      if (before === undefined) this.#registered.delete(selector);
      else this.#registered.set(selector, before);
      if (isLeaseholdError(e) && REFUSED.has(e.code)) {
        this.#notify({ type: 'refused', selector, error: e });
        return;
      }
      throw e;
    }
  }

  /** Bring the stream's registrations in line with the watches, one step at a time. */
  #reconcile(): void {
    this.#sync = this.#sync.then(async () => {
      const sub = this.#sub;
      if (!sub || sub.ended || !sub.hello) return;
      try {
        for (const [selector, w] of this.#watches) {
          const want = w.renewals > 0;
          const have = this.#registered.get(selector);
          if (have === undefined || (want && !have)) await this.#register(sub, selector, want, have === undefined);
        }
        for (const selector of [...this.#registered.keys()]) {
          if (!this.#watches.has(selector)) {
            this.#registered.delete(selector);
            this.#carried.delete(selector);
            await sub.remove(selector);
          }
        }
      } catch {
        // The stream is ending; the loop reconnects and registers everything.
      }
    });
  }
}
