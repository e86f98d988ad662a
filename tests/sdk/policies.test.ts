/**
 * `client.policies` against the real server, the lease handle renewing on
 * the TTL a policy granted, and `LeaseholdError.lockDelayUntil`.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, LeaseholdError } from '@/lib/client';
import { startTestServer, type TestServer } from '../../server/testing/harness';
import { TIME_FACTOR } from '../../server/testing/wait';

let s: TestServer;
let client: LeaseholdClient;
before(async () => {
  s = await startTestServer();
  client = new LeaseholdClient({ baseUrl: s.url, token: s.token });
});
after(async () => {
  await s.close();
});

const reason = 'bounds for the sdk test fleet';

test('set, list, explain and delete a policy; a missing one is not_found', async () => {
  const p = await client.policies.set('lease://sdkp/**', { reason, ttlMaxMs: 20_000, lockDelayMs: 1_000 });
  assert.deepEqual([p.selector, p.ttl_max_ms, p.lock_delay_ms, p.ttl_min_ms], ['lease://sdkp/**', 20_000, 1_000, null]);
  assert.deepEqual((await client.policies.list('lease://sdkp/**')).map((x) => x.selector), ['lease://sdkp/**']);
  const e = await client.policies.explain('lease://sdkp/a/b');
  assert.equal(e.policy?.selector, 'lease://sdkp/**');
  assert.deepEqual([e.limits.ttl_max_ms, e.limits.lock_delay_ms, e.limits.ttl_default_ms], [20_000, 1_000, 20_000]);
  await client.policies.delete('lease://sdkp/**', { reason });
  assert.equal((await client.policies.explain('lease://sdkp/a/b')).policy, null);
  await assert.rejects(client.policies.delete('lease://sdkp/**', { reason }), (err: unknown) => err instanceof LeaseholdError && err.code === 'not_found');
});

test('the handle holds the granted TTL and renews on it', async () => {
  // Real time on purpose (the handle must outlive the granted TTL), scaled so a loaded machine's delays stay inside it.
  const ttl = 2_000 * TIME_FACTOR;
  await client.policies.set('lease://sdkt/**', { reason, ttlMinMs: ttl, ttlMaxMs: ttl });
  const session = await client.openSession({ ownerId: 'granted', ttlMs: 2.5 * ttl });
  try {
    const h = await session.acquire('lease://sdkt/a/b', { ttlMs: 60_000 * TIME_FACTOR });
    assert.equal(h.lease.ttl_ms, ttl, 'the granted TTL, not the asked one');
    await new Promise((r) => setTimeout(r, 1.5 * ttl));
    assert.equal(h.state, 'held', 'renewed on the granted TTL, so it outlived it');
    assert.ok(h.lease.renewal_count >= 1);
  } finally {
    await session.close();
  }
});

test('an acquire refused by lock-delay exposes lockDelayUntil', async () => {
  await client.policies.set('lease://sdkd/**', { reason, lockDelayMs: 30_000 });
  const session = await client.openSession({ ownerId: 'old', ttlMs: 5_000 });
  const other = await client.openSession({ ownerId: 'next', ttlMs: 5_000 });
  try {
    const h = await session.acquire('lease://sdkd/a/b');
    await client.forceRelease('lease://sdkd/a/b', { reason, expectedFencingToken: h.fencingToken });
    const err = await other.acquire('lease://sdkd/a/b').then(
      () => undefined,
      (x: unknown) => x,
    );
    assert.ok(err instanceof LeaseholdError && err.code === 'lease_conflict', String(err));
    assert.ok(err.lockDelayUntil !== undefined && err.lockDelayUntil > Date.now() + 20_000);
    const h2 = await session.acquire('lease://sdkd/x/y');
    await client.forceRelease('lease://sdkd/x/y', { reason, expectedFencingToken: h2.fencingToken, lockDelayMs: 0 });
    const got = await other.acquire('lease://sdkd/x/y');
    assert.equal(got.lease.owner_id, 'next', 'skipping the delay frees the route at once');
  } finally {
    await session.close().catch(() => undefined);
    await other.close();
  }
});
