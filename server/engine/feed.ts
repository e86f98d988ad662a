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
 */

import { routeSegments, type ParsedSelector } from '@/lib/selector';
import { fail } from './errors';
import type { EngineEvent, EventHub, LeaseChange, LeaseRenewed, ReleaseRequestedEvent } from './events';
import { randomId } from './ids';
import { SubscriptionIndex } from './subscription-index';
import { changeJson, MAX_REPLAY_EVENTS, type ReplayPlan, type ResyncReason } from './change-log';
import type { ChangeRow } from '../store/types';

export type ClosedReason = 'token_revoked' | 'token_expired' | 'logged_out' | 'shutdown';
export type OverflowReason = 'slow_consumer' | 'resync';

/**
 * One event for one stream, in wire form. `json` is the event's data as a
 * JSON object text; when `subscriptionId` is set it is spliced in as the
 * first member. A change's `json` is one string shared by every registration
 * it matches, so a fan-out of N queues N small frames, not N copies.
 */
export interface FeedFrame {
  event: 'hello' | 'subscribed' | 'change' | 'renewed' | 'release_requested' | 'resync' | 'overflow' | 'closed';
  /** The change's revision (the SSE `id:` line); changes only. */
  id?: number;
  subscriptionId?: string;
  json: string;
}

/** What a transport provides for one stream. */
export interface FeedSink {
  /**
   * Queue a frame for delivery. Returns false when the stream's unsent queue
   * has passed its bound; the hub then ends it with `overflow`.
   */
  push(frame: FeedFrame): boolean;
  /** Send a keepalive comment (nothing if data is already waiting). */
  heartbeat(): void;
  /** Discard what is still queued, send `last`, and end the stream. Returns how many change or renewal frames were discarded. */
  end(last: FeedFrame): number;
  /** Called once when the client goes away (or the stream ends). */
  onClose(listener: () => void): void;
  /**
   * How many more frames a replay may queue now (a replay is fed as the
   * client reads it, leaving room for live events); absent: unbounded.
   */
  room?(): number;
  /** Call `listener` once when `room()` is positive again. */
  whenRoom?(listener: () => void): void;
}

/** Who opened a stream: registrations and the stream's life are bound to it. */
export interface StreamOwner {
  tokenId: string;
  family: string;
  /** Set when the stream was opened with the console's login cookie (hash of its secret). */
  loginHash?: string;
  /** The token's expiry (epoch ms), if it has one. */
  expiresAt: number | null;
  /**
   * The token whose per-token stream quota this stream counts against: the
   * creator of an embed token (so minting embed tokens never multiplies a
   * token's streams); the token itself otherwise (the default).
   */
  quotaTokenId?: string;
}

const quotaKey = (o: StreamOwner): string => o.quotaTokenId ?? o.tokenId;

export interface FeedLimits {
  /** Streams on this instance, all families together. */
  maxStreams: number;
  /** Streams of one family on this instance (so one tenant cannot take every stream). */
  streamsPerFamily: number;
  /** Streams of one token, its embed tokens' included. */
  streamsPerToken: number;
  wildcardPerStream: number;
  exactPerStream: number;
  renewalsPerStream: number;
  heartbeatMs: number;
  /** Live frames a resuming stream may hold back while its replay is read and sent; beyond them it ends with `overflow`. */
  resumeBuffer: number;
  /** A replay of more events than this is refused with `resync` (`too_many`); exactly this many replay. */
  maxReplay: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = {
  maxStreams: 10_000,
  streamsPerFamily: 2_000,
  streamsPerToken: 64,
  wildcardPerStream: 128,
  exactPerStream: 4_096,
  renewalsPerStream: 16,
  heartbeatMs: 15_000,
  resumeBuffer: 4_096,
  maxReplay: MAX_REPLAY_EVENTS,
};

export interface FeedStats {
  streams: number;
  exact: number;
  wildcard: number;
  /** Registrations asking for renewal hints. */
  renewals: number;
  /** Change and renewal events queued for delivery (one per matching registration). */
  notifications: number;
  /** Change and renewal events discarded by overflows. */
  dropped: number;
  overflows: number;
  /** Streams resumed with a replay (even an empty one). */
  resumes: number;
  /** Change events sent by replays. */
  replayed: number;
  /** Resuming streams sent `resync` instead, by reason. */
  resyncs: Record<ResyncReason, number>;
}

export interface Subscribed {
  subscription_id: string;
  selector: string;
  created: boolean;
}

interface Registration {
  id: string;
  selector: ParsedSelector;
  renewals: boolean;
  stream: Stream;
}

interface Stream {
  id: string;
  owner: StreamOwner;
  sink: FeedSink;
  /** By selector string (the duplicate check). */
  bySelector: Map<string, Registration>;
  byId: Map<string, Registration>;
  wildcard: number;
  exact: number;
  renewals: number;
  open: boolean;
  /**
   * Set while the stream resumes (docs/design.md, "Resuming"): every frame
   * for it is held here, in order, until its replay has been sent.
   */
  held: FeedFrame[] | undefined;
  /** How many of `held` are the registrations' own answers (not counted against `resumeBuffer`). */
  heldAnswers: number;
  /**
   * A resumed stream's replay covered every change up to here: one
   * published later (another instance's notification can arrive after the
   * replay was read) is not sent again.
   */
  floor: number;
}

/**
 * Checks stream owners against the store (revoked or expired tokens, ended
 * logins, including those changed by another instance); returns a reason for
 * each owner that is no longer valid, keyed by stream id.
 */
export type OwnerCheck = (owners: ReadonlyMap<string, StreamOwner>) => Promise<Map<string, ClosedReason>>;

export interface FeedHubOptions {
  limits?: Partial<FeedLimits>;
  /** Backend time. */
  now: () => number;
  epoch: () => string;
  checkOwners?: OwnerCheck;
  /** Prefix of stream ids after `st_` (the instance id on a shared store, so any instance can tell where a stream lives). */
  streamIdPrefix?: string;
}

/** Add `by` to a count, forgetting it at zero. */
function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

const frame = (event: FeedFrame['event'], data: object): FeedFrame => ({ event, json: JSON.stringify(data) });

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

