/**
 * Conformance of `observeInventory` against the real server (docs/sdk.md, docs/semantics.md
 * §8): it converges to the true held set whatever changes while it
 * bootstraps, after its stream is cut, after an overflow, after a server
 * restart, and when events are withheld (periodic reconciliation).
 */

import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, LeaseholdError, type InventoryObserver, type ObserverPhase } from '@/lib/client';
import { leasePath, prng, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { Churn, ControlledFetch, eventually, isStreamOpen, tokensOf, truth } from './support';

let s: TestServer;
const open: InventoryObserver[] = [];
before(async () => {
  s = await startTestServer();
});
afterEach(() => {
  for (const o of open.splice(0)) o.close();
});
after(async () => {
  await s.close();
});

function observe(client: LeaseholdClient, selector: string, opts: Parameters<LeaseholdClient['observeInventory']>[1] = {}): InventoryObserver {
  const o = client.observeInventory(selector, opts);
  open.push(o);
  return o;
}

function routes(area: string, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => `lease://obs/${area}/r${String(from + i).padStart(3, '0')}`);
}

/** A held set as a canonical string (sorted by route), for comparing views. */
function canon(m: ReadonlyMap<string, number>): string {
  return JSON.stringify([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

async function converged(o: InventoryObserver, selector: string): Promise<void> {
  let last = '';
  await eventually(
    `the view of ${selector} to equal the held set`,
    async () => {
      const want = await truth(s, selector);
      const got = tokensOf(o.view);
      last = `want ${canon(want)}\n got ${canon(got)}`;
      return o.state === 'ready' && canon(want) === canon(got);
    },
    8000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${last}`);
  });
}

for (const phase of ['stream_open', 'registered', 'page', 'listed'] as const satisfies readonly ObserverPhase[]) {
  test(`bootstrap converges with the held set changing at "${phase}"`, async () => {
    const area = `boot-${phase}`;
    const selector = `lease://obs/${area}/*`;
    const churn = new Churn(s, routes(area, 40), prng(phase.length * 7919));
    await churn.init();
    await churn.steps(30);
    const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch });
    let inFlight: Promise<void> | undefined;
    let hits = 0;
    const o = observe(client, selector, {
      pageSize: 4,
      hooks: {
        async phase(p) {
          if (p !== phase) return;
          hits++;
          if (p === 'stream_open') {
            // Changes land while the registration is on its way: some before
            // the request, some racing it.
            await churn.steps(5);
            inFlight = churn.steps(10);
          } else {
            await churn.steps(p === 'page' ? 2 : 10);
          }
        },
      },
    });
    await o.ready;
    await inFlight;
    assert.ok(hits >= 1, `the "${phase}" step ran`);
    assert.equal(o.state, 'ready');
    await converged(o, selector);
    // And it keeps following live changes.
    await churn.steps(15);
    await converged(o, selector);
    assert.equal(o.stats.connects, 1, 'no resync was needed');
    await churn.close();
    await converged(o, selector);
    assert.equal(o.view.size, 0);
  });
}

test('the view is ready only after the snapshot: every lease held before observing is in it at ready', async () => {
  const area = 'ready';
  const selector = `lease://obs/${area}/*`;
  const churn = new Churn(s, routes(area, 12), prng(5));
  await churn.init(2);
  await churn.steps(25);
  const expected = await truth(s, selector);
  assert.ok(expected.size > 0);
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch }), selector, { pageSize: 2 });
  let seenBeforeReady = -1;
  o.onStateChange((st) => {
    if (st === 'ready') seenBeforeReady = o.view.size;
  });
  assert.equal(o.state, 'connecting');
  await o.ready;
  assert.equal(seenBeforeReady, expected.size);
  assert.deepEqual(tokensOf(o.view), expected);
  await churn.close();
});

