/**
 * Cluster: what one instance shares with the others through a shared store
 * (PostgreSQL), free of the store's details. Only exists when the store has
 * a `Bus`.
 *
 * - **Change publication.** Every step's events are broadcast inside its
 *   transaction (so they are delivered iff it commits, in commit order).
 *   The instance publishes into its EventHub both its own committed events
 *   and other instances' (marked `remote`), per family in revision order:
 *   revisions are contiguous per family, so a missing one is a gap. A gap
 *   not filled within `gapMs` is filled from the family's change log when
 *   it holds the missing revisions (`fill`); otherwise, and on a lost
 *   notification channel, every stream of the family (of every family, for
 *   the channel) is sent `overflow` (`resync`) rather than silently missing
 *   a change.
 * - **Stream calls.** Registering or unregistering on a stream opened on
 *   another instance is forwarded to it (the stream id names its instance)
 *   and answered once it has applied the call there.
 */

import { parseSelector } from '@/lib/selector';
import type { Bus, Tx } from '../../store/types';
import { LeaseholdError, fail, type ErrorCode } from '../core/errors';
import type { EngineEvent, EventHub, LeaseChange } from '../core/events';
import type { FeedHub, Subscribed } from './feed';
import { randomId } from '../core/ids';
import { systemScheduler, type Scheduler, type TimerHandle } from '../core/scheduler';
import type { WaiterNotice } from '../core/step';
import { silentLogger, type Logger } from '../core/logger';

/** pg_notify payloads are at most 8,000 bytes. */
const MAX_MESSAGE_BYTES = 7_000;
const FORWARD_TIMEOUT_MS = 3_000;

export interface ClusterOptions {
  /** How long a revision gap may stay open before the family's streams are resynced (ms). */
  gapMs?: number;
  /** Timers (gaps, forwarded calls, start); tests inject a manual clock. */
  scheduler?: Scheduler;
  /** Another instance granted one of this instance's waiters. */
  granted?: (n: Extract<WaiterNotice, { kind: 'grant' }>) => void;
  /** Another instance dropped one of this instance's waiters (its session ended). */
  refused?: (n: Extract<WaiterNotice, { kind: 'refuse' }>) => void;
  /** Where losing and regaining the channel, and resynced gaps, are reported (gaps at most every 10 s, counted). */
  logger?: Logger;
  /**
   * The family's changes with `after < revision < before`, read from its
   * change log, or undefined when the log cannot tell (pruned past `after`):
   * what fills a gap instead of a resync.
   */
  fill?: (family: string, after: number, before: number) => Promise<LeaseChange[] | undefined>;
}

const GAP_LOG_EVERY_MS = 10_000;

type StreamCall =
  | { op: 'register'; tokenId: string; streamId: string; selector: string; renewals: boolean }
  | { op: 'unregister'; tokenId: string; streamId: string; subscriptionId: string };

type Message =
  | { o: string; k: 'ev'; n: number; e: EngineEvent[] }
  | { o: string; k: 'call'; id: string; to: string; call: StreamCall }
  | { o: string; k: 'reply'; id: string; to: string; ok?: unknown; err?: { code: ErrorCode; message: string } }
  | { o: string; k: 'waiter'; n: WaiterNotice };

interface FamilyOrder {
  /** The last revision published, all before it published too. */
  last: number;
  /** Revisions that arrived ahead of a gap. */
  pending: Map<number, LeaseChange>;
  timer: TimerHandle | undefined;
  /** A read of the change log for the gap is in flight. */
  filling?: boolean;
}

/** The id of the instance that holds a stream (stream ids are `st_<instance id><random>`). */
export function streamInstance(streamId: string, instanceIdLength: number): string {
  return streamId.slice(3, 3 + instanceIdLength);
}

