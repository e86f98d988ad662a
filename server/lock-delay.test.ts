/**
 * Lock-delay across processes: a delay survives a SIGKILL restart (SQLite:
 * one process per data directory), and on PostgreSQL two instances sharing
 * the store see one policy and end one delay once, granting its head waiter
 * exactly once. Real server processes (`node dist/server.mjs`).
 */

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, leasePath, rid, tempDir } from './testing/harness';
import { startInstances } from './testing/instances';
import { TIME_FACTOR, waitFor } from './testing/wait';
import { killServers, spawnServer, stopServer } from './testing/process';

const REASON = 'failover drill for the primary';
const ROUTE = 'lease://db/primary/main';

after(() => killServers());

describe('lock-delay across restarts and instances', () => {
  test('a delay survives a SIGKILL restart, and the waiter queued after it is granted when it ends', async () => {
    const dataDir = tempDir();
    const TOKEN = `lh_ld_${Math.random().toString(36).slice(2)}_bootstrap_token`;
    const env = { LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN };
    const first = await spawnServer(env);
    const c1 = (m: string, p: string, b?: unknown) => call(first.url, m, p, b, { token: TOKEN });
    assert.equal((await c1('PUT', '/api/v1/policies', { selector: 'lease://db/**', reason: REASON, lock_delay_ms: 4_000 })).status, 200);
    const s1 = (await c1('POST', '/api/v1/sessions', { owner_id: 'old', ttl_ms: 15_000 })).body.session.session_id as string;
    const a = await c1('POST', leasePath(ROUTE, 'acquire'), { session_id: s1, request_id: rid() });
    const fr = await c1('POST', leasePath(ROUTE, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: a.body.lease.fencing_token });
    assert.equal(fr.status, 200, fr.text);
    const refused = await c1('POST', leasePath(ROUTE, 'acquire'), { session_id: s1, request_id: rid() });
    assert.equal(refused.body.code, 'lease_conflict');
    const until = Date.parse(refused.body.lock_delay_until as string);
    first.proc.kill('SIGKILL');
    await stopServer(first.proc, 'SIGKILL');

    const second = await spawnServer(env);
    try {
      const c2 = (m: string, p: string, b?: unknown) => call(second.url, m, p, b, { token: TOKEN });
      const inspect = await c2('GET', leasePath(ROUTE));
      assert.equal(inspect.body.code, 'lease_not_found');
      assert.equal(Date.parse(inspect.body.lock_delay_until as string), until, 'the same deadline after the restart');
      const s2 = (await c2('POST', '/api/v1/sessions', { owner_id: 'next', ttl_ms: 15_000 })).body.session.session_id as string;
      const waited = await c2('POST', leasePath(ROUTE, 'acquire'), { session_id: s2, request_id: rid(), wait_ms: 15_000 });
      assert.equal(waited.status, 200, waited.text);
      assert.equal(waited.body.lease.owner_id, 'next');
      const grantedAt = Date.parse(waited.body.lease.acquired_at as string);
      assert.ok(grantedAt >= until, 'not before the delay ends');
      assert.ok(grantedAt - until < 1_000, `within a second of the deadline (${grantedAt - until} ms)`);
    } finally {
      await stopServer(second.proc, 'SIGKILL');
    }
  });

  test('two PostgreSQL instances share a policy and end one delay once, granting its head waiter once', async () => {
    const inst = await startInstances(2);
    try {
      const [A, B] = inst.list as [NonNullable<(typeof inst.list)[0]>, NonNullable<(typeof inst.list)[0]>];
      assert.equal((await A.call('PUT', '/api/v1/policies', { selector: 'lease://db/**', reason: REASON, lock_delay_ms: 2_000, ttl_max_ms: 20_000 })).status, 200);
      // B applies the policy A set.
      const sb = await inst.openSession(B, 'holder');
      const held = await inst.acquire(B, ROUTE, sb, { ttl_ms: 60_000 });
      assert.equal(held.body.lease.ttl_ms, 20_000, held.text);
      const explained = await B.call('GET', '/api/v1/policies/effective/db/primary/main');
      assert.equal(explained.body.policy.selector, 'lease://db/**');

      const fr = await A.call('POST', leasePath(ROUTE, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: held.body.lease.fencing_token });
      assert.equal(fr.status, 200, fr.text);
      const w1 = inst.acquire(A, ROUTE, await inst.openSession(A, 'w1'), { wait_ms: 10_000 * TIME_FACTOR });
      // w2 must queue behind w1: wait until A counts w1 among its waiters (the route is free, so no lease shows it).
      await waitFor('w1 queued on A', async () => (await A.call('GET', '/api/metrics')).text, (t) => /^leasehold_waiters 1$/m.test(t));
      const w2 = inst.acquire(B, ROUTE, await inst.openSession(B, 'w2'), { wait_ms: 10_000 * TIME_FACTOR });
      const first = await w1;
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.lease.owner_id, 'w1', 'the head of the queue');
      assert.equal(first.body.lease.fencing_token, held.body.lease.fencing_token + 2, 'one release and one grant: the delay ended once');
      const seen = await B.call('GET', leasePath(ROUTE));
      assert.equal(seen.body.lease.owner_id, 'w1');
      // The second waiter is still queued (nothing granted it twice).
      assert.equal(seen.body.lease.waiters, 1);
      await A.call('POST', leasePath(ROUTE, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: first.body.lease.fencing_token, lock_delay_ms: 0 });
      const second = await w2;
      assert.equal(second.body.lease.owner_id, 'w2', 'skipping the delay grants the next waiter at once');
    } catch (e) {
      for (const i of inst.list) console.log(i.name, i.proc.output().slice(-3000));
      throw e;
    } finally {
      await inst.close();
    }
  });
});