  /**
   * The frames a logged change makes on a resuming stream: one per
   * registration it matches, as live. Matched through an index of the
   * stream's own registrations, built on first use (they cannot change
   * while it resumes: its id is not known before `hello`).
   */
  replayFrames(streamId: string): (row: ChangeRow) => FeedFrame[] {
    const s = this.streams.get(streamId);
    if (!s) return () => [];
    const index = new SubscriptionIndex<Registration>();
    for (const reg of s.byId.values()) index.add(s.owner.family, reg.selector.triple, reg);
    return (row) => {
      const out: FeedFrame[] = [];
      index.match(s.owner.family, routeSegments(row.route), (reg) => out.push({ event: 'change', id: row.revision, subscriptionId: reg.id, json: row.data }));
      return out;
    };
  }

  /**
   * Send a resuming stream its `hello` (`resumed: true` iff a replay
   * follows), its `subscribed` events, then the plan: `resync` or the
   * replayed changes, fed as the client reads them; then the frames held
   * back meanwhile, without the changes the plan already covered (revision
   * at or below its `upTo`): no gap, no duplicate. A no-op if the stream has
   * ended.
   */
  resume(streamId: string, plan: ReplayPlan<FeedFrame>): void {
    const s = this.streams.get(streamId);
    if (!s?.open || !s.held) return;
    const upTo = plan.kind === 'replay' ? plan.upTo : plan.revision;
    const held = s.held;
    let i = 0;
    s.floor = upTo;
    s.sink.push(frame('hello', { stream_id: s.id, epoch: this.opts.epoch(), revision: upTo, heartbeat_ms: this.limits.heartbeatMs, resumed: plan.kind === 'replay' }));
    // `open` queued the registrations' answers first, before any live event could arrive.
    for (; i < held.length && held[i]!.event === 'subscribed'; i++) this.send(s, held[i]!);
    // Held frames stay held (and later ones join them) until the replay is sent.
    s.held = held.slice(i);
    s.heldAnswers = 0;
    if (plan.kind === 'resync') {
      this.resyncCounts[plan.reason]++;
      this.send(s, frame('resync', { reason: plan.reason, revision: plan.revision }));
      this.release(s, upTo);
      return;
    }
    this.counts.resumes++;
    let next = 0;
    const pump = (): void => {
      if (!s.open) return;
      while (next < plan.frames.length && (s.sink.room?.() ?? Infinity) > 0) {
        this.counts.replayed++;
        if (!this.send(s, plan.frames[next++]!)) return;
      }
      if (next < plan.frames.length) s.sink.whenRoom!(pump);
      else this.release(s, upTo);
    };
    pump();
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

function releaseRequestedJson(e: ReleaseRequestedEvent): string {
  return JSON.stringify({ route: e.route, fencing_token: e.fencingToken, reason: e.reason, requested_at: new Date(e.requestedAt).toISOString() });
}

function renewedJson(e: LeaseRenewed): string {
  return JSON.stringify({ route: e.route, expires_at: new Date(e.expiresAt).toISOString(), renewal_count: e.renewalCount });
}
