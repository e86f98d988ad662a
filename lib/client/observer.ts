/**
 * The safe way to know what is held (docs/sdk.md "Fleet managers", docs/semantics.md
 * §8 "Building a view without a blind window" and "Resuming"). The first
 * time, it:
 *
 *   1. opens a stream and registers the selector, waiting for the server's
 *      acknowledgement, while buffering every event the stream brings;
 *   2. lists the selector to the end, page by page;
 *   3. installs that snapshot, applies the buffered changes (re-inspecting the
 *      routes changed after the page that covered them), and only then
 *      reports `ready`;
 *   4. applies live changes, and relists every reconciliation interval.
 *
 * Changes apply by one order-insensitive, idempotent rule on revisions
 * (merge.ts). Every change committed after the registration reaches the
 * buffer, and the last one per route decides, so the result is the true held
 * set however the snapshot and the buffer interleave.
 *
 * The view is complete up to a revision: the listing's oldest page, then the
 * newest change applied. When the stream ends (disconnect, heartbeat loss, a
 * server restart, a failed registration) the observer reports `resyncing`,
 * keeps its last view (stale, and said to be), and opens a new stream at once
 * (then with bounded jittered backoff) with the selector and `since` = that
 * revision. The server replays what the view missed, and the observer is
 * `ready` again without listing (`resumed`). It lists again (`relisted`) only
 * when it cannot trust a replay: the server answers `resync` (on a new stream
 * or an open one), the stream ended in `overflow`, the store's epoch changed,
 * or the server did not resume. Refusals that a retry cannot fix (bad
 * credentials, permission, grammar) and a view past `maxItems` end in
 * `error`.
 *
 * Observed items are frozen LeaseViews: no lease id, no session id, nothing
 * that can renew, release or take over a lease.
 */

import { LeaseholdError, closedError, isLeaseholdError } from './errors';
import { defaultReconcileIntervalMs, ReconcileScheduler } from './reconcile';
import { applyChange, applyRenewal, asView } from './merge';
import { judgeResume, ResumePoint, type Recovery } from './resume';
import { backoffMs, sleep } from './runtime';
import type { ChangeEvent, RenewedEvent, ResyncEvent, StreamEvent, SubscribeOptions, Subscription } from './subscription';
import type { Transport } from './transport';
import type { ChangeKind, LeasePage, LeaseView } from './types';

export type ObserverState = 'connecting' | 'ready' | 'resyncing' | 'error' | 'closed';

export interface ObservedChange {
  readonly route: string;
  /** The lease now in the view, or undefined when the route left it. */
  readonly lease: LeaseView | undefined;
  /**
   * What brought it: a change kind from the feed, `renewed` (a renewal hint),
   * `snapshot` (a fresh stream's listing replaced the view), or `reconcile`
   * (a periodic relisting found the view wrong).
   */
  readonly cause: ChangeKind | 'renewed' | 'snapshot' | 'reconcile';
}

/** How the observer last came back: `resumed` or `relisted`, and why (resume.ts). */
export type ObserverRecovery = Recovery;

export interface InventorySnapshot {
  readonly state: ObserverState;
  /** How the observer last recovered (undefined until its first stream ends). */
  readonly recovery: ObserverRecovery | undefined;
  /**
   * The view, ordered by route (byte order), sorted on first read: read it
   * from the latest snapshot (as React does), since a snapshot read only
   * after later changes shows the view as of that read.
   */
  readonly items: readonly LeaseView[];
  readonly error: LeaseholdError | undefined;
  /** Grows with every change of state or view. */
  readonly version: number;
}

export interface ObserverStats {
  /** Streams opened (the first one included). */
  readonly connects: number;
  /** Snapshots installed (one per stream that reached ready). */
  readonly snapshots: number;
  readonly reconciliations: number;
  /** Routes a reconciliation found wrong and corrected. */
  readonly repairs: number;
  /** Streams that came back by replay, without a listing. */
  readonly resumes: number;
  /** Listings after the first snapshot (a subset of `snapshots`). */
  readonly relists: number;
}

export type ObserverPhase = 'stream_open' | 'registered' | 'page' | 'listed';

/** Test seams: they let the conformance tests change the world at each step of the bootstrap. */
export interface ObserverHooks {
  /** Awaited at each step: after the stream opens, after the acknowledgement, after each page but the last, after the listing. */
  phase?(phase: ObserverPhase): void | Promise<void>;
  /** Return true to withhold a change or renewal hint from the observer (simulates a lost event). */
  dropEvent?(event: ChangeEvent | RenewedEvent): boolean;
}