test('a dropped stream: the observer reopens its stream from its revision, resumes without listing and converges on changes made meanwhile', async () => {
  const area = 'drop';
  const selector = `lease://obs/${area}/*`;
  const churn = new Churn(s, routes(area, 20), prng(11));
  await churn.init();
  await churn.steps(20);
  const ctl = new ControlledFetch(s.fetch);
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }), selector, { backoff: { initialMs: 50, maxMs: 200 } });
  await o.ready;
  await converged(o, selector);
  const states: string[] = [];
  o.onStateChange((st) => states.push(st));
  // Cut the stream, then change the held set before the observer can be back.
  ctl.failWhile((_m, url) => isStreamOpen(url));
  assert.equal(ctl.dropStreams(), 1, JSON.stringify(o.stats));
  await eventually('the observer to notice the drop', () => o.state === 'resyncing');
  assert.ok(o.view.size > 0, 'the last view is kept while resyncing');
  await churn.steps(20);
  ctl.failWhile(undefined);
  await converged(o, selector);
  assert.deepEqual(states.slice(0, 1), ['resyncing']);
  assert.ok(o.stats.connects >= 2 && o.stats.resumes >= 1, JSON.stringify(o.stats));
  assert.equal(o.stats.snapshots, 1, 'resumed, not relisted');
  assert.equal(o.recovery?.kind, 'resumed');
  await churn.close();
  await converged(o, selector);
});

test('an overflow (resync): the observer relists on a new stream and converges', async () => {
  const area = 'overflow';
  const selector = `lease://obs/${area}/*`;
  const churn = new Churn(s, routes(area, 20), prng(13));
  await churn.init();
  await churn.steps(15);
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch }), selector);
  await o.ready;
  // The server ends every stream of the family with `overflow` (reason
  // `resync`), as a shared store does on a revision gap.
  // (On PostgreSQL the stream may be on either instance: both resync.)
  for (const a of s.apps) a.engine.feed.resync('default');
  await churn.steps(15);
  await converged(o, selector);
  assert.ok(o.stats.connects >= 2, `a new stream was opened (${JSON.stringify(o.stats)})`);
  await churn.close();
});

test('a server restart: the observer reconnects to the new process, resumes from its revision and converges', async () => {
  const local = await startTestServer({ keepDir: true });
  const port = Number(new URL(local.url).port);
  const selector = 'lease://obs/restart/*';
  const churn = new Churn(local, routes('restart', 10), prng(17));
  await churn.init(2);
  await churn.steps(10);
  const o = observe(new LeaseholdClient({ baseUrl: local.url, token: local.token }), selector, { backoff: { initialMs: 100, maxMs: 400 } });
  await o.ready;
  const before = o.stats.connects;
  // Every instance goes down (on PostgreSQL B too, or it would keep the database busy and this process alive).
  await Promise.all(local.apps.map((x) => x.close()));
  await eventually('the observer to see the server go', () => o.state === 'resyncing');
  const again = await startTestServer({ dataDir: local.dataDir, port, engine: { bootstrapSecret: local.token } });
  try {
    // Changes right after the restart, before the observer is back.
    const churn2 = new Churn(again, routes('restart', 10, 10), prng(19));
    await churn2.init(2);
    await churn2.steps(10);
    let last = '';
    await eventually(
      'the view to equal the held set after the restart',
      async () => {
        const want = await truth(again, selector);
        last = `${canon(want)} vs ${canon(tokensOf(o.view))}`;
        return o.state === 'ready' && canon(want) === canon(tokensOf(o.view));
      },
      15_000,
    ).catch((e: unknown) => {
      throw new Error(`${(e as Error).message}: ${last}`);
    });
    assert.ok(o.stats.connects > before);
    assert.equal(o.recovery?.kind, 'resumed', JSON.stringify(o.recovery));
    await churn2.close();
  } finally {
    o.close();
    await again.close();
  }
});

test('periodic reconciliation repairs a view whose events were withheld', async () => {
  const selector = 'lease://obs/withheld/*';
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch });
  let withhold = true;
  let withheld = 0;
  const o = observe(client, selector, {
    reconcileIntervalMs: 400,
    hooks: {
      dropEvent: () => {
        if (withhold) withheld++;
        return withhold;
      },
    },
  });
  await o.ready;
  const { sessionId } = await s.openSession('withheld', 60_000);
  const acquired = await s.call('POST', leasePath('lease://obs/withheld/x', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(acquired.status, 200);
  await eventually('the change to be withheld', () => withheld === 1);
  assert.equal(o.view.has('lease://obs/withheld/x'), false, 'the withheld change is not in the view yet');
  withhold = false;
  const repairedBy: string[] = [];
  o.onChange((changes) => repairedBy.push(...changes.map((c) => c.cause)));
  await eventually('reconciliation to repair the view', () => o.view.get('lease://obs/withheld/x')?.fencing_token === acquired.body.lease.fencing_token, 5000);
  assert.deepEqual(repairedBy, ['reconcile']);
  assert.ok(o.stats.reconciliations >= 1 && o.stats.repairs >= 1, JSON.stringify(o.stats));
  assert.equal(o.stats.connects, 1, 'repaired without a new stream');
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
  await eventually('the release to show', () => o.view.size === 0);
});

