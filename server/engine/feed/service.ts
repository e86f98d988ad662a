/**
 * The feed service (`engine.feed`): open a live stream (fresh or resuming
 * from the change log), register and unregister selectors on it wherever
 * it is held, and the feed's figures for metrics (docs/design.md "Live
 * feed", "Engine map").
 */

import type { ParsedSelector } from '@/lib/selector';
import { hashSecret } from '../core/ids';
import type { Principal } from '../core/model';
import type { Runner } from '../runner';
import { planReplay } from './change-log';
import type { Cluster } from './cluster';
import type { FeedHub, FeedSink, FeedStats, Subscribed } from './feed';

export class FeedService {
  constructor(
    private readonly r: Runner,
    private readonly hub: FeedHub,
    private readonly cluster: Cluster | undefined,
  ) {}

  /**
   * Open a live stream for the principal and register `selectors` on it (the
   * caller authorized each with `read`). `hello` carries the later of the
   * family's revision read here and the last one the feed published, so
   * every change with a greater revision reaches the stream.
   * With `since` (null: a value that is not a revision), the stream resumes:
   * the changes after it that match its registrations are replayed before
   * live events, or it is sent `resync` (docs/semantics.md §8).
   * `rate_limited` at a stream or registration cap, with nothing
   * retained; `backend_unavailable` if the store cannot answer.
   */
  async open(
    p: Principal,
    selectors: readonly ParsedSelector[],
    renewals: boolean,
    sink: FeedSink,
    loginCookie?: string,
    since?: number | null,
  ): Promise<{ streamId: string; subscriptions: Subscribed[] }> {
    const owner = {
      tokenId: p.tokenId,
      family: p.family,
      expiresAt: p.expiresAt,
      loginHash: loginCookie === undefined ? undefined : hashSecret(loginCookie),
      // An embed token's streams count against the token that minted it.
      quotaTokenId: p.kind === 'embed' ? (p.createdBy ?? p.tokenId) : p.tokenId,
    };
    if (since === undefined) {
      const revision = await this.r.run((step) => step.tx.revision(p.family), undefined, p.family);
      return this.hub.open(owner, selectors, renewals, sink, revision);
    }
    // Resuming: register first (holding back live events), then read the
    // log up to a revision fixed after registering, so every change is
    // either replayed or live, never both, never neither (docs/design.md, "Resuming").
    const opened = this.hub.open(owner, selectors, renewals, sink, 0, true);
    try {
      const plan = await planReplay((fn) => this.r.run((step) => fn(step.tx)), p.family, since, this.hub.replayFrames(opened.streamId), this.hub.limits.maxReplay);
      this.hub.resume(opened.streamId, plan);
    } catch (e) {
      this.hub.discard(opened.streamId);
      throw e;
    }
    return opened;
  }

  /**
   * Register a selector on an open stream of this token, on this instance
   * or (shared store) forwarded to the instance that holds it.
   */
  async register(tokenId: string, streamId: string, selector: ParsedSelector, renewals: boolean): Promise<Subscribed> {
    if (this.hub.has(streamId) || !this.cluster) return this.hub.register(tokenId, streamId, selector, renewals);
    return this.cluster.register(tokenId, streamId, selector.selector, renewals);
  }

  /** Remove one registration of an open stream of this token, wherever the stream is held. */
  async unregister(tokenId: string, streamId: string, subscriptionId: string): Promise<void> {
    if (this.hub.has(streamId) || !this.cluster) return this.hub.unregister(tokenId, streamId, subscriptionId);
    await this.cluster.unregister(tokenId, streamId, subscriptionId);
  }

  /** Send every stream of the family `resync` (their clients read the inventory again). */
  resync(family: string): void {
    this.hub.resync(family);
  }

  /** This instance's streams, registrations and delivery counts (metrics). */
  stats(): FeedStats {
    return this.hub.stats();
  }

  /** One family's delivery counts (metrics). */
  familyStats(family: string): { notifications: number; dropped: number } {
    return this.hub.familyStats(family);
  }
}
