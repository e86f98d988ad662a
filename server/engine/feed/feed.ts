/**
 * FeedHub: the live inventory feed's streams and registrations
 * (docs/semantics.md §8), free of HTTP. A transport (server/http/sse.ts) supplies a
 * FeedSink per stream; the hub decides what each stream is sent.
 *
 * The hub subscribes to the engine's change events, which the engine
 * publishes after commit, in revision order. A shared store (PostgreSQL, a
 * later backend) publishes the changes other instances made into the same
 * EventHub, and calls `resync(family)` when it cannot be sure it saw every
 * change; the hub does not care where a change was made.
 *
 * Delivery never blocks the engine: `push` only queues (the sink bounds its
 * queue), the hub holds no lock, and a stream that falls behind is sent one
 * `overflow` and closed.
 *
 * Its types are in feed-types.ts, a resuming stream's replay in replay.ts.
 */

import { routeSegments, type ParsedSelector } from '@/lib/selector';
import { fail } from '../core/errors';
import type { EngineEvent, EventHub, LeaseChange, LeaseRenewed, ReleaseRequestedEvent } from '../core/events';
import { randomId } from '../core/ids';
import { SubscriptionIndex } from './subscription-index';
import { changeJson, type ReplayPlan, type ResyncReason } from './change-log';
import type { ChangeRow } from '../../store/types';
import { replayFramesOf, resumeStream } from './replay';
import { bump, frame, quotaKey, releaseRequestedJson, renewedJson, type ClosedReason, type FeedFrame, type FeedHubOptions, type FeedLimits, type FeedSink, type FeedStats, DEFAULT_FEED_LIMITS, type OverflowReason, type Registration, type Stream, type StreamOwner, type Subscribed } from './feed-types';

export { DEFAULT_FEED_LIMITS, type ClosedReason, type FeedFrame, type FeedHubOptions, type FeedLimits, type FeedSink, type FeedStats, type OverflowReason, type OwnerCheck, type StreamOwner, type Subscribed } from './feed-types';

export class FeedHub {
  readonly limits: FeedLimits;
  private readonly streams = new Map<string, Stream>();
  private readonly perToken = new Map<string, number>();
  private readonly perFamily = new Map<string, number>();
  /** Every registration, for change events. */
  private readonly index = new SubscriptionIndex<Registration>();
  /** Only the registrations that asked for renewal hints, so a renewal never walks the others. */
  private readonly renewalIndex = new SubscriptionIndex<Registration>();
  /** The latest revision published per family. */
  private readonly published = new Map<string, number>();
  private readonly counts = { exact: 0, wildcard: 0, renewals: 0, notifications: 0, dropped: 0, overflows: 0, resumes: 0, replayed: 0 };
  private readonly resyncCounts: Record<ResyncReason, number> = { horizon: 0, epoch: 0, too_many: 0 };
  /** Notifications and drops per family (for per-family metrics), since start. */
  private readonly familyCounts = new Map<string, { notifications: number; dropped: number }>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private checking = false;
  private unsubscribe: (() => void) | undefined;

  constructor(
    events: EventHub,
    private readonly opts: FeedHubOptions,
  ) {
    this.limits = { ...DEFAULT_FEED_LIMITS, ...opts.limits };
    this.unsubscribe = events.subscribe((e) => this.onEvent(e));
  }