export class Cluster {
  readonly instanceId: string;
  private readonly families = new Map<string, FamilyOrder>();
  private readonly calls = new Map<string, { resolve: (v: unknown) => void; reject: (e: unknown) => void; timer: TimerHandle }>();
  private readonly gapMs: number;
  private readonly scheduler: Scheduler;
  private readonly opts: ClusterOptions;
  private ready = false;
  private firstReady: Promise<void>;
  private resolveReady!: () => void;
  private counts = { gaps: 0, lost: 0, filled: 0 };
  private readonly logger: Logger;
  private gapLog = { at: -Infinity, unreported: 0 };
  /** How every message this instance sends begins (`o` first): its own come back through LISTEN and are dropped unparsed. */
  private readonly ownPrefix: string;

  constructor(
    private readonly bus: Bus,
    private readonly events: EventHub,
    private readonly feed: FeedHub,
    opts: ClusterOptions = {},
  ) {
    this.instanceId = bus.instanceId;
    this.ownPrefix = `{"o":${JSON.stringify(bus.instanceId)},`;
    this.gapMs = opts.gapMs ?? 1_000;
    this.scheduler = opts.scheduler ?? systemScheduler;
    this.opts = opts;
    this.logger = opts.logger ?? silentLogger;
    this.firstReady = new Promise((r) => (this.resolveReady = r));
  }

