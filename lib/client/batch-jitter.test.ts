/**
 * When a session's batched renewals go out (docs/sdk.md "Batched
 * renewals"), on a fake clock against a scripted server: the handles one
 * batch renewed fall due again together, at a point of the ±20 % jitter
 * window drawn once for the batch. (Drawn per handle, the earliest of
 * hundreds always fell at the window's start and pulled the rest with it:
 * every batch 0.8 of the interval after the last, sessions in lockstep.)
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from './fake-clock.testing';
import { LeaseholdClient } from './index';

const BASE = 'http://leasehold.test';
const TTL = 30_000;
const INTERVAL = TTL / 3;

/** A seeded generator (mulberry32): the same draws every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Answers a session's open, all-or-nothing acquires and batched renewals; records each batch's time and size. */
class BatchServer {
  readonly batches: Array<{ at: number; items: number }> = [];
  constructor(private readonly clock: FakeClock) {}

  readonly fetch: typeof fetch = async (input, init) => {
    const path = new URL(String(input)).pathname;
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : {};
    const now = new Date(this.clock.now()).toISOString();
    const session = { session_id: 'ss_1', holder_incarnation: 'hi_1', owner_id: 'w', ttl_ms: 600_000, created_at: now, expires_at: now, lease_count: 0 };
    const lease = (route: string) => ({
      route, lease_id: `ls_${route}`, owner_id: 'w', holder_incarnation: 'hi_1', fencing_token: 1, acquired_at: now, renewed_at: now, expires_at: now,
      max_expires_at: now, ttl_ms: TTL, remaining_ms: TTL, renewal_count: 0, revision: 1, metadata: null, waiters: 0, release_request: null,
    });
    const json = (status: number, b: unknown) => new Response(JSON.stringify({ status: 'success', code: 'ok', correlation_id: 'c', ...(b as object) }), { status, headers: { 'content-type': 'application/json' } });
    if (path === '/api/v1/sessions') return json(201, { session });
    if (path === '/api/v1/sessions/close') return json(200, { closed: true });
    if (path === '/api/v1/sessions/acquire') return json(200, { leases: (body.leases as Array<{ route: string }>).map((l) => lease(l.route)) });
    if (path === '/api/v1/sessions/renew') {
      const items = body.leases as Array<{ route: string }>;
      this.batches.push({ at: this.clock.now(), items: items.length });
      return json(200, { session, results: items.map((i) => ({ route: i.route, code: 'lease_renewed', lease: lease(i.route) })), release_requests: [] });
    }
    return json(404, { status: 'error', code: 'not_found', message: path, retryable: false });
  };
}

/** Real event-loop turns, so that answers are taken in before the fake clock moves on. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

test("one batch's handles fall due again together, at a point of the jitter window drawn for the batch", async () => {
  const clock = new FakeClock();
  const server = new BatchServer(clock);
  const client = new LeaseholdClient({ baseUrl: BASE, token: 'lh_test', fetch: server.fetch, clock, random: seeded(7) });
  const session = await client.openSession({ ownerId: 'w', ttlMs: 600_000 });
  const handles = [];
  for (let i = 0; i < 128; i += 16) {
    handles.push(...(await session.acquireAll(Array.from({ length: 16 }, (_, k) => `lease://acme/jitter/r${i + k}`))));
  }
  await settle();
  const BATCHES = 12;
  while (server.batches.length < BATCHES) {
    await clock.advance(10);
    await settle();
  }
  assert.ok(server.batches.every((b) => b.items === handles.length), `every batch renewed all ${handles.length} handles: ${server.batches.map((b) => b.items).join(', ')}`);
  const gaps = server.batches.slice(1).map((b, i) => b.at - server.batches[i]!.at);
  // Within the window (0.8 to 1.2 of the interval; the clock moves 10 ms at a time, and a batch coalesces for 5 ms).
  for (const g of gaps) assert.ok(g >= 0.8 * INTERVAL && g <= 1.2 * INTERVAL + 20, `a gap of ${g} ms is outside the jitter window: ${gaps.join(', ')}`);
  // Spread over it, not pinned to its start: a draw per handle made every gap 0.8 of the interval and a few ms.
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  assert.ok(Math.max(...gaps) - Math.min(...gaps) >= 0.15 * INTERVAL, `the gaps vary by at least 15 % of the interval: ${gaps.join(', ')}`);
  assert.ok(mean >= 0.9 * INTERVAL, `the mean gap (${mean.toFixed(0)} ms) is near the interval, not its lower bound: ${gaps.join(', ')}`);
  await session.close();
});