  /** Start the heartbeat (which also ends streams whose owner is no longer valid). */
  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.limits.heartbeatMs);
    this.timer.unref?.();
  }

  stats(): FeedStats {
    const { exact, wildcard, renewals, notifications, dropped, overflows, resumes, replayed } = this.counts;
    return { streams: this.streams.size, exact, wildcard, renewals, notifications, dropped, overflows, resumes, replayed, resyncs: { ...this.resyncCounts } };
  }

  /** One family's notifications and drops since start (zeros for a family never seen). */
  familyStats(family: string): { notifications: number; dropped: number } {
    const c = this.familyCounts.get(family);
    return { notifications: c?.notifications ?? 0, dropped: c?.dropped ?? 0 };
  }

  private familyCount(family: string): { notifications: number; dropped: number } {
    let c = this.familyCounts.get(family);
    if (!c) this.familyCounts.set(family, (c = { notifications: 0, dropped: 0 }));
    return c;
  }

  /**
   * Open a stream and register `selectors` on it, all or nothing: the stream
   * caps and the registration caps are checked before anything is retained
   * (`rate_limited`). The caller has authorized every selector. Sends
   * `hello` and one `subscribed` per selector, in order. `hello`'s revision
   * is the later of `storeRevision` (read before the call) and the last one
   * published: every change with a greater revision reaches the stream.
   *
   * With `resuming`, nothing is sent yet: the stream is registered and holds
   * back every frame until `resume` (or `discard`) is called with its plan.
   */
  open(owner: StreamOwner, selectors: readonly ParsedSelector[], renewals: boolean, sink: FeedSink, storeRevision: number, resuming = false): { streamId: string; subscriptions: Subscribed[] } {
    if (this.streams.size >= this.limits.maxStreams) fail('rate_limited', 'the server holds its maximum number of streams', { retryAfterMs: 5_000 });
    if ((this.perFamily.get(owner.family) ?? 0) >= this.limits.streamsPerFamily) {
      fail('rate_limited', `a family may hold at most ${this.limits.streamsPerFamily} streams`, { retryAfterMs: 5_000 });
    }
    if ((this.perToken.get(quotaKey(owner)) ?? 0) >= this.limits.streamsPerToken) {
      fail('rate_limited', `a token (with the embed tokens it minted) may hold at most ${this.limits.streamsPerToken} streams`, { retryAfterMs: 5_000 });
    }
    const distinct = new Map<string, ParsedSelector>();
    for (const s of selectors) if (!distinct.has(s.selector)) distinct.set(s.selector, s);
    const sels = [...distinct.values()];
    const wildcard = sels.filter((s) => !s.exact).length;
    this.checkCaps(wildcard, sels.length - wildcard, renewals ? sels.length : 0);

    const stream: Stream = {
      id: randomId(`st_${this.opts.streamIdPrefix ?? ''}`, 12),
      owner,
      sink,
      bySelector: new Map(),
      byId: new Map(),
      wildcard: 0,
      exact: 0,
      renewals: 0,
      open: true,
      held: resuming ? [] : undefined,
      heldAnswers: 0,
      floor: 0,
    };
    this.streams.set(stream.id, stream);
    bump(this.perToken, quotaKey(owner), 1);
    bump(this.perFamily, owner.family, 1);
    sink.onClose(() => this.remove(stream));
    if (!resuming) {
      const revision = Math.max(storeRevision, this.published.get(owner.family) ?? 0);
      sink.push(frame('hello', { stream_id: stream.id, epoch: this.opts.epoch(), revision, heartbeat_ms: this.limits.heartbeatMs }));
    }
    const subscriptions = selectors.map((s) => this.add(stream, s, renewals));
    stream.heldAnswers = stream.held?.length ?? 0;
    return { streamId: stream.id, subscriptions };
  }

  /**
   * Register a selector on an open stream of this token (`not_found`
   * otherwise). Registering the same selector string again returns the same
   * registration (`created: false`), turning renewal hints on if asked. The
   * caps are checked after the duplicate check (`rate_limited`). Also sent on
   * the stream as `subscribed`.
   */
  register(tokenId: string, streamId: string, selector: ParsedSelector, renewals: boolean): Subscribed {
    const stream = this.streamOf(tokenId, streamId);
    const existing = stream.bySelector.get(selector.selector);
    if (existing) {
      if (renewals && !existing.renewals) this.checkCaps(0, 0, 1, stream);
    } else {
      this.checkCaps(selector.exact ? 0 : 1, selector.exact ? 1 : 0, renewals ? 1 : 0, stream);
    }
    return this.add(stream, selector, renewals);
  }

  /** Remove one registration of this token's stream (`not_found` if there is none). */
  unregister(tokenId: string, streamId: string, subscriptionId: string): void {
    const stream = this.streamOf(tokenId, streamId);
    const reg = stream.byId.get(subscriptionId);
    if (!reg) fail('not_found', 'no such subscription on this stream');
    this.drop(reg);
  }

  /** The frames a logged change makes on a resuming stream (replay.ts). */
  replayFrames(streamId: string): (row: ChangeRow) => FeedFrame[] {
    return replayFramesOf(this.streams.get(streamId));
  }

  /** Send a resuming stream its hello, answers, plan and held frames (replay.ts, `resumeStream`); a no-op if it has ended. */
  resume(streamId: string, plan: ReplayPlan<FeedFrame>): void {
    const s = this.streams.get(streamId);
    if (!s?.open || !s.held) return;
    resumeStream(s, s.held, plan, {
      hello: { epoch: this.opts.epoch(), heartbeat_ms: this.limits.heartbeatMs },
      counts: this.counts,
      resyncCounts: this.resyncCounts,
      send: (f) => this.send(s, f),
      release: (upTo) => this.release(s, upTo),
    });
  }


  /** Forget a resuming stream whose replay could not be planned (nothing was sent; the caller answers the request). */
  discard(streamId: string): void {
    const s = this.streams.get(streamId);
    if (s) this.remove(s);
  }

  /** End every stream of the family with `overflow` (reason `resync`): this instance may have missed a change. */
  resync(family: string): void {
    for (const s of [...this.streams.values()]) if (s.owner.family === family) this.overflow(s, 'resync');
  }

  /** End every stream with `overflow` (reason `resync`): this instance may have missed changes of any family. */
  resyncAll(): void {
    for (const s of [...this.streams.values()]) this.overflow(s, 'resync');
  }

  /** Does this instance hold the stream? */
  has(streamId: string): boolean {
    return this.streams.has(streamId);
  }

  /** End the token's streams (`token_revoked`). */
  tokenRevoked(tokenId: string): void {
    this.closeWhere((o) => o.tokenId === tokenId, 'token_revoked');
  }

  /** End the streams opened with this console login (`logged_out`). */
  loggedOut(loginHash: string): void {
    this.closeWhere((o) => o.loginHash === loginHash, 'logged_out');
  }

  /** End every stream (`closed`, reason `shutdown`) and stop the heartbeat. */
  shutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.closeWhere(() => true, 'shutdown');
  }

  /** Stop listening to the engine (after shutdown). */
  dispose(): void {
    this.shutdown();
    this.unsubscribe?.();
  }

  /**
   * One heartbeat: a keepalive on every stream, the end of streams whose
   * token has expired, and a store check of every owner (revocations and
   * logouts, also those made through another instance).
   */
  tick(): void {
    const now = this.opts.now();
    this.closeWhere((o) => o.expiresAt !== null && o.expiresAt <= now, 'token_expired');
    for (const s of this.streams.values()) s.sink.heartbeat();
    if (!this.opts.checkOwners || this.checking || this.streams.size === 0) return;
    this.checking = true;
    const owners = new Map([...this.streams.values()].map((s) => [s.id, s.owner]));
    this.opts
      .checkOwners(owners)
      .then((invalid) => {
        for (const [id, reason] of invalid) {
          const s = this.streams.get(id);
          if (s) this.close(s, reason);
        }
      })
      .catch(() => {
        // The store is unavailable: check again at the next heartbeat.
      })
      .finally(() => {
        this.checking = false;
      });
  }

  // ---- internals ------------------------------------------------------------

  private streamOf(tokenId: string, streamId: string): Stream {
    const s = this.streams.get(streamId);
    if (!s || s.owner.tokenId !== tokenId) fail('not_found', 'no such stream for this token');
    return s;
  }

  private checkCaps(wildcard: number, exact: number, renewals: number, s?: Stream): void {
    const l = this.limits;
    if ((s?.wildcard ?? 0) + wildcard > l.wildcardPerStream) fail('rate_limited', `a stream holds at most ${l.wildcardPerStream} wildcard registrations`);
    if ((s?.exact ?? 0) + exact > l.exactPerStream) fail('rate_limited', `a stream holds at most ${l.exactPerStream} exact registrations`);
    if ((s?.renewals ?? 0) + renewals > l.renewalsPerStream) fail('rate_limited', `a stream holds at most ${l.renewalsPerStream} registrations with renewal hints`);
  }

  /** Register (or find) a selector on a stream; the caps were checked. */
  private add(stream: Stream, selector: ParsedSelector, renewals: boolean): Subscribed {
    const family = stream.owner.family;
    let reg = stream.bySelector.get(selector.selector);
    const created = !reg;
    if (!reg) {
      reg = { id: randomId('sb_', 12), selector, renewals: false, stream };
      stream.bySelector.set(selector.selector, reg);
      stream.byId.set(reg.id, reg);
      this.index.add(family, selector.triple, reg);
      if (selector.exact) stream.exact++, this.counts.exact++;
      else stream.wildcard++, this.counts.wildcard++;
    }
    if (renewals && !reg.renewals) {
      reg.renewals = true;
      stream.renewals++;
      this.counts.renewals++;
      this.renewalIndex.add(family, selector.triple, reg);
    }
    const answer = { subscription_id: reg.id, selector: selector.selector, created };
    this.deliver(stream, frame('subscribed', answer));
    return answer;
  }

  private drop(reg: Registration): void {
    const s = reg.stream;
    const family = s.owner.family;
    s.bySelector.delete(reg.selector.selector);
    s.byId.delete(reg.id);
    this.index.remove(family, reg.selector.triple, reg);
    if (reg.selector.exact) s.exact--, this.counts.exact--;
    else s.wildcard--, this.counts.wildcard--;
    if (reg.renewals) {
      this.renewalIndex.remove(family, reg.selector.triple, reg);
      s.renewals--;
      this.counts.renewals--;
    }
  }

  /** Forget a stream and free its registrations (idempotent). */
  private remove(s: Stream): void {
    if (!s.open) return;
    s.open = false;
    this.streams.delete(s.id);
    bump(this.perToken, quotaKey(s.owner), -1);
    bump(this.perFamily, s.owner.family, -1);
    for (const reg of [...s.byId.values()]) this.drop(reg);
  }

  private close(s: Stream, reason: ClosedReason): void {
    if (!s.open) return;
    this.remove(s);
    this.noteDropped(s, s.sink.end(frame('closed', { reason })));
  }

  private overflow(s: Stream, reason: OverflowReason): void {
    if (!s.open) return;
    this.remove(s);
    this.counts.overflows++;
    this.noteDropped(s, s.sink.end(frame('overflow', { reason })));
  }

  private noteDropped(s: Stream, n: number): void {
    if (n === 0) return;
    this.counts.dropped += n;
    this.familyCount(s.owner.family).dropped += n;
  }

  private closeWhere(pred: (o: StreamOwner) => boolean, reason: ClosedReason): void {
    for (const s of [...this.streams.values()]) if (pred(s.owner)) this.close(s, reason);
  }

  private deliver(s: Stream, f: FeedFrame): void {
    if (!s.open || (f.id !== undefined && f.id <= s.floor)) return;
    if (s.held) {
      s.held.push(f);
      if (f.event !== 'subscribed' && s.held.length - s.heldAnswers > this.limits.resumeBuffer) this.overflow(s, 'slow_consumer');
      return;
    }
    if (!s.sink.push(f)) this.overflow(s, 'slow_consumer');
  }

  /** Push straight to the sink (a resuming stream's own frames); false if the stream ended. */
  private send(s: Stream, f: FeedFrame): boolean {
    if (s.open && !s.sink.push(f)) this.overflow(s, 'slow_consumer');
    return s.open;
  }

  /** A resume is done: send what was held back, but the changes its plan covered (at or below `upTo`), and go live. */
  private release(s: Stream, upTo: number): void {
    const held = s.held ?? [];
    s.held = undefined;
    for (const f of held) if ((f.event !== 'change' || f.id! > upTo) && !this.send(s, f)) return;
  }

  private onEvent(e: EngineEvent): void {
    switch (e.type) {
      case 'change':
        if (e.revision > (this.published.get(e.family) ?? 0)) this.published.set(e.family, e.revision);
        this.fanOut(this.index, e, changeJson);
        break;
      case 'renewed':
        this.fanOut(this.renewalIndex, e, renewedJson);
        break;
      case 'release_requested':
        // Every matching registration, like a change; never a revision (docs/release-requests.md).
        this.fanOut(this.index, e, releaseRequestedJson);
        break;
      case 'token_revoked':
        this.tokenRevoked(e.tokenId);
        break;
      case 'logged_out':
        this.loggedOut(e.loginHash);
        break;
      default:
        break;
    }
  }

  /** One frame per matching registration; the data text is built once, on the first match. */
  private fanOut<E extends LeaseChange | LeaseRenewed | ReleaseRequestedEvent>(index: SubscriptionIndex<Registration>, e: E, json: (e: E) => string): void {
    if (index.size === 0) return;
    const matched: Registration[] = [];
    index.match(e.family, routeSegments(e.route), (reg) => matched.push(reg));
    if (matched.length === 0) return;
    const text = json(e);
    const event = e.type;
    const id = e.type === 'change' ? e.revision : undefined;
    this.counts.notifications += matched.length;
    this.familyCount(e.family).notifications += matched.length;
    for (const reg of matched) this.deliver(reg.stream, { event, id, subscriptionId: reg.id, json: text });
  }
}
