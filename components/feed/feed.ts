'use client';

import { isLeaseholdError, type ChangeEvent, type ReleaseRequestNotice, type RenewedEvent, type StreamEnd, type Subscription } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { useFeedStore } from '@/components/feed/feed-store';

export type FeedEvent = ChangeEvent | RenewedEvent | ReleaseRequestNotice;
type Listener = (event: FeedEvent) => void;

interface Watch {
  listeners: Set<Listener>;
  /** Called each time the selector is registered on a stream: changes from then on arrive, so a fresh LIST is complete. */
  registered: Set<() => void>;
  /** How many watchers asked renewal hints; registered with them while any does. */
  renewals: number;
}

/** Why a stream ended, for the Feed badge's title. */
function describeEnd(end: StreamEnd): string {
  switch (end.reason) {
    case 'heartbeat_timeout':
      return 'no heartbeat for two intervals';
    case 'overflow':
      return 'the server dropped this stream (it fell behind); resyncing';
    case 'closed':
      return `closed by the server (${end.detail ?? 'no reason'})`;
    case 'refused':
      return end.error?.message ?? 'the server refused the stream';
    default:
      return 'connection lost';
  }
}

/**
 * The console's one inventory stream per tab (docs/console.md: browsers allow few
 * connections per origin), shared by every component on the page. Components
 * `watch` a selector; the feed registers each selector once, reconnects with
 * backoff when the stream ends, registers everything again, and then tells
 * `onResync` listeners that events may have been missed (they refetch).
 */
class ConsoleFeed {
  readonly #watches = new Map<string, Watch>();
  readonly #resync = new Set<() => void>();
  #sub: Subscription | undefined;
  /** Selector → renewals flag as registered on the current stream. */
  readonly #registered = new Map<string, boolean>();
  #running = false;
  /** Bumped by stop(): a loop from before a sign-out never outlives it. */
  #generation = 0;
  #sync: Promise<void> = Promise.resolve();
  #wake: (() => void) | undefined;

  /** Receive the changes of `selector` until the returned function is called. */
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
      // The stream itself stays open for the tab: the next page watches at once.
      this.#reconcile();
    };
  }

  /** Called after a reconnection, when changes may have been missed. */
  onResync(listener: () => void): () => void {
    this.#resync.add(listener);
    return () => this.#resync.delete(listener);
  }

  /** Sign-out: close the stream and forget every registration. */
  stop(): void {
    this.#running = false;
    this.#generation++;
    this.#sub?.close();
    this.#wake?.();
    useFeedStore.getState().feedStopped();
  }

  #start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#loop();
  }

  async #loop(): Promise<void> {
    const store = useFeedStore.getState();
    const generation = this.#generation;
    const current = () => this.#running && this.#generation === generation;
    let failures = 0;
    let opened = false;
    while (current()) {
      store.feedConnecting(opened);
      const sub = consoleClient().subscribe([]);
      this.#sub = sub;
      this.#registered.clear();
      sub.on((event) => {
        if (event.type === 'change' || event.type === 'renewed' || event.type === 'release_requested') {
          if (event.type === 'change') useFeedStore.getState().changeArrived(event.revision);
          const w = this.#watches.get(event.selector);
          if (w) for (const l of w.listeners) l(event);
        }
      });
      try {
        const hello = await sub.opened;
        await this.#registerAll(sub);
        useFeedStore.getState().feedOpened(hello.revision);
        if (opened) for (const l of this.#resync) l();
        opened = true;
        failures = 0;
      } catch {
        // A registration that failed for another reason than the token's
        // reach: start over on a new stream. A refused stream has ended already.
        sub.close();
      }
      const end = await sub.done;
      if (!current()) break;
      this.#sub = undefined;
      const terminal =
        (end.reason === 'closed' && end.detail !== 'shutdown') ||
        (end.reason === 'refused' && (isLeaseholdError(end.error, 'invalid_credential') || isLeaseholdError(end.error, 'access_denied')));
      if (terminal) {
        useFeedStore.getState().feedLost('stale', describeEnd(end));
        this.#running = false;
        break;
      }
      useFeedStore.getState().feedLost(end.reason === 'heartbeat_timeout' ? 'stale' : 'reconnecting', describeEnd(end));
      failures++;
      // The first retry is immediate; later ones back off, with jitter, to 15 s.
      const ceiling = failures <= 1 ? 0 : Math.min(15_000, 250 * 2 ** (failures - 2));
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, ceiling / 2 + (Math.random() * ceiling) / 2);
      });
      this.#wake = undefined;
    }
  }

  async #registerAll(sub: Subscription): Promise<void> {
    await Promise.all([...this.#watches].map(([selector, w]) => this.#register(sub, selector, w.renewals > 0)));
  }

  async #register(sub: Subscription, selector: string, renewals: boolean): Promise<void> {
    this.#registered.set(selector, renewals);
    try {
      await sub.add(selector, { renewals });
      useFeedStore.getState().selectorAccepted(selector);
      for (const cb of this.#watches.get(selector)?.registered ?? []) cb();
    } catch (e) {
      this.#registered.delete(selector);
      // A selector the token may not read is that watcher's problem, not the stream's.
      if (isLeaseholdError(e) && (e.code === 'access_denied' || e.code === 'invalid_selector')) {
        useFeedStore.getState().selectorRefused(selector, e.message);
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
          if (have === undefined || (want && !have)) await this.#register(sub, selector, want);
        }
        for (const selector of [...this.#registered.keys()]) {
          if (!this.#watches.has(selector)) {
            this.#registered.delete(selector);
            await sub.remove(selector);
          }
        }
      } catch {
        // The stream is ending; the loop reconnects and registers everything.
      }
    });
  }
}

let feed: ConsoleFeed | undefined;

/** The tab's feed (created on first use, in the browser only). */
export function consoleFeed(): ConsoleFeed {
  feed ??= new ConsoleFeed();
  return feed;
}
