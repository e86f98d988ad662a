/**
 * `client.subscribe`, the raw stream (docs/sdk.md "Raw streams"), against the
 * real server: how its async iterator ends (normally when the stream was
 * closed, with the typed error when it was refused or lost), and a listener
 * that throws, which is the application's bug and not a network drop.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, LeaseholdError, type StreamEvent, type Subscription } from '@/lib/client';
import { leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { ControlledFetch, eventually, unreachableUrl } from './support';

let s: TestServer;
let client: LeaseholdClient;
before(async () => {
  s = await startTestServer();
  client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch });
});
after(async () => {
  await s.close();
});

async function drain(sub: Subscription): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const e of sub) events.push(e);
  return events;
}

test('iterating a subscription the server refuses throws its LeaseholdError (access_denied)', async () => {
  const reader = await s.createToken(['lease://sub/mine/**#read']);
  const sub = new LeaseholdClient({ baseUrl: s.url, token: reader, fetch: s.fetch }).subscribe(['lease://**']);
  await assert.rejects(drain(sub), (e: unknown) => e instanceof LeaseholdError && e.code === 'access_denied' && e.status === 403 && typeof e.correlationId === 'string');
  assert.equal((await sub.done).reason, 'refused');
});

test('iterating a subscription to a server that cannot be reached throws network_error', async () => {
  const url = await unreachableUrl();
  const sub = new LeaseholdClient({ baseUrl: url, token: s.token }).subscribe(['lease://**']);
  await assert.rejects(drain(sub), (e: unknown) => e instanceof LeaseholdError && e.code === 'network_error' && e.message.includes(url));
});

test('a dropped connection ends the iterator with stream_closed after the events it delivered; close() ends it quietly', async () => {
  const ctl = new ControlledFetch(s.fetch);
  const sub = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }).subscribe(['lease://sub/drop/*']);
  const events: StreamEvent[] = [];
  const iterated = (async () => {
    for await (const e of sub) events.push(e);
  })();
  await sub.opened;
  ctl.dropStreams();
  await assert.rejects(iterated, (e: unknown) => e instanceof LeaseholdError && e.code === 'stream_closed' && e.retryable);
  assert.deepEqual(events.map((e) => e.type), ['hello', 'subscribed']);
  assert.equal((await sub.done).reason, 'disconnected');

  const closed = client.subscribe(['lease://sub/drop/*']);
  await closed.opened;
  const ended = drain(closed);
  closed.close();
  assert.deepEqual((await ended).map((e) => e.type), ['hello', 'subscribed']);
});

test('a listener that throws does not end the stream: the error is rethrown asynchronously and events keep coming', async () => {
  // node:test turns an uncaught exception into a failure: catch it here instead.
  const runners = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  const uncaught: unknown[] = [];
  process.on('uncaughtException', (e) => uncaught.push(e));
  const sub = client.subscribe(['lease://sub/throw/*']);
  try {
    const seen: string[] = [];
    sub.on((e) => {
      if (e.type === 'change') throw new Error(`app bug on ${e.route}`);
    });
    sub.on((e) => {
      if (e.type === 'change') seen.push(e.route);
    });
    await sub.opened;
    const { sessionId } = await s.openSession('thrower', 60_000);
    for (const route of ['lease://sub/throw/a', 'lease://sub/throw/b']) {
      const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
      assert.equal(r.status, 200, r.text);
    }
    await eventually('both changes to reach the other listener', () => seen.length === 2);
    assert.deepEqual(seen, ['lease://sub/throw/a', 'lease://sub/throw/b']);
    assert.equal(sub.ended, undefined, 'the stream is still open');
    await eventually('the errors to be rethrown', () => uncaught.length === 2);
    assert.deepEqual(uncaught.map((e) => (e as Error).message), ['app bug on lease://sub/throw/a', 'app bug on lease://sub/throw/b']);
    await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
  } finally {
    sub.close();
    process.removeAllListeners('uncaughtException');
    for (const l of runners) process.on('uncaughtException', l);
  }
});
