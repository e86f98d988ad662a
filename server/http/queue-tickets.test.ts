/**
 * Queue tickets over HTTP (CONTRACT §20, docs/api.md, docs/design.md "Queue tickets"): a wait
 * that ends without a grant answers 409 `lease_conflict` with
 * `queue_ticket`; the ticket continues the place, on any instance; a
 * ticket of another session or route, or a malformed one, is 400
 * `invalid_request` naming `queue_ticket` and changes nothing. On
 * PostgreSQL the two instances share the queues.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';
import { waitFor } from '../testing/wait';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

const A = () => s.urls[0]!;
/** The other instance on PostgreSQL (A itself on SQLite). */
const B = () => s.urls[s.urls.length - 1]!;

function acquire(url: string, route: string, sessionId: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  return call(url, 'POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra }, { token: s.token });
}

async function waitersOn(route: string): Promise<number> {
  const r = await s.call('GET', leasePath(route));
  return r.status === 200 ? (r.body.lease.waiters as number) : -1;
}

/** Hold `route` and time a waiter out on it: the holder's lease and the waiter's ticket. */
async function parked(route: string, waiter: string) {
  const holder = await s.openSession('holder');
  const held = await acquire(A(), route, holder.sessionId);
  assert.equal(held.status, 200, held.text);
  const r = await acquire(A(), route, waiter, { wait_ms: 100 });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.body.code, 'lease_conflict');
  assert.equal(r.body.retryable, true);
  assert.equal(typeof r.body.retry_after_ms, 'number');
  assert.match(r.body.queue_ticket, /^qt_/);
  const { lease_id, fencing_token } = held.body.lease as { lease_id: string; fencing_token: number };
  return { holder, lease: { lease_id, fencing_token }, ticket: r.body.queue_ticket as string };
}

test('a ticket of another session or route, or a malformed one, is 400 invalid_request naming queue_ticket, and changes nothing', async () => {
  const route = 'lease://qt/http/refused';
  const first = await s.openSession('first');
  const stranger = await s.openSession('stranger');
  const { holder, ticket } = await parked(route, first.sessionId);
  await acquire(A(), 'lease://qt/http/refused-2', holder.sessionId);
  assert.equal(await waitersOn(route), 1, 'the parked place counts');
  const cases: Array<[string, string, unknown]> = [
    [stranger.sessionId, route, ticket],
    [first.sessionId, 'lease://qt/http/refused-2', ticket],
    [first.sessionId, route, 'qt_not-a-ticket'],
    [first.sessionId, route, `${ticket}x`],
    [first.sessionId, route, ''],
    [first.sessionId, route, 42],
  ];
  for (const [session, r, t] of cases) {
    const a = await acquire(B(), r, session, { wait_ms: 1_000, queue_ticket: t });
    assert.equal(a.status, 400, `${r} ${String(t)}: ${a.text}`);
    assert.equal(a.body.code, 'invalid_request');
    assert.match(a.body.message, /^queue_ticket/);
    assert.equal(a.body.retryable, false);
  }
  assert.equal(await waitersOn(route), 1, 'nothing changed');
  // The real ticket still continues the place (wait_ms 0: kept, with its ticket again).
  const again = await acquire(B(), route, first.sessionId, { queue_ticket: ticket });
  assert.equal(again.status, 409, again.text);
  assert.match(again.body.queue_ticket, /^qt_/);
});

test('a ticket issued by one instance continues its place on the other, ahead of a later waiter, and a freed route waits for it', async () => {
  const route = 'lease://qt/http/across';
  const first = await s.openSession('first');
  const later = await s.openSession('later');
  const { holder, lease, ticket } = await parked(route, first.sessionId);
  // A later waiter queues behind the parked place (on A).
  const laterP = acquire(A(), route, later.sessionId, { wait_ms: 20_000 });
  await waitFor('the later waiter queued', () => waitersOn(route), (n) => n === 2);
  // The holder releases (on B): the route is kept for the parked place.
  const rel = await call(B(), 'POST', leasePath(route, 'release'), { session_id: holder.sessionId, request_id: rid(), ...lease }, { token: s.token });
  assert.equal(rel.status, 200, rel.text);
  const free = await s.call('GET', leasePath(route));
  assert.equal(free.status, 404, 'kept for the parked place, not granted to the later waiter');
  // The ticket continues the place on B: granted at once, from the queue.
  const g = await acquire(B(), route, first.sessionId, { wait_ms: 5_000, queue_ticket: ticket });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.body.queued, true);
  assert.equal(g.body.lease.owner_id, 'first');
  // The later waiter is next.
  const rel2 = await call(A(), 'POST', leasePath(route, 'release'), { session_id: first.sessionId, request_id: rid(), lease_id: g.body.lease.lease_id, fencing_token: g.body.lease.fencing_token }, { token: s.token });
  assert.equal(rel2.status, 200, rel2.text);
  const l = await laterP;
  assert.equal(l.status, 200, l.text);
  assert.equal(l.body.lease.owner_id, 'later');
});

test('a ticket continues a wait across instances while the route is held, and the first place is served first', async () => {
  const route = 'lease://qt/http/waiting';
  const first = await s.openSession('first');
  const later = await s.openSession('later');
  const { holder, lease, ticket } = await parked(route, first.sessionId);
  const laterP = acquire(A(), route, later.sessionId, { wait_ms: 20_000 });
  await waitFor('the later waiter queued', () => waitersOn(route), (n) => n === 2);
  const firstP = acquire(B(), route, first.sessionId, { wait_ms: 20_000, queue_ticket: ticket });
  await waitFor('the continuation waiting', () => s.apps.reduce((n, a) => n + a.engine.parts.waiters.held('default', route), 0) === 2);
  assert.equal(await waitersOn(route), 2, 'still two places: the continuation took its own back');
  const rel = await call(A(), 'POST', leasePath(route, 'release'), { session_id: holder.sessionId, request_id: rid(), ...lease }, { token: s.token });
  assert.equal(rel.status, 200, rel.text);
  const g = await firstP;
  assert.equal(g.status, 200, g.text);
  assert.equal(g.body.lease.owner_id, 'first');
  assert.equal(g.body.queued, true);
  await call(B(), 'POST', leasePath(route, 'release'), { session_id: first.sessionId, request_id: rid(), lease_id: g.body.lease.lease_id, fencing_token: g.body.lease.fencing_token }, { token: s.token });
  assert.equal((await laterP).body.lease.owner_id, 'later');
});
