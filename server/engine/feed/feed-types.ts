/**
 * The live feed's types (feed.ts): frames, sinks, stream owners, limits and
 * figures, and the hub's stream records.
 */

import type { ParsedSelector } from '@/lib/selector';
import type { LeaseRenewed, ReleaseRequestedEvent } from '../core/events';
import { MAX_REPLAY_EVENTS, type ResyncReason } from './change-log';

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

export const quotaKey = (o: StreamOwner): string => o.quotaTokenId ?? o.tokenId;

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

/** One selector registered on a stream (internal to the feed). */
export interface Registration {
  id: string;
  selector: ParsedSelector;
  renewals: boolean;
  stream: Stream;
}

/** A stream as the hub holds it (internal to the feed). */
export interface Stream {
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
export function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

export const frame = (event: FeedFrame['event'], data: object): FeedFrame => ({ event, json: JSON.stringify(data) });

export function releaseRequestedJson(e: ReleaseRequestedEvent): string {
  return JSON.stringify({ route: e.route, fencing_token: e.fencingToken, reason: e.reason, requested_at: new Date(e.requestedAt).toISOString() });
}

export function renewedJson(e: LeaseRenewed): string {
  return JSON.stringify({ route: e.route, expires_at: new Date(e.expiresAt).toISOString(), renewal_count: e.renewalCount });
}
