/**
 * The lease handle's `releaseRequested` signal and event, fed by renew and
 * keepalive answers, and the documented worker that lets go when asked
 * (docs/examples/release-aware-worker.ts, shown in docs/sdk.md).
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ReleaseRequestedEvent } from '@/lib/client';
import { leasePath, rid } from '../../server/testing/harness';
import { processQueue } from '../../docs/examples/release-aware-worker';
import { eventually, serverAndClient } from './support';

const env = serverAndClient();

const REASON = 'nightly rebuild needs this shard; please let go';

async function ask(route: string, token: number): Promise<number> {
  const r = await env.s.call('POST', leasePath(route, 'release-request'), { request_id: rid(), reason: REASON, expected_fencing_token: token });
  assert.equal(r.status, 200, r.text);
  return Date.now();
}

test('a handle gets releaseRequested (signal and event) within one renewal interval plus one second, and keeps the lease', async () => {
  const ttlMs = 3000;
  const session = await env.client.openSession({ ownerId: 'asked', ttlMs: 60_000 });
  try {
    const h = await session.acquire('lease://sdkrr/renew/a', { ttlMs });
    const evented = new Promise<ReleaseRequestedEvent>((resolve) => h.addEventListener('releaseRequested', (e) => resolve(e), { once: true }));
    const signalled = new Promise<number>((resolve) => h.releaseRequested.addEventListener('abort', () => resolve(Date.now()), { once: true }));
    assert.equal(h.releaseRequested.aborted, false);
    const askedAt = Date.now();
    await env.client.requestRelease(h.route, { reason: REASON, expectedFencingToken: h.fencingToken });
    const at = await signalled;
    const bound = (ttlMs / 3) * 1.2 + 1000;
    assert.ok(at - askedAt <= bound, `signalled ${at - askedAt} ms after the request (bound ${bound} ms)`);
    const e = await evented;
    assert.deepEqual([e.request.route, e.request.fencing_token, e.request.reason], [h.route, h.fencingToken, REASON]);
    assert.deepEqual(h.releaseRequested.reason, e.request);
    assert.deepEqual(h.releaseRequest, e.request);
    assert.equal(h.state, 'held', 'asking changes nothing: the holder still holds');
    assert.equal(h.signal.aborted, false);
  } finally {
    await session.close();
  }
});

test('a session keepalive also delivers the request, to the handle of that exact lease only', async () => {
  const session = await env.client.openSession({ ownerId: 'kept', ttlMs: 3000 });
  try {
    // Long lease TTLs: their renewals are ~20 s away, so only a keepalive (every ~1 s) can deliver it.
    const asked = await session.acquire('lease://sdkrr/keep/a', { ttlMs: 60_000 });
    const other = await session.acquire('lease://sdkrr/keep/b', { ttlMs: 60_000 });
    const askedAt = await ask(asked.route, asked.fencingToken);
    await eventually('the keepalive delivered the request', () => asked.releaseRequested.aborted, 3000 * 0.4 + 1000);
    assert.ok(Date.now() - askedAt <= 3000 * 0.4 + 1000);
    assert.equal(other.releaseRequested.aborted, false, 'the other lease was not asked');
  } finally {
    await session.close();
  }
});

test('the documented worker finishes its item, checkpoints and releases when asked; the next worker resumes from the checkpoint', async () => {
  const doc = readFileSync('docs/sdk.md', 'utf8');
  assert.ok(doc.includes(readFileSync('docs/examples/release-aware-worker.ts', 'utf8')), 'docs/sdk.md shows the tested example verbatim');

  const route = 'lease://sdkrr/worker/queue';
  const items = ['a', 'b', 'c', 'd', 'e', 'f'];
  const processed: string[] = [];
  const first = await env.client.openSession({ ownerId: 'worker-1', ttlMs: 10_000 });
  let askedDuring: string | undefined;
  const work = async (item: string) => {
    if (item === 'b') {
      // Ask while an item is in hand; wait until the handle has heard it.
      const held = (await env.s.call('GET', leasePath(route))).body.lease.fencing_token as number;
      await ask(route, held);
      askedDuring = item;
      await eventually('the handle heard it', () => first.handles[0]!.releaseRequested.aborted, 3000);
    }
    processed.push(item);
  };
  const r1 = await processQueue(first, route, items, work);
  assert.deepEqual(r1, { done: 2, stoppedBecause: 'release requested' });
  assert.equal(askedDuring, 'b');
  assert.deepEqual(processed, ['a', 'b'], 'the item in hand finished; nothing was started after the request');
  assert.equal((await env.s.call('GET', leasePath(route))).status, 404, 'released: the route is free at once');
  await env.s.flushAudit(); // the release was buffered by whichever instance served it
  const audit = await env.s.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}`);
  const kinds = audit.body.items.map((e: { event_type: string }) => e.event_type);
  assert.ok(kinds.includes('lease_release') && !kinds.includes('lease_force_release'), 'a clean release, not a forced one');
  await first.close();

  const second = await env.client.openSession({ ownerId: 'worker-2', ttlMs: 10_000 });
  const r2 = await processQueue(second, route, items, async (item) => void processed.push(item));
  assert.deepEqual(r2, { done: 4, stoppedBecause: 'finished' });
  assert.deepEqual(processed, items, 'resumed from the checkpoint: every item once');
  await second.close();
});
