/**
 * Several real server processes on one PostgreSQL database (docs/design.md
 * "Several instances: the cluster"): one lease universe, fencing across instances, changes on
 * every instance's feed, stream calls forwarded, and a SIGKILLed instance
 * losing nothing acknowledged while its sessions expire through the others.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid } from '../../server/testing/harness';
import { startInstances, type Instance, type Instances } from '../../server/testing/instances';
import { SseClient } from '../../server/testing/sse';
import { TIME_FACTOR, waitFor } from '../../server/testing/wait';

let I: Instances;
let A: Instance;
let B: Instance;
let C: Instance;

before(async () => {
  I = await startInstances(3, { LEASEHOLD_FEED_HEARTBEAT_MS: '1000' });
  [A, B, C] = I.list as [Instance, Instance, Instance];
});
after(async () => {
  await I.close();
});

async function openStream(on: Instance, selectors: string[]) {
  const q = selectors.map((x) => `selector=${encodeURIComponent(x)}`).join('&');
  const c = await SseClient.open(on.url, `/api/v1/inventory/stream?${q}`, { token: I.token });
  const hello = await c.waitFor((e) => e.event === 'hello');
  await c.waitForCount((e) => e.event === 'subscribed', selectors.length);
  return { c, streamId: hello.data.stream_id as string };
}

describe('one lease universe across instances', () => {
  test('instances starting together share one epoch, one secret (cursors) and one bootstrap token; health says postgres', async () => {
    const health = await Promise.all(I.list.map((i) => i.call('GET', '/api/v1/health')));
    for (const h of health) assert.equal(h.body.store, 'postgres');
    assert.equal(new Set(health.map((h) => h.body.epoch)).size, 1);
    const tokens = await A.call('GET', '/api/v1/tokens');
    assert.equal(tokens.status, 200);
    assert.equal(tokens.body.items.length, 1, 'exactly one bootstrap token');
    const s = await I.openSession(A, 'lister');
    for (let i = 0; i < 3; i++) assert.equal((await I.acquire(A, `lease://list/x/r${i}`, s)).status, 200);
    const page = await A.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://list/x/*')}&limit=2`);
    assert.equal(page.body.items.length, 2);
    const next = await C.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://list/x/*')}&limit=2&cursor=${encodeURIComponent(page.body.next_cursor)}`);
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.body.items.map((x: { route: string }) => x.route), ['lease://list/x/r2']);
  });

  test('50 concurrent acquires of one route spread across instances: exactly one winner', async () => {
    const route = 'lease://race/one/route';
    const sessions = await Promise.all(Array.from({ length: 50 }, (_, i) => I.openSession(I.list[i % 3]!, `racer-${i}`)));
    const replies = await Promise.all(sessions.map((s, i) => I.acquire(I.list[i % 3]!, route, s)));
    const codes = replies.map((r) => r.status);
    assert.equal(codes.filter((c) => c === 200).length, 1, `statuses: ${codes.join(',')}`);
    assert.equal(codes.filter((c) => c === 409).length, 49);
    for (const r of replies.filter((x) => x.status === 409)) assert.equal(r.body.code, 'lease_conflict');
  });

  test('tokens strictly increase across instances over 200 acquire/release cycles', async () => {
    const route = 'lease://fence/cycle/r';
    // The sessions outlive the 200 cycles however loaded the machine (no keepalive here: that is not under test).
    const sessions = await Promise.all(I.list.map((i) => I.openSession(i, `cycler-${i.name}`, 300_000)));
    let last = 0;
    for (let n = 0; n < 200; n++) {
      const k = n % 3;
      const on = I.list[k]!;
      const a = await I.acquire(on, route, sessions[k]!);
      assert.equal(a.status, 200, a.text);
      const token = a.body.lease.fencing_token as number;
      assert.ok(token > last, `cycle ${n}: token ${token} after ${last}`);
      last = token;
      const r = await I.release(I.list[(k + 1) % 3]!, route, sessions[k]!, a.body.lease);
      assert.equal(r.status, 200, r.text);
    }
  });

  test('a change made through A arrives on a stream opened on B, in revision order', async () => {
    const { c } = await openStream(B, ['lease://feed/ab/*']);
    const s = await I.openSession(A, 'feeder');
    const a = await I.acquire(A, 'lease://feed/ab/x', s);
    assert.equal(a.status, 200);
    assert.equal((await I.release(C, 'lease://feed/ab/x', s, a.body.lease)).status, 200);
    const changes = await c.waitForCount((e) => e.event === 'change', 2, 5_000);
    assert.deepEqual(changes.map((e) => e.data.change), ['acquired', 'released']);
    assert.equal(changes[0]!.data.lease.fencing_token, a.body.lease.fencing_token);
    assert.ok(changes[1]!.data.revision > changes[0]!.data.revision);
    c.res.destroy();
  });

  test('a stream opened on A gets a registration added through B, and its events; B removes it again', async () => {
    const { c, streamId } = await openStream(A, ['lease://feed/none/*']);
    const reg = await B.call('POST', `/api/v1/inventory/streams/${streamId}/subscriptions`, { selector: 'lease://feed/fwd/*' });
    assert.equal(reg.status, 200, reg.text);
    assert.equal(reg.body.created, true);
    const subscribed = await c.waitFor((e) => e.event === 'subscribed' && e.data.selector === 'lease://feed/fwd/*');
    assert.equal(subscribed.data.subscription_id, reg.body.subscription_id);
    const s = await I.openSession(C, 'fwd');
    const a = await I.acquire(C, 'lease://feed/fwd/x', s);
    const change = await c.waitFor((e) => e.event === 'change' && e.data.route === 'lease://feed/fwd/x');
    assert.equal(change.data.subscription_id, reg.body.subscription_id);
    assert.equal(change.data.revision, a.body.lease.fencing_token);
    const del = await C.call('DELETE', `/api/v1/inventory/streams/${streamId}/subscriptions/${reg.body.subscription_id}`);
    assert.equal(del.status, 200, del.text);
    const again = await B.call('DELETE', `/api/v1/inventory/streams/${streamId}/subscriptions/${reg.body.subscription_id}`);
    assert.equal(again.status, 404, 'removed already: not_found from the stream’s instance');
    const unknown = await B.call('POST', `/api/v1/inventory/streams/st_nosuchstream0000000000/subscriptions`, { selector: 'lease://a/b/*' });
    assert.equal(unknown.status, 404);
    c.res.destroy();
  });
});

describe('waiters and failures across instances', () => {
  test('a waiter on B is granted (queued: true) in the step that frees the route on A, in FIFO order across instances', async () => {
    const route = 'lease://wait/across/r';
    const holder = await I.openSession(A, 'holder');
    const held = await I.acquire(A, route, holder);
    assert.equal(held.status, 200);
    const w1 = await I.openSession(B, 'w1');
    const w2 = await I.openSession(C, 'w2');
    const waiters = async () => (await A.call('GET', leasePath(route))).body.lease?.waiters;
    const p1 = I.acquire(B, route, w1, { wait_ms: 20_000 });
    await waitFor('w1 queued on B', waiters, (n) => n === 1);
    const p2 = I.acquire(C, route, w2, { wait_ms: 20_000 });
    await waitFor('w2 queued on C, behind w1', waiters, (n) => n === 2);
    const inspect = await A.call('GET', leasePath(route));
    assert.equal(inspect.body.lease.waiters, 2, 'A sees both waiters');
    const listed = await A.call('GET', `/api/v1/leases?selector=${encodeURIComponent(route)}`);
    assert.equal(listed.body.items[0].waiters, 2, 'and so does its inventory');
    assert.equal((await I.release(A, route, holder, held.body.lease)).status, 200);
    const g1 = await p1;
    assert.equal(g1.status, 200, g1.text);
    assert.equal(g1.body.queued, true);
    assert.equal(g1.body.lease.owner_id, 'w1');
    assert.ok(g1.body.lease.fencing_token > held.body.lease.fencing_token);
    assert.equal((await I.release(C, route, w1, g1.body.lease)).status, 200);
    const g2 = await p2;
    assert.equal(g2.status, 200, g2.text);
    assert.equal(g2.body.lease.owner_id, 'w2');
    assert.ok(g2.body.lease.fencing_token > g1.body.lease.fencing_token);
  });

  test('SIGKILL of one instance loses no acknowledged state; its sessions expire and release on time through the others', async () => {
    const D = await I.start('D');
    const { c } = await openStream(A, ['lease://kill/d/*']);
    // Long enough for the checks below to run before it ends on a loaded machine, short enough to wait for.
    const ttl = 2_000 * TIME_FACTOR;
    const session = await I.openSession(D, 'doomed', ttl);
    const acked: Array<{ route: string; body: Record<string, unknown>; answer: any }> = [];
    for (let i = 0; i < 5; i++) {
      const route = `lease://kill/d/r${i}`;
      const body = { session_id: session, request_id: rid(), ttl_ms: 60_000 };
      const r = await D.call('POST', leasePath(route, 'acquire'), body);
      assert.equal(r.status, 200);
      acked.push({ route, body, answer: r.body });
      const cp = await D.call('PUT', leasePath(route, 'checkpoint'), { session_id: session, request_id: rid(), lease_id: r.body.lease.lease_id, fencing_token: r.body.lease.fencing_token, value: { i } });
      assert.equal(cp.status, 200);
    }
    // The session's deadline is now + ttl: the kill's time is measured from here.
    const kept = await D.call('POST', '/api/v1/sessions/keepalive', { session_id: session });
    assert.equal(kept.status, 200, kept.text);
    const killedAt = Date.now();
    D.proc.proc.kill('SIGKILL');
    await new Promise((r) => D.proc.proc.once('exit', r));
    for (const a of acked) {
      const inspect = await B.call('GET', leasePath(a.route));
      assert.equal(inspect.status, 200, 'still held after the kill');
      assert.equal(inspect.body.lease.fencing_token, a.answer.lease.fencing_token);
      const cp = await C.call('GET', leasePath(a.route, 'checkpoint'));
      assert.deepEqual(cp.body.checkpoint.value, { i: acked.indexOf(a) });
      const replay = await A.call('POST', leasePath(a.route, 'acquire'), a.body);
      assert.equal(replay.status, 200);
      assert.equal(replay.body.lease.lease_id, a.answer.lease.lease_id);
    }
    // The others' sweeps end its leases as session_closed soon after the deadline (1.5 s, scaled on CI).
    const ends = await c.waitForCount((e) => e.event === 'change' && e.data.change === 'session_closed', 5, ttl + 6_000 * TIME_FACTOR);
    const elapsed = Date.now() - killedAt;
    assert.ok(elapsed < ttl + 1_500 * TIME_FACTOR, `released ${elapsed} ms after the kill (session TTL ${ttl} ms)`);
    assert.equal(ends.length, 5);
    for (const a of acked) assert.equal((await C.call('GET', leasePath(a.route))).status, 404);
    c.res.destroy();
  });
});
