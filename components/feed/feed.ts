'use client';

import { type FeedEvent, type LiveFeed, type LiveFeedNotice, type StreamEnd } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { useFeedStore } from '@/components/feed/feed-store';

export type { FeedEvent };

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

const relisted = new Set<() => void>();

/** The Feed badge's store follows the SDK feed's notices. */
function toStore(notice: LiveFeedNotice): void {
  const store = useFeedStore.getState();
  switch (notice.type) {
    case 'connecting':
      store.feedConnecting(notice.again);
      return;
    case 'live':
      store.feedOpened(notice.hello.revision);
      if (notice.recovery?.kind === 'relisted') for (const l of [...relisted]) l();
      return;
    case 'change':
      store.changeArrived(notice.revision);
      return;
    case 'lost':
      store.feedLost(notice.terminal || notice.end.reason === 'heartbeat_timeout' ? 'stale' : 'reconnecting', describeEnd(notice.end));
      return;
    case 'refused':
      store.selectorRefused(notice.selector, notice.error.message);
      return;
    case 'accepted':
      store.selectorAccepted(notice.selector);
  }
}

let feed: LiveFeed | undefined;

/**
 * The tab's one inventory stream (docs/console.md: browsers allow few
 * connections per origin), shared by every component on the page: the
 * SDK's LiveFeed, which reconnects and resumes from the last revision by the
 * SDK's policy (docs/sdk.md). Created on first use, in the browser only.
 */
export function consoleFeed(): LiveFeed {
  if (!feed) {
    feed = consoleClient().liveFeed();
    feed.onNotice(toStore);
  }
  return feed;
}

/**
 * Called when the feed could not resume and its watchers must read again
 * (a `resync`, an overflow, a new store epoch); never after a resumed
 * reconnection, whose replay brings what was missed.
 */
export function onFeedRelisted(listener: () => void): () => void {
  relisted.add(listener);
  return () => relisted.delete(listener);
}

/** Sign-out: close the stream, forget every registration and the revision. */
export function stopConsoleFeed(): void {
  feed?.stop();
  useFeedStore.getState().feedStopped();
}