test('maxItems: a selector matching more leases than allowed ends in error, not in growth', async () => {
  const { sessionId } = await s.openSession('many', 60_000);
  for (let i = 0; i < 5; i++) {
    const r = await s.call('POST', leasePath(`lease://obs/many/r${i}`, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
    assert.equal(r.status, 200);
  }
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch }), 'lease://obs/many/*', { maxItems: 3, pageSize: 2 });
  await assert.rejects(o.ready, (e: unknown) => e instanceof LeaseholdError && e.code === 'too_many_items');
  assert.equal(o.state, 'error');
  assert.equal(o.error?.code, 'too_many_items');
  assert.ok(o.view.size <= 3);
  // Live growth past the cap errors too.
  const o2 = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch }), 'lease://obs/many/*', { maxItems: 5 });
  await o2.ready;
  const r = await s.call('POST', leasePath('lease://obs/many/r9', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(r.status, 200);
  await eventually('the cap to trip', () => o2.state === 'error');
  assert.equal(o2.error?.code, 'too_many_items');
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('refusals a retry cannot fix end in error: a denied selector, a revoked token', async () => {
  const narrow = await s.createToken(['lease://obs/one/*#read']);
  const denied = observe(new LeaseholdClient({ baseUrl: s.url, token: narrow, fetch: s.fetch }), 'lease://obs/**');
  await assert.rejects(denied.ready, (e: unknown) => e instanceof LeaseholdError && e.code === 'access_denied');
  assert.equal(denied.state, 'error');

  const created = await s.call('POST', '/api/v1/tokens', { name: 'short', grants: ['lease://obs/**#read'] });
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: created.body.token, fetch: s.fetch }), 'lease://obs/**');
  await o.ready;
  assert.equal((await s.call('DELETE', `/api/v1/tokens/${created.body.token_id}`)).status, 200);
  await eventually('the revocation to end the observer', () => o.state === 'error');
  assert.equal(o.error?.code, 'invalid_credential');
});

test('while it cannot connect the observer says why it retries (retryReason, onRetry), and forgets it once ready', async () => {
  const ctl = new ControlledFetch(s.fetch);
  ctl.failWhile((_m, url) => isStreamOpen(url));
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }), 'lease://obs/retry/*', { backoff: { initialMs: 20, maxMs: 50 } });
  const reasons: LeaseholdError[] = [];
  o.onRetry((e) => reasons.push(e));
  await eventually('a retry with its reason', () => reasons.length >= 2);
  assert.equal(o.state, 'connecting');
  assert.equal(o.retryReason, reasons.at(-1));
  assert.equal(reasons[0]!.code, 'network_error');
  assert.equal(reasons[0]!.message, `cannot open the live stream at ${s.url}/api/v1/inventory/stream: fetch failed (test: network down)`);
  ctl.failWhile(undefined);
  await o.ready;
  assert.equal(o.retryReason, undefined);
});