export interface ObserveOptions {
  /** Ask renewal hints, so `expires_at` stays current between relistings (default false). */
  renewals?: boolean;
  /** LIST page size (default 500, at most 1,000). */
  pageSize?: number;
  /** The largest view the observer will hold (default 10,000); past it, the state is `error` (`too_many_items`). */
  maxItems?: number;
  /**
   * Base interval of the periodic relisting, before the ±20 % jitter. Default:
   * clamp(shortest TTL / 2, 5 s, 60 s), the TTL being `expectedTtlMs` or else
   * the shortest `ttl_ms` in the view.
   */
  reconcileIntervalMs?: number;
  expectedTtlMs?: number;
  /** Backoff between failed attempts: first ceiling (default 250 ms), and cap (default 15 s). */
  backoff?: { initialMs?: number; maxMs?: number };
  /**
   * Resume from the last applied revision after a disconnect or restart
   * (default true). False relists on every new stream, as before resumable
   * feeds; for comparison only.
   */
  resume?: boolean;
  hooks?: ObserverHooks;
}

/** What the observer needs of the client (internal). */
export interface ObserverHost {
  readonly transport: Transport;
  subscribe(selectors: readonly string[], opts?: SubscribeOptions): Subscription;
  listPage(selector: string, opts: { limit?: number; cursor?: string }): Promise<LeasePage>;
  inspect(route: string): Promise<LeaseView | undefined>;
}

type FeedEvent = ChangeEvent | RenewedEvent;

interface Listing {
  items: Map<string, LeaseView>;
  /** Page upper bounds in route order: a route is covered by the first bound ≥ it (null: the end). */
  bounds: { upper: string | null; revision: number }[];
  epoch: string;
}

const TERMINAL: ReadonlySet<string> = new Set(['invalid_config', 'invalid_credential', 'access_denied', 'invalid_selector', 'invalid_request', 'too_many_items']);
const CREDENTIAL_CLOSE: ReadonlySet<string> = new Set(['token_revoked', 'token_expired', 'logged_out']);

