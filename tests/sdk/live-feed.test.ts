/**
 * `client.liveFeed()`, the one stream many watchers share (the console's, one
 * per tab; docs/sdk.md "One stream for a page"), against the real server: a
 * cut stream resumes from the last revision delivered, so watchers get the
 * changes they missed and are not asked to list again; a `resync` asks them
 * to (their `onRegistered` runs again).
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, type ChangeEvent, type FeedEvent, type LiveFeedNotice } from '@/lib/client';
import { leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { ControlledFetch, eventually, isStreamOpen } from './support';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

async function acquire(sessionId: string, route: string): Promise<void> {
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(r.status, 200, r.text);
}

test('a cut stream resumes: the changes made meanwhile arrive once, in order, and no watcher is asked to list again', async () => {
  const ctl = new ControlledFetch(s.fetch);
  const feed = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }).liveFeed({ backoff: { initialMs: 50, maxMs: 200 } });
  const notices: LiveFeedNotice[] = [];
  feed.onNotice((n) => notices.push(n));
  const events: ChangeEvent[] = [];
  const other: FeedEvent[] = [];
  let registered = 0;
  const unwatch = feed.watch('lease://feed/cut/*', (e) => e.type === 'change' && events.push(e), { renewals: true, onRegistered: () => registered++ });
  const unwatch2 = feed.watch('lease://feed/other/*', (e) => other.push(e));
  try {
    await eventually('the feed to be live', () => notices.some((n) => n.type === 'live') && registered === 1);
    const { sessionId } = await s.openSession('feed-cut', 60_000);
    await acquire(sessionId, 'lease://feed/cut/a');
    await eventually('the first change', () => events.length === 1);

    ctl.failWhile((_m, url) => isStreamOpen(url));
    ctl.dropStreams();
    await eventually('the feed to notice', () => notices.some((n) => n.type === 'lost'));
    await acquire(sessionId, 'lease://feed/cut/b');
    await acquire(sessionId, 'lease://feed/other/x');
    await acquire(sessionId, 'lease://feed/cut/c');
    ctl.failWhile(undefined);
    await eventually('the missed changes, and the feed live again', () => events.length === 3 && other.length === 1 && notices.filter((n) => n.type === 'live').length === 2, 10_000);
    const live = notices.filter((n): n is Extract<LiveFeedNotice, { type: 'live' }> => n.type === 'live');
    assert.equal(live.at(-1)?.recovery?.kind, 'resumed');
    assert.deepEqual(events.map((e) => e.route), ['lease://feed/cut/a', 'lease://feed/cut/b', 'lease://feed/cut/c']);
    assert.ok(events[1]!.revision < events[2]!.revision);
    assert.equal(registered, 1, 'no watcher was asked to list again');
    const resumedOpen = ctl.calls.filter((c) => isStreamOpen(c.url)).at(-1)!;
    const q = new URL(resumedOpen.url).searchParams;
    assert.deepEqual(q.getAll('selector').sort(), ['lease://feed/cut/*', 'lease://feed/other/*']);
    assert.equal(Number(q.get('since')), events[0]!.revision);
    assert.equal(feed.revision, events[2]!.revision);
    await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
  } finally {
    unwatch();
    unwatch2();
    feed.stop();
  }
});

test('a resync: the stream stays, and every watcher is asked to list again', async () => {
  let far = false;
  const fetchFar: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    if (far && isStreamOpen(url.href) && url.searchParams.has('since')) url.searchParams.set('since', String(Number.MAX_SAFE_INTEGER));
    return ctl.fetch(url.href, init);
  };
  const ctl = new ControlledFetch(s.fetch);
  const feed = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: fetchFar }).liveFeed({ backoff: { initialMs: 50, maxMs: 200 } });
  const notices: LiveFeedNotice[] = [];
  feed.onNotice((n) => notices.push(n));
  let registered = 0;
  const unwatch = feed.watch('lease://feed/resync/*', () => undefined, { onRegistered: () => registered++ });
  try {
    await eventually('the feed to be live', () => registered === 1);
    const { sessionId } = await s.openSession('feed-resync', 60_000);
    await acquire(sessionId, 'lease://feed/resync/a');
    await eventually('a revision to resume from', () => feed.revision !== undefined && notices.some((n) => n.type === 'change'));
    far = true;
    ctl.dropStreams();
    await eventually('the watcher to be asked to list again', () => registered === 2, 10_000);
    const live = notices.filter((n): n is Extract<LiveFeedNotice, { type: 'live' }> => n.type === 'live');
    assert.equal(live.at(-1)?.recovery?.kind, 'relisted');
    assert.equal(live.at(-1)?.recovery?.reason, 'resync');
    await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
  } finally {
    unwatch();
    feed.stop();
  }
});

test('a selector first watched while the stream is down is registered afresh (its watcher lists); the others resume', async () => {
  const ctl = new ControlledFetch(s.fetch);
  const feed = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }).liveFeed({ backoff: { initialMs: 50, maxMs: 200 } });
  const notices: LiveFeedNotice[] = [];
  feed.onNotice((n) => notices.push(n));
  let carried = 0;
  let late = 0;
  const unwatch = feed.watch('lease://feed/carried/*', () => undefined, { onRegistered: () => carried++ });
  let unwatchLate: (() => void) | undefined;
  try {
    await eventually('the feed to be live', () => carried === 1);
    const { sessionId } = await s.openSession('feed-late', 60_000);
    await acquire(sessionId, 'lease://feed/carried/a');
    await eventually('a revision to resume from', () => notices.some((n) => n.type === 'change'));
    ctl.failWhile((_m, url) => isStreamOpen(url));
    ctl.dropStreams();
    await eventually('the feed to notice', () => notices.some((n) => n.type === 'lost'));
    unwatchLate = feed.watch('lease://feed/late/*', () => undefined, { onRegistered: () => late++ });
    ctl.failWhile(undefined);
    await eventually('the late watcher to be registered', () => late === 1, 10_000);
    const resumedOpen = ctl.calls.filter((c) => isStreamOpen(c.url)).at(-1)!;
    assert.deepEqual(new URL(resumedOpen.url).searchParams.getAll('selector'), ['lease://feed/carried/*']);
    const live = notices.filter((n): n is Extract<LiveFeedNotice, { type: 'live' }> => n.type === 'live');
    assert.equal(live.at(-1)?.recovery?.kind, 'resumed');
    assert.equal(carried, 1, 'the carried selector resumed without listing');
    await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
  } finally {
    unwatch();
    unwatchLate?.();
    feed.stop();
  }
});