  /** Listen to the other instances; resolves once the channel is up, rejects if it is not within `timeoutMs`. */
  start(timeoutMs = 10_000): Promise<void> {
    this.bus.listen({
      message: (text) => this.onMessage(text),
      ready: (revisions) => this.onReady(revisions),
      lost: () => this.onLost(),
    });
    let timer: TimerHandle | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = this.scheduler.after(timeoutMs, () => reject(new Error(`the notification channel did not come up within ${timeoutMs} ms`)));
    });
    return Promise.race([this.firstReady, late]).finally(() => timer?.cancel());
  }

  /** Gaps resynced, channel losses and gaps filled from the change log so far. */
  stats(): { gaps: number; lost: number; filled: number } {
    return { ...this.counts };
  }

  /** Inside a step, before commit: broadcast its events (in messages of bounded size) and its notices to other instances' waiters. */
  async broadcast(tx: Tx, step: { events: readonly EngineEvent[]; notices: readonly WaiterNotice[] }): Promise<void> {
    if (!tx.broadcast) return;
    for (const n of step.notices) {
      const msg: Message = { o: this.instanceId, k: 'waiter', n };
      await tx.broadcast(JSON.stringify(msg));
    }
    if (step.events.length === 0) return;
    let batch: EngineEvent[] = [];
    let bytes = 0;
    let n = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const msg: Message = { o: this.instanceId, k: 'ev', n: n++, e: batch };
      await tx.broadcast!(JSON.stringify(msg));
      batch = [];
      bytes = 0;
    };
    for (const e of step.events) {
      if (e.type === 'logged_out') continue;
      const size = Buffer.byteLength(JSON.stringify(e));
      if (bytes + size > MAX_MESSAGE_BYTES) await flush();
      batch.push(e);
      bytes += size;
    }
    await flush();
  }

  /** After commit: publish this instance's events, changes in revision order. */
  committed(events: readonly EngineEvent[]): void {
    for (const e of events) this.offer(e, true);
  }

  /**
   * Register a selector on a stream held by another instance: forwarded to
   * it, answered once applied there (`not_found` if no live instance holds
   * it, `backend_unavailable` if the channel cannot carry the call).
   */
  register(tokenId: string, streamId: string, selector: string, renewals: boolean): Promise<Subscribed> {
    return this.forward({ op: 'register', tokenId, streamId, selector, renewals }) as Promise<Subscribed>;
  }

  /** Unregister on a stream held by another instance (as `register`). */
  async unregister(tokenId: string, streamId: string, subscriptionId: string): Promise<void> {
    await this.forward({ op: 'unregister', tokenId, streamId, subscriptionId });
  }

  /** Stop: refuse calls still waiting for an answer. */
  stop(): void {
    for (const [id, c] of this.calls) {
      c.timer.cancel();
      c.reject(new LeaseholdError('backend_unavailable', 'the server is shutting down'));
      this.calls.delete(id);
    }
    for (const f of this.families.values()) f.timer?.cancel();
  }

  // ---- internals ------------------------------------------------------------

  private async forward(call: StreamCall): Promise<unknown> {
    const to = streamInstance(call.streamId, this.instanceId.length);
    if (to.length !== this.instanceId.length || to === this.instanceId) fail('not_found', 'no such stream for this token');
    if (!this.ready) fail('backend_unavailable', 'the channel between instances is down');
    let alive: boolean;
    try {
      alive = await this.bus.alive(to);
    } catch {
      fail('backend_unavailable', 'the store cannot answer');
    }
    if (!alive) fail('not_found', 'no such stream for this token');
    const id = randomId('fc_', 12);
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = this.scheduler.after(FORWARD_TIMEOUT_MS, () => {
        this.calls.delete(id);
        reject(new LeaseholdError('backend_unavailable', "the stream's instance did not answer in time"));
      });
      this.calls.set(id, { resolve, reject, timer });
    });
    // The answer may arrive before `send` returns: handled below, never unhandled meanwhile.
    answer.catch(() => undefined);
    const msg: Message = { o: this.instanceId, k: 'call', id, to, call };
    try {
      await this.bus.send(JSON.stringify(msg));
    } catch {
      const c = this.calls.get(id);
      c?.timer.cancel();
      this.calls.delete(id);
      fail('backend_unavailable', 'the store cannot answer');
    }
    return answer;
  }

  private onMessage(text: string): void {
    // Nothing this instance sent is for itself: its events were published at
    // commit, and its notices, calls and replies are addressed to others.
    if (text.startsWith(this.ownPrefix)) return;
    let m: Message;
    try {
      m = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (m.k === 'ev') {
      // This instance's own events were published at commit.
      if (m.o === this.instanceId) return;
      for (const e of m.e) this.offer({ ...e, remote: true } as EngineEvent, false);
    } else if (m.k === 'waiter' && m.n.to === this.instanceId) {
      if (m.n.kind === 'grant') this.opts.granted?.(m.n);
      else this.opts.refused?.(m.n);
    } else if (m.k === 'call' && m.to === this.instanceId) {
      void this.apply(m.o, m.id, m.call);
    } else if (m.k === 'reply' && m.to === this.instanceId) {
      const c = this.calls.get(m.id);
      if (!c) return;
      c.timer.cancel();
      this.calls.delete(m.id);
      if (m.err) c.reject(new LeaseholdError(m.err.code, m.err.message));
      else c.resolve(m.ok);
    }
  }

  /** Apply a forwarded stream call here and answer it. */
  private async apply(from: string, id: string, call: StreamCall): Promise<void> {
    const reply: Message = { o: this.instanceId, k: 'reply', id, to: from };
    try {
      if (call.op === 'register') {
        const sel = parseSelector(call.selector);
        if (!sel.ok) fail('invalid_selector', `selector ${sel.reason}`);
        reply.ok = this.feed.register(call.tokenId, call.streamId, sel.value, call.renewals);
      } else {
        this.feed.unregister(call.tokenId, call.streamId, call.subscriptionId);
        reply.ok = {};
      }
    } catch (e) {
      reply.err = e instanceof LeaseholdError ? { code: e.code, message: e.message } : { code: 'internal_error', message: 'the call failed' };
    }
    // If the answer cannot be sent, the caller times out with backend_unavailable.
    await this.bus.send(JSON.stringify(reply)).catch(() => undefined);
  }

  private order(family: string): FamilyOrder {
    let f = this.families.get(family);
    if (!f) this.families.set(family, (f = { last: 0, pending: new Map(), timer: undefined }));
    return f;
  }

  /** Publish an event, holding back a change that arrives ahead of a revision gap. */
  private offer(e: EngineEvent, local: boolean): void {
    if (e.type !== 'change' || !this.ready) {
      if (e.type === 'change' && e.revision > this.order(e.family).last) this.order(e.family).last = e.revision;
      this.events.publish(e);
      return;
    }
    const f = this.order(e.family);
    if (e.revision <= f.last) {
      // A duplicate of a delivered remote change is dropped; a local change
      // that a reconnection's snapshot already covered is still published
      // (its instance's audit needs it; the streams were resynced).
      if (local) this.events.publish(e);
      return;
    }
    if (e.revision !== f.last + 1) {
      f.pending.set(e.revision, e);
      f.timer ??= this.scheduler.after(this.gapMs, () => this.gapExpired(e.family));
      return;
    }
    this.events.publish(e);
    f.last = e.revision;
    this.drain(e.family, f);
  }

  private drain(family: string, f: FamilyOrder): void {
    for (let next = f.pending.get(f.last + 1); next; next = f.pending.get(f.last + 1)) {
      f.pending.delete(next.revision);
      this.events.publish(next);
      f.last = next.revision;
    }
    if (f.pending.size === 0 && f.timer) {
      f.timer.cancel();
      f.timer = undefined;
    } else if (f.pending.size > 0 && !f.timer && !f.filling) {
      f.timer = this.scheduler.after(this.gapMs, () => this.gapExpired(family));
    }
  }

  /** A revision never arrived: fill it from the change log if it can, else resync the family's streams and move past it. */
  private gapExpired(family: string): void {
    const f = this.order(family);
    f.timer = undefined;
    if (f.pending.size === 0 || f.filling) return;
    const fill = this.opts.fill;
    if (!fill) return this.resyncGap(family, f);
    const after = f.last;
    const before = Math.min(...f.pending.keys());
    f.filling = true;
    fill(family, after, before)
      .catch(() => undefined)
      .then((found) => {
        f.filling = false;
        // The channel came back meanwhile (which resynced every stream): this order is gone.
        if (this.families.get(family) !== f) return;
        const missing = found?.filter((e) => e.revision > f.last) ?? [];
        // The change log must hold every revision still missing (some may have arrived meanwhile).
        const complete = found !== undefined && missing.every((e, i) => e.revision === f.last + 1 + i) && f.last + missing.length >= before - 1;
        if (!complete) return this.resyncGap(family, f);
        this.counts.filled++;
        for (const e of missing) {
          this.events.publish({ ...e, remote: true });
          f.last = e.revision;
        }
        this.drain(family, f);
      });
  }

  private resyncGap(family: string, f: FamilyOrder): void {
    if (f.pending.size === 0) return;
    this.counts.gaps++;
    this.feed.resync(family);
    this.gapLog.unreported++;
    const now = performance.now();
    if (now - this.gapLog.at >= GAP_LOG_EVERY_MS) {
      this.logger.warn('a change from another instance never arrived: streams resynced', { family, gaps_since_last_report: this.gapLog.unreported, gaps: this.counts.gaps });
      this.gapLog = { at: now, unreported: 0 };
    }
    const ahead = [...f.pending.values()].sort((a, b) => a.revision - b.revision);
    f.pending.clear();
    if (f.timer) {
      f.timer.cancel();
      f.timer = undefined;
    }
    for (const e of ahead) {
      this.events.publish(e);
      f.last = Math.max(f.last, e.revision);
    }
  }

  private onReady(revisions: ReadonlyMap<string, number>): void {
    const again = this.ready || this.counts.lost > 0;
    for (const f of this.families.values()) {
      f.timer?.cancel();
      for (const e of [...f.pending.values()].sort((a, b) => a.revision - b.revision)) this.events.publish(e);
    }
    this.families.clear();
    for (const [family, revision] of revisions) this.families.set(family, { last: revision, pending: new Map(), timer: undefined });
    this.ready = true;
    // Changes made while the channel was down never reached this instance's streams.
    if (again) {
      this.feed.resyncAll();
      this.logger.info('notification channel back: streams resynced', { lost: this.counts.lost });
    }
    this.resolveReady();
  }

  private onLost(): void {
    this.ready = false;
    this.counts.lost++;
    this.feed.resyncAll();
    this.logger.warn('notification channel to the database lost: streams resynced, reconnecting', { lost: this.counts.lost });
  }
}