test('observed items are read-only views: frozen, without lease or session ids', async () => {
  const { sessionId } = await s.openSession('ro', 60_000);
  const r = await s.call('POST', leasePath('lease://obs/ro/a', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000, metadata: { shard: 3 } });
  assert.equal(r.status, 200);
  const o = observe(new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch }), 'lease://obs/ro/*');
  await o.ready;
  const item = o.view.get('lease://obs/ro/a');
  assert.ok(item);
  assert.equal('lease_id' in item, false);
  assert.equal('session_id' in item, false);
  assert.equal(JSON.stringify(item).includes(r.body.lease.lease_id), false);
  assert.equal(JSON.stringify(item).includes(sessionId), false);
  assert.ok(Object.isFrozen(item) && Object.isFrozen(item.metadata));
  assert.throws(() => {
    (item as { fencing_token: number }).fencing_token = 1;
  }, TypeError);
  assert.throws(() => {
    (item.metadata as Record<string, number>).shard = 4;
  }, TypeError);
  const snapshot = o.getSnapshot();
  assert.ok(Object.isFrozen(snapshot) && Object.isFrozen(snapshot.items));
  // Nothing on the observer acts on leases.
  for (const name of ['release', 'renew', 'acquire', 'forceRelease', 'revoke', 'checkpoint', 'takeOver']) {
    assert.equal(name in o, false, `observer has no ${name}`);
  }
  // Type level: the view type has no lease_id, and the observer no lease actions.
  if (false as boolean) {
    // @ts-expect-error a LeaseView carries no lease_id
    void item.lease_id;
    // @ts-expect-error the observer cannot release
    void o.release(item.route);
    // @ts-expect-error the observer cannot renew
    void o.renew(item);
  }
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('the default reconciliation interval follows the shortest TTL in the view', async () => {
  const { sessionId } = await s.openSession('ttl', 60_000);
  const take = async (route: string, ttl: number): Promise<void> => {
    const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: ttl });
    assert.equal(r.status, 200, r.text);
  };
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: s.fetch });
  const o = observe(client, 'lease://obs/ttl/*');
  await o.ready;
  assert.equal(o.reconcileIntervalMs(), 60_000, 'empty view: the longest interval');
  await take('lease://obs/ttl/long', 300_000);
  await eventually('the long lease to show', () => o.view.size === 1);
  assert.equal(o.reconcileIntervalMs(), 60_000);
  await take('lease://obs/ttl/mid', 30_000);
  await eventually('the mid lease to show', () => o.view.size === 2);
  assert.equal(o.reconcileIntervalMs(), 15_000);
  await take('lease://obs/ttl/short', 4_000);
  await eventually('the short lease to show', () => o.view.size === 3);
  assert.equal(o.reconcileIntervalMs(), 5_000);
  assert.equal(observe(client, 'lease://obs/ttl/*', { expectedTtlMs: 50_000 }).reconcileIntervalMs(), 25_000, 'an expected TTL wins');
  assert.equal(observe(client, 'lease://obs/ttl/*', { reconcileIntervalMs: 1234 }).reconcileIntervalMs(), 1234, 'configurable');
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('a failed registration: the observer backs off, opens a new stream and gets ready', async () => {
  const { sessionId } = await s.openSession('failreg', 60_000);
  const r = await s.call('POST', leasePath('lease://obs/failreg/a', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(r.status, 200);
  const ctl = new ControlledFetch(s.fetch);
  ctl.failWhile((method, url) => method === 'POST' && url.includes('/subscriptions'));
  const client = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch, retry: { attempts: 1 } });
  const o = observe(client, 'lease://obs/failreg/*', { backoff: { initialMs: 50, maxMs: 100 } });
  await eventually('a few failed attempts', () => ctl.count('POST', '/subscriptions') >= 3);
  assert.equal(o.state, 'connecting');
  ctl.failWhile(undefined);
  await o.ready;
  assert.deepEqual([...o.view.keys()], ['lease://obs/failreg/a']);
  assert.ok(o.stats.connects >= 4, JSON.stringify(o.stats));
  await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId });
});

test('a new epoch (the server comes back on a different store): the observer relists and drops what the old store held', async () => {
  const first = await startTestServer();
  const port = Number(new URL(first.url).port);
  const { sessionId } = await first.openSession('epoch', 60_000);
  for (const r of ['a', 'b']) {
    const res = await first.call('POST', leasePath(`lease://obs/epoch/${r}`, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
    assert.equal(res.status, 200);
  }
  const o = observe(new LeaseholdClient({ baseUrl: first.url, token: first.token }), 'lease://obs/epoch/*', { backoff: { initialMs: 100, maxMs: 300 } });
  await o.ready;
  assert.equal(o.view.size, 2);
  await first.close();
  const second = await startTestServer({ port, engine: { bootstrapSecret: first.token } });
  try {
    const sid = (await second.openSession('epoch2', 60_000)).sessionId;
    const res = await second.call('POST', leasePath('lease://obs/epoch/c', 'acquire'), { session_id: sid, request_id: rid(), ttl_ms: 60_000 });
    assert.equal(res.status, 200);
    await eventually('the view of the new store', () => o.state === 'ready' && [...o.view.keys()].join() === 'lease://obs/epoch/c', 10_000);
    // The server says `resync` (epoch) when the old revision is past its own; the observer sees the new epoch either way.
    assert.equal(o.recovery?.kind, 'relisted');
    assert.ok(o.recovery.reason === 'epoch' || (o.recovery.reason === 'resync' && o.recovery.detail === 'epoch'), JSON.stringify(o.recovery));
  } finally {
    o.close();
    await second.close();
  }
});