function compareRoutes(a: string, b: string): number {
  // Routes are ASCII, so UTF-16 order is byte order.
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameLease(a: LeaseView | undefined, b: LeaseView | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.revision === b.revision && a.expires_at === b.expires_at && a.renewal_count === b.renewal_count && a.waiters === b.waiters;
}

export class InventoryObserver {
  readonly selector: string;
  /** Resolves the first time the observer is ready; rejects if it ends (error or close) before. */
  readonly ready: Promise<void>;
  readonly #host: ObserverHost;
  readonly #opts: Required<Pick<ObserveOptions, 'renewals' | 'pageSize' | 'maxItems'>> & ObserveOptions;
  readonly #abort = new AbortController();
  readonly #changeListeners = new Set<(changes: readonly ObservedChange[]) => void>();
  readonly #stateListeners = new Set<(state: ObserverState) => void>();
  readonly #storeListeners = new Set<() => void>();
  readonly #scheduler: ReconcileScheduler;
  #view = new Map<string, LeaseView>();
  #state: ObserverState = 'connecting';
  #error: LeaseholdError | undefined;
  #version = 0;
  #snapshot: InventorySnapshot | undefined;
  #gen = 0;
  #sub: Subscription | undefined;
  /** While set, feed events go here instead of the view (bootstrap). */
  #buffer: FeedEvent[] | undefined;
  /** While set, live events also go here (a reconciliation in progress). */
  #recording: FeedEvent[] | undefined;
  #resolveReady!: () => void;
  #rejectReady!: (e: unknown) => void;
  #stats = { connects: 0, snapshots: 0, reconciliations: 0, repairs: 0, resumes: 0, relists: 0 };
  /** The revision up to which the view holds every change, and its epoch. */
  readonly #point = new ResumePoint();
  /** A `resync` the current stream sent: the loop relists on the same stream. */
  #resync: ResyncEvent | undefined;
  #wakeLoop: (() => void) | undefined;
  /** Bumped when a listing replaces the view: a reconciliation begun before it does not install. */
  #viewGen = 0;
  #recovery: ObserverRecovery | undefined;
  readonly #recoveryListeners = new Set<(recovery: ObserverRecovery) => void>();
  #retryReason: LeaseholdError | undefined;
  readonly #retryListeners = new Set<(error: LeaseholdError) => void>();

  /** @internal Use `LeaseholdClient.observeInventory`. */
  constructor(host: ObserverHost, selector: string, opts: ObserveOptions = {}) {
    this.#host = host;
    this.selector = selector;
    this.#opts = { ...opts, renewals: opts.renewals ?? false, pageSize: opts.pageSize ?? 500, maxItems: opts.maxItems ?? 10_000 };
    this.ready = new Promise((resolve, reject) => {
      this.#resolveReady = resolve;
      this.#rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    const { clock, random } = host.transport;
    this.#scheduler = new ReconcileScheduler(clock, random, () => this.reconcileIntervalMs(), () => this.#reconcile(this.#gen));
    void this.#loop();
  }

  get state(): ObserverState {
    return this.#state;
  }

  get error(): LeaseholdError | undefined {
    return this.#error;
  }

  /** The current view: route → frozen LeaseView. While `resyncing` it is the last known one (stale). */
  get view(): ReadonlyMap<string, LeaseView> {
    return this.#view;
  }

  get stats(): ObserverStats {
    return { ...this.#stats };
  }

  /** How the observer last came back (`resumed` or `relisted`); undefined until it first had to. */
  get recovery(): ObserverRecovery | undefined {
    return this.#recovery;
  }

  /**
   * Why the last attempt to (re)connect failed, while the observer retries
   * (`connecting` or `resyncing`): an unreachable server, a refused listing.
   * Undefined once it is ready again, and for failures that end in `error`
   * (those are `error`).
   */
  get retryReason(): LeaseholdError | undefined {
    return this.#retryReason;
  }

  /** The revision up to which the view holds every change (what a new stream resumes from). */
  get revision(): number | undefined {
    return this.#point.revision;
  }

  /** The reconciliation interval now in force, before jitter. */
  reconcileIntervalMs(): number {
    if (this.#opts.reconcileIntervalMs !== undefined) return this.#opts.reconcileIntervalMs;
    let shortest = this.#opts.expectedTtlMs;
    if (shortest === undefined) for (const lease of this.#view.values()) shortest = Math.min(shortest ?? Infinity, lease.ttl_ms);
    return defaultReconcileIntervalMs(shortest);
  }

  /** Called with each batch of view changes. Returns the unsubscribe function. */
  onChange(listener: (changes: readonly ObservedChange[]) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Called each time the observer is ready again after its stream ended or a `resync`: resumed or relisted, and why. */
  onRecovery(listener: (recovery: ObserverRecovery) => void): () => void {
    this.#recoveryListeners.add(listener);
    return () => this.#recoveryListeners.delete(listener);
  }

  /** Called each time an attempt to (re)connect failed and the observer will retry, with why (`retryReason`). */
  onRetry(listener: (error: LeaseholdError) => void): () => void {
    this.#retryListeners.add(listener);
    return () => this.#retryListeners.delete(listener);
  }

  onStateChange(listener: (state: ObserverState) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** For `useSyncExternalStore`: called after any change of state or view. */
  subscribe(listener: () => void): () => void {
    this.#storeListeners.add(listener);
    return () => this.#storeListeners.delete(listener);
  }

  /** A frozen snapshot, the same object until the next change; cheap to take. */
  getSnapshot(): InventorySnapshot {
    if (this.#snapshot?.version !== this.#version) {
      // Cheap to take (React takes one per notification); the sorted items
      // are computed once, when a render first reads them.
      const view = this.#view;
      let items: readonly LeaseView[] | undefined;
      this.#snapshot = Object.freeze({
        state: this.#state,
        recovery: this.#recovery,
        error: this.#error,
        version: this.#version,
        get items(): readonly LeaseView[] {
          items ??= Object.freeze([...view.values()].sort((a, b) => compareRoutes(a.route, b.route)));
          return items;
        },
      });
    }
    return this.#snapshot;
  }

  /** Stop observing: the stream closes and no callback runs again. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#abort.abort(closedError('observer'));
    this.#scheduler.stop();
    this.#sub?.close();
    this.#rejectReady(closedError('observer'));
    this.#retryReason = undefined;
    this.#setState('closed');
  }

  async #loop(): Promise<void> {
    const { clock, random } = this.#host.transport;
    const initialMs = this.#opts.backoff?.initialMs ?? 250;
    const maxMs = this.#opts.backoff?.maxMs ?? 15_000;
    let failures = 0;
    while (!this.#abort.signal.aborted) {
      if (failures > 0) {
        try {
          await sleep(backoffMs(failures, initialMs, maxMs, random), clock, this.#abort.signal);
        } catch {
          return;
        }
      }
      const gen = ++this.#gen;
      let readyAt: number | undefined;
      try {
        const sub = await this.#connect(gen);
        readyAt = clock.now();
        for (;;) {
          const end = await this.#nextTrouble(sub);
          if (end === undefined) {
            // `resync` on the open stream: list again on it, registrations intact.
            await this.#relistOn(gen, sub);
            continue;
          }
          if (end.reason === 'closed' && CREDENTIAL_CLOSE.has(end.detail ?? '')) {
            throw new LeaseholdError({ code: 'invalid_credential', message: `the stream was closed: ${end.detail}` });
          }
          if (end.reason === 'overflow') this.#point.mustRelist = 'overflow';
          break;
        }
      } catch (e) {
        if (this.#abort.signal.aborted) return;
        if (isLeaseholdError(e) && TERMINAL.has(e.code)) {
          this.#fail(e);
          return;
        }
        this.#retryReason = isLeaseholdError(e) ? e : undefined;
      } finally {
        this.#scheduler.stop();
        this.#buffer = undefined;
        this.#recording = undefined;
        this.#resync = undefined;
        this.#sub?.close();
      }
      if (this.#abort.signal.aborted) return;
      // A stream that stayed ready a while earns an immediate retry; one that
      // fails straight away backs off.
      failures = readyAt !== undefined && clock.now() - readyAt > 1000 ? 0 : failures + 1;
      this.#setState(this.#stats.snapshots > 0 ? 'resyncing' : 'connecting');
      const reason = this.#retryReason;
      if (reason !== undefined) for (const listener of [...this.#retryListeners]) listener(reason);
    }
  }

  /** The stream's end, or undefined when it sent `resync` (and stays open). */
  async #nextTrouble(sub: Subscription): Promise<Awaited<Subscription['done']> | undefined> {
    if (this.#resync) return undefined;
    const resync = new Promise<undefined>((resolve) => {
      this.#wakeLoop = () => resolve(undefined);
    });
    try {
      return await Promise.race([sub.done, resync]);
    } finally {
      this.#wakeLoop = undefined;
    }
  }

  /** A new stream, resumed from the view's revision when it can be, else bootstrapped by a listing. Resolves once ready. */
  async #connect(gen: number): Promise<Subscription> {
    const plan = this.#point.next(this.#opts.resume !== false);
    const { since } = plan;
    const buffer: FeedEvent[] = [];
    this.#buffer = buffer;
    const sub = since !== undefined ? this.#host.subscribe([this.selector], { since, renewals: this.#opts.renewals }) : this.#host.subscribe([]);
    this.#sub = sub;
    this.#stats.connects++;
    sub.on((ev) => this.#onEvent(gen, ev));
    let hello;
    try {
      hello = await sub.opened;
    } catch (e) {
      if (since !== undefined && isLeaseholdError(e, 'invalid_request')) {
        // A server from before resumable feeds refuses `since`: list instead.
        this.#point.mustRelist = 'not_resumed';
        throw new LeaseholdError({ code: 'stream_closed', message: 'the server refused to resume', retryable: true, cause: e });
      }
      throw e;
    }
    this.#assertCurrent(gen);
    if (since !== undefined) {
      const verdict = judgeResume(since, this.#point.epoch, hello, this.#resync);
      this.#resync = undefined;
      if (verdict.kind === 'resumed') {
        // The replay applies as it arrives, by the same rule as live changes.
        this.#buffer = undefined;
        this.#applyLive(buffer.splice(0));
        this.#stats.resumes++;
        this.#becomeReady(verdict);
        return sub;
      }
      await this.#listOn(gen, sub, buffer, verdict);
      return sub;
    }
    const hooks = this.#opts.hooks;
    await hooks?.phase?.('stream_open');
    await sub.add(this.selector, { renewals: this.#opts.renewals });
    await hooks?.phase?.('registered');
    this.#resync = undefined; // a fresh stream lists anyway
    await this.#listOn(gen, sub, buffer, plan.reason === undefined ? undefined : { kind: 'relisted', reason: plan.reason });
    return sub;
  }

  /** `resync` on a live stream: buffer from now on (the event handler started it) and list again. */
  async #relistOn(gen: number, sub: Subscription): Promise<void> {
    const ev = this.#resync;
    this.#resync = undefined;
    this.#scheduler.stop();
    this.#setState('resyncing');
    const buffer = this.#buffer ?? [];
    this.#buffer = buffer;
    await this.#listOn(gen, sub, buffer, { kind: 'relisted', reason: 'resync', ...(ev ? { detail: ev.reason } : {}) });
  }

  /** List to the end and install the snapshot with the buffered changes (docs/semantics.md §8), then ready. */
  async #listOn(gen: number, sub: Subscription, buffer: FeedEvent[], recovery: ObserverRecovery | undefined): Promise<void> {
    this.#viewGen++;
    const listing = await this.#list(gen, true);
    await this.#opts.hooks?.phase?.('listed');
    this.#assertCurrent(gen);

    // Install: the snapshot, then every buffered change by the rule; routes
    // changed after the page that covered them are re-inspected for fresh data.
    const next = listing.items;
    const reinspect = new Set<string>();
    let revision = listing.bounds.reduce((min, b) => Math.min(min, b.revision), Infinity);
    for (const ev of buffer.splice(0)) {
      if (ev.type !== 'change') continue;
      applyChange(next, ev);
      revision = Math.max(revision, ev.revision);
      if (ev.revision > this.#coveringRevision(listing, ev.route)) reinspect.add(ev.route);
    }
    const fresh = await this.#inspectAll([...reinspect], gen);
    for (const [route, lease] of fresh) {
      if (lease) next.set(route, asView(lease));
      else next.delete(route);
    }
    // Events that arrived while inspecting are newer than what they answered.
    for (const ev of buffer.splice(0)) {
      if (ev.type !== 'change') continue;
      applyChange(next, ev);
      revision = Math.max(revision, ev.revision);
    }
    this.#checkSize(next.size);
    this.#buffer = undefined;
    this.#point.listed(Number.isFinite(revision) ? revision : (sub.hello?.revision ?? 0), sub.hello?.epoch ?? listing.epoch);
    this.#replaceView(next, 'snapshot');
    this.#stats.snapshots++;
    if (recovery) this.#stats.relists++;
    this.#becomeReady(recovery);
  }

  #becomeReady(recovery: ObserverRecovery | undefined): void {
    if (recovery) this.#recovery = recovery;
    this.#retryReason = undefined;
    this.#setState('ready');
    if (recovery) for (const listener of [...this.#recoveryListeners]) listener(recovery);
    this.#resolveReady();
    this.#scheduler.start();
  }

  #onEvent(gen: number, ev: StreamEvent): void {
    if (gen !== this.#gen) return;
    if (ev.type === 'resync') {
      // Everything from here on waits for the new listing.
      this.#resync = ev;
      this.#buffer ??= [];
      this.#wakeLoop?.();
      return;
    }
    if (ev.type !== 'change' && ev.type !== 'renewed') return;
    if (this.#opts.hooks?.dropEvent?.(ev)) return;
    if (this.#buffer) {
      this.#buffer.push(ev);
      return;
    }
    this.#applyLive([ev]);
  }

  /** Apply events to the live view, in order, telling listeners. */
  #applyLive(events: readonly FeedEvent[]): void {
    const changes: ObservedChange[] = [];
    for (const ev of events) {
      this.#recording?.push(ev);
      if (ev.type === 'change') this.#point.applied(ev.revision);
      const update = ev.type === 'change' ? applyChange(this.#view, ev) : applyRenewal(this.#view, ev);
      if (!update) continue;
      changes.push({ ...update, cause: ev.type === 'change' ? ev.change : 'renewed' });
    }
    if (changes.length === 0) return;
    if (this.#view.size > this.#opts.maxItems) {
      this.#fail(new LeaseholdError({ code: 'too_many_items', message: `the view holds more than maxItems (${this.#opts.maxItems}) leases` }));
      return;
    }
    this.#changed(changes);
  }

  /** A periodic relisting on the live stream; live changes keep applying and are replayed onto the fresh listing. */
  async #reconcile(gen: number): Promise<void> {
    if (gen !== this.#gen || this.#state !== 'ready') return;
    const viewGen = this.#viewGen;
    this.#recording = [];
    try {
      const listing = await this.#list(gen, false);
      this.#assertCurrent(gen);
      // A `resync` listing began meanwhile: it replaces the view; this one is moot.
      if (viewGen !== this.#viewGen || this.#buffer) return;
      const next = listing.items;
      for (const ev of this.#recording) {
        if (ev.type === 'change') applyChange(next, ev);
        else applyRenewal(next, ev);
      }
      this.#checkSize(next.size);
      this.#stats.reconciliations++;
      this.#replaceView(next, 'reconcile');
    } catch (e) {
      if (gen !== this.#gen || this.#abort.signal.aborted) return;
      if (isLeaseholdError(e) && e.code === 'too_many_items') this.#fail(e);
      // Anything else: start over on a new stream.
      else this.#sub?.close();
      throw e;
    } finally {
      this.#recording = undefined;
    }
  }

  async #list(gen: number, bootstrap: boolean): Promise<Listing> {
    const items = new Map<string, LeaseView>();
    const bounds: Listing['bounds'] = [];
    let cursor: string | undefined;
    let epoch = '';
    let pendingMin = Infinity;
    for (;;) {
      const page = await this.#host.listPage(this.selector, { limit: this.#opts.pageSize, cursor });
      this.#assertCurrent(gen);
      if (epoch && page.epoch !== epoch) throw new LeaseholdError({ code: 'cursor_invalid', message: 'the store epoch changed during the listing', retryable: true, fromServer: false });
      epoch = page.epoch;
      for (const item of page.items) items.set(item.route, asView(item));
      this.#checkSize(items.size);
      const last = page.items[page.items.length - 1];
      pendingMin = Math.min(pendingMin, page.revision);
      if (page.next_cursor === null) {
        bounds.push({ upper: null, revision: pendingMin });
        break;
      }
      if (last) {
        bounds.push({ upper: last.route, revision: pendingMin });
        pendingMin = page.revision;
      }
      cursor = page.next_cursor;
      if (bootstrap) await this.#opts.hooks?.phase?.('page');
    }
    return { items, bounds, epoch };
  }

  /** The revision of the page that covered `route` (conservatively, the older of it and its predecessor). */
  #coveringRevision(listing: Listing, route: string): number {
    for (const b of listing.bounds) if (b.upper === null || compareRoutes(route, b.upper) <= 0) return b.revision;
    return -Infinity;
  }

  async #inspectAll(routes: string[], gen: number): Promise<Map<string, LeaseView | undefined>> {
    const out = new Map<string, LeaseView | undefined>();
    const queue = [...routes];
    const worker = async (): Promise<void> => {
      for (let route = queue.shift(); route !== undefined; route = queue.shift()) {
        const lease = await this.#host.inspect(route);
        this.#assertCurrent(gen);
        out.set(route, lease);
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, queue.length) }, worker));
    return out;
  }

  #assertCurrent(gen: number): void {
    if (this.#abort.signal.aborted) throw closedError('observer');
    if (gen !== this.#gen) throw new LeaseholdError({ code: 'stream_closed', message: 'a newer stream replaced this one' });
  }

  #checkSize(size: number): void {
    if (size > this.#opts.maxItems) {
      throw new LeaseholdError({ code: 'too_many_items', message: `the selector matches more than maxItems (${this.#opts.maxItems}) leases` });
    }
  }

  /** Swap in `next`, telling listeners what differs. */
  #replaceView(next: Map<string, LeaseView>, cause: 'snapshot' | 'reconcile'): void {
    const changes: ObservedChange[] = [];
    let repairs = 0;
    for (const [route, lease] of next) {
      const cur = this.#view.get(route);
      if (!sameLease(cur, lease)) {
        changes.push({ route, lease, cause });
        if (cur?.revision !== lease.revision) repairs++;
      }
    }
    for (const route of this.#view.keys()) {
      if (!next.has(route)) {
        changes.push({ route, lease: undefined, cause });
        repairs++;
      }
    }
    if (cause === 'reconcile') this.#stats.repairs += repairs;
    this.#view = next;
    if (changes.length > 0) this.#changed(changes);
  }

  #changed(changes: readonly ObservedChange[]): void {
    this.#version++;
    for (const listener of [...this.#changeListeners]) listener(changes);
    this.#notifyStore();
  }

  #setState(state: ObserverState): void {
    if (this.#state === state || this.#state === 'closed' || (this.#state === 'error' && state !== 'closed')) return;
    this.#state = state;
    this.#version++;
    for (const listener of [...this.#stateListeners]) listener(state);
    this.#notifyStore();
  }

  #notifyStore(): void {
    for (const listener of [...this.#storeListeners]) listener();
  }

  #fail(error: LeaseholdError): void {
    if (this.#state === 'closed' || this.#state === 'error') return;
    this.#error = error;
    this.#retryReason = undefined;
    this.#abort.abort(error);
    this.#scheduler.stop();
    this.#sub?.close();
    this.#rejectReady(error);
    this.#setState('error');
  }
}
