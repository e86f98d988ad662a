/**
 * The SDK's long waits (CONTRACT §20, docs/sdk.md): `session.acquire` takes any
 * `waitMs`, or an `AbortSignal` alone, and keeps its place in the queue by
 * re-issuing the wait with the server's `queue_ticket`. The server here
 * waits at most 150 ms a request (`maxWaitMs`, LEASEHOLD_MAX_WAIT_MS), so
 * the SDK re-issues many times in a test's span. On PostgreSQL successive
 * requests alternate between the two instances: every ticket one issues,
 * the other takes.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, isLeaseholdError } from '@/lib/client';
import { startTestServer, type TestServer } from '../../server/testing/harness';
import { eventually } from './support';

let s: TestServer;
/** Acquire requests that carried a queue_ticket, per owner. */
const continued = new Map<string, number>();

function clientFor(owner: string): LeaseholdClient {
  const counting: typeof fetch = async (input, init) => {
    if (typeof init?.body === 'string' && init.body.includes('"queue_ticket"')) continued.set(owner, (continued.get(owner) ?? 0) + 1);
    return s.fetch(input, init);
  };
  return new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: counting });
}

before(async () => {
  s = await startTestServer({ engine: { limits: { maxWaitMs: 150 } } });
});
after(async () => {
  await s.close();
});

const reissued = (owner: string) => continued.get(owner) ?? 0;

test('a long wait keeps its place through its tickets: the first waiter gets the route, a later one does not', async () => {
  const route = 'lease://sdk/tickets/long';
  const holderSession = await clientFor('holder').openSession({ ownerId: 'holder' });
  const firstSession = await clientFor('first').openSession({ ownerId: 'first' });
  const laterSession = await clientFor('later').openSession({ ownerId: 'later' });
  try {
    const held = await holderSession.acquire(route);
    const firstP = firstSession.acquire(route, { waitMs: 90_000 });
    firstP.catch(() => undefined);
    await eventually('the first waiter re-issued its wait with its ticket', () => reissued('first') >= 1);
    const laterP = laterSession.acquire(route, { waitMs: 90_000 });
    let laterSettled = false;
    laterP.then(
      () => (laterSettled = true),
      () => (laterSettled = true),
    );
    const mark = reissued('first');
    await eventually('the first waiter re-issued twice more', () => reissued('first') >= mark + 2 && reissued('later') >= 1);
    await held.release();
    const got = await firstP;
    assert.equal(got.route, route);
    assert.equal(got.queued, true);
    // The later waiter is still waiting, behind it: it keeps re-issuing its wait.
    const after = reissued('later');
    await eventually('the later waiter waiting on', () => reissued('later') >= after + 2);
    assert.equal(laterSettled, false);
    await got.release();
    const next = await laterP;
    assert.equal(next.route, route);
    await next.release();
  } finally {
    await Promise.all([holderSession.close(), firstSession.close(), laterSession.close()]);
  }
});

test('an AbortSignal alone waits until it aborts, across requests', async () => {
  const route = 'lease://sdk/tickets/signal';
  const holderSession = await clientFor('holder-2').openSession({ ownerId: 'holder-2' });
  const waiter = await clientFor('signal').openSession({ ownerId: 'signal' });
  try {
    await holderSession.acquire(route);
    const ac = new AbortController();
    const p = waiter.acquire(route, { signal: ac.signal });
    p.catch(() => undefined);
    await eventually('the wait re-issued twice', () => reissued('signal') >= 2);
    ac.abort(new Error('test: given up'));
    const e = await p.then(
      () => assert.fail('granted'),
      (x: unknown) => x,
    );
    assert.ok(e instanceof Error && e.message === 'test: given up', String(e));
  } finally {
    await Promise.all([holderSession.close(), waiter.close()]);
  }
});

test('a bounded wait ends with lease_conflict carrying the ticket that continues it', async () => {
  const route = 'lease://sdk/tickets/bounded';
  const holderSession = await clientFor('holder-3').openSession({ ownerId: 'holder-3' });
  const waiter = await clientFor('bounded').openSession({ ownerId: 'bounded' });
  try {
    const held = await holderSession.acquire(route);
    const e = await waiter.acquire(route, { waitMs: 400 }).then(
      () => assert.fail('granted'),
      (x: unknown) => x,
    );
    assert.ok(isLeaseholdError(e, 'lease_conflict'), String(e));
    assert.match(e.queueTicket ?? '', /^qt_/);
    await held.release();
    // The place is kept for it: its ticket gets the route.
    const got = await waiter.acquire(route, { queueTicket: e.queueTicket });
    assert.equal(got.queued, true);
    await got.release();
  } finally {
    await Promise.all([holderSession.close(), waiter.close()]);
  }
});
