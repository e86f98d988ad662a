/**
 * A waiter's deadline on a shared store is decided by the store, not by the
 * instance's local queue: instance A (behind a TCP proxy the test controls)
 * holds a waiting acquire; A is cut off the database while instance B frees
 * the route and grants A's waiter in its step. The grant's notice to A is
 * lost with A's notification connection. When the wait's deadline comes, A
 * must answer the grant its waiter was given (200, the lease B made for it),
 * not `lease_conflict` while the lease stays taken by nobody who knows it
 * (docs/design.md "Waiters"). PostgreSQL only: the shared queue exists only
 * there.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { leasePath, rid } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';
import { startInstances, type Instance, type Instances } from '../../server/testing/instances';
import { createTestDatabase, type TestDatabase } from '../../server/testing/pg';
import { proxyDatabase, type TcpProxy } from '../../server/testing/tcp-proxy';

let db: TestDatabase;
let proxy: TcpProxy;
let I: Instances;
let A: Instance;
let B: Instance;

before(async () => {
  db = await createTestDatabase();
  let viaProxy: string;
  ({ proxy, url: viaProxy } = await proxyDatabase(db));
  I = await startInstances(1, { LEASEHOLD_ACCESS_LOG: 'off' }, db);
  B = I.list[0]!;
  A = await I.start('a', { LEASEHOLD_DATABASE_URL: viaProxy });
});
after(async () => {
  await I.close();
  await proxy.close();
  await db.drop();
});

test('a waiter granted by another instance while its own was cut off is answered the grant at its deadline, not lease_conflict', async () => {
  const route = 'lease://shared/deadline/r1';
  const holder = await I.openSession(B, 'holder-b', 60_000);
  const held = await I.acquire(B, route, holder, { ttl_ms: 60_000 });
  assert.equal(held.status, 200, held.text);
  const waiterSession = await I.openSession(A, 'waiter-a', 60_000);
  const requestId = rid();
  const body = { session_id: waiterSession, request_id: requestId, wait_ms: 6_000, ttl_ms: 60_000 };
  const waiting = A.call('POST', leasePath(route, 'acquire'), body);
  await waitFor('the waiter to queue', async () => (await B.call('GET', leasePath(route))).body.lease?.waiters, (n) => n === 1);

  proxy.cut('stall');
  const freed = await I.release(B, route, holder, held.body.lease);
  assert.equal(freed.status, 200, freed.text);
  const granted = await B.call('GET', leasePath(route));
  assert.equal(granted.body.lease?.owner_id, 'waiter-a', 'B granted the route to A’s waiter in the release’s step');
  // Timing on purpose: A stays cut off for 2 s of the waiter's 6 s, so the grant's notification cannot reach it.
  await sleep(2_000);
  proxy.restore();

  const answer = await waiting;
  assert.equal(answer.status, 200, `the waiter gets its grant: ${answer.text}`);
  assert.equal(answer.body.lease.owner_id, 'waiter-a');
  assert.equal(answer.body.lease.fencing_token, granted.body.lease.fencing_token);
  assert.equal(answer.body.queued, true);
  // The holder can use what it was told: the lease renews with that proof.
  const renewed = await A.call('POST', leasePath(route, 'renew'), { session_id: waiterSession, request_id: rid(), lease_id: answer.body.lease.lease_id, fencing_token: answer.body.lease.fencing_token });
  assert.equal(renewed.status, 200, renewed.text);
  // A retry of the same request replays the same answer.
  const replay = await B.call('POST', leasePath(route, 'acquire'), body);
  assert.equal(replay.status, 200, replay.text);
  assert.equal(replay.body.lease.lease_id, answer.body.lease.lease_id);
});
