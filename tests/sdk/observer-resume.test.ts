/**
 * The observer resumes instead of relisting (docs/sdk.md "After a disconnect
 * or a restart", docs/semantics.md §8, "Resuming"): over 300 leases that keep changing,
 * a cut stream and a server restart each end in `resumed`, with no LIST made
 * at the server (counted there, from its request metrics), and a view equal
 * to a fresh LIST. A server that cannot replay says `resync`, and the
 * observer relists on the same stream.
 */

import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, type InventoryObserver, type ObserverRecovery } from '@/lib/client';
import { call, leasePath, prng, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { histogramCount, parseExposition } from '../../server/testing/prometheus';
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

/** Periodic reconciliation lists too; pushed past the test's length so every LIST counted is a relisting. */
const NO_RECONCILE = { reconcileIntervalMs: 600_000 };

function routes(area: string, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => `lease://resume/${area}/r${String(from + i).padStart(3, '0')}`);
}

function canon(m: ReadonlyMap<string, number>): string {
  return JSON.stringify([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Requests the server answered for `operation`, summed over its instances (their own metrics). */
async function served(server: TestServer, operation: string): Promise<number> {
  let n = 0;
  for (const url of server.urls) {
    const r = await call(url, 'GET', '/api/metrics', undefined, { token: server.token });
    assert.equal(r.status, 200, r.text);
    n += histogramCount(await parseExposition(r.text), 'leasehold_request_duration_seconds', { operation });
  }
  return n;
}

/** Acquire until `n` of `churn`'s routes are held (a fleet of 300 leases to start from). */
async function fill(churn: Churn, n: number): Promise<void> {
  await churn.fill(n);
  assert.equal(churn.held.size, n);
}

/** The held set as the churn made it (route → token), merged over several churns. */
function made(...churns: Churn[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of churns) for (const [route, h] of c.held) out.set(route, h.token);
  return out;
}

async function matches(o: InventoryObserver, want: () => Map<string, number>, what: string, timeoutMs = 10_000): Promise<void> {
  let last = '';
  await eventually(
    what,
    () => {
      last = `want ${canon(want())}\n got ${canon(tokensOf(o.view))}`;
      return o.state === 'ready' && canon(want()) === canon(tokensOf(o.view));
    },
    timeoutMs,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}\n${last}`);
  });
}

test('a cut stream over 300 churning leases: the observer resumes from its revision, lists nothing, and ends equal to a fresh LIST', async () => {
  const selector = 'lease://resume/cut/*';
  const churn = new Churn(s, routes('cut', 400), prng(101));
  await churn.init();
  await fill(churn, 300);
  const ctl = new ControlledFetch(s.fetch);
  const o = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }).observeInventory(selector, { ...NO_RECONCILE, renewals: true, backoff: { initialMs: 50, maxMs: 200 } });
  open.push(o);
  await o.ready;
  await matches(o, () => made(churn), 'the first view');
  const recoveries: ObserverRecovery[] = [];
  o.onRecovery((r) => recoveries.push(r));
  const states: string[] = [];
  o.onStateChange((st) => states.push(st));
  const lists = await served(s, 'lease_list');
  const inspects = await served(s, 'lease_inspect');
  const listsByClient = ctl.count('GET', '/api/v1/leases?');
  const since = o.revision;
  assert.ok(since !== undefined && since > 0);

  // Cut the stream; the held set keeps changing while the observer is away,
  // and while it comes back.
  ctl.failWhile((_m, url) => isStreamOpen(url));
  assert.equal(ctl.dropStreams(), 1);
  await eventually('the observer to notice the cut', () => o.state === 'resyncing');
  await churn.steps(60);
  ctl.failWhile(undefined);
  const during = churn.steps(60);
  await eventually('the observer to recover', () => recoveries.length > 0, 10_000);
  await during;
  await matches(o, () => made(churn), 'the view to catch up with the churn');

  assert.deepEqual(recoveries[0], { kind: 'resumed', since });
  assert.equal(o.recovery?.kind, 'resumed');
  assert.equal(o.getSnapshot().recovery?.kind, 'resumed');
  assert.deepEqual(states.slice(0, 2), ['resyncing', 'ready']);
  assert.equal(await served(s, 'lease_list'), lists, 'no LIST reached the server');
  assert.equal(await served(s, 'lease_inspect'), inspects, 'no route was re-inspected');
  assert.equal(ctl.count('GET', '/api/v1/leases?'), listsByClient, 'the client sent no LIST');
  assert.equal(o.stats.resumes, 1);
  assert.equal(o.stats.relists, 0);
  assert.equal(o.stats.snapshots, 1);
  assert.ok(o.revision! > since, 'the revision moved on with the replay and live changes');
  // And the view is what a fresh LIST says.
  assert.equal(canon(tokensOf(o.view)), canon(await truth(s, selector)));
  await churn.close();
  await matches(o, () => new Map(), 'the view to empty when the churn ends');
});

test('a server restart under 300 churning leases: the observer resumes on the new process without a LIST', async () => {
  const local = await startTestServer({ keepDir: true });
  const port = Number(new URL(local.url).port);
  const selector = 'lease://resume/restart/*';
  const churn = new Churn(local, routes('restart', 400), prng(103));
  await churn.init();
  await fill(churn, 300);
  const o = new LeaseholdClient({ baseUrl: local.url, token: local.token }).observeInventory(selector, { ...NO_RECONCILE, backoff: { initialMs: 100, maxMs: 400 } });
  open.push(o);
  await o.ready;
  await matches(o, () => made(churn), 'the first view');
  const recoveries: ObserverRecovery[] = [];
  o.onRecovery((r) => recoveries.push(r));
  const since = o.revision;
  // Changes right before the restart, some of which the observer may not see.
  const before = churn.steps(20);
  await before;
  // Every instance goes down (on PostgreSQL B too).
  await Promise.all(local.apps.map((x) => x.close()));
  await eventually('the observer to see the server go', () => o.state === 'resyncing');
  const again = await startTestServer({ dataDir: local.dataDir, port, engine: { bootstrapSecret: local.token } });
  try {
    // Changes after the restart, before and while the observer is back:
    // new routes, and releases of leases held from before it.
    const churn2 = new Churn(again, routes('restart', 100, 400), prng(107));
    await churn2.init(2);
    await churn2.steps(40);
    const heldBefore = [...churn.held.entries()].slice(0, 25);
    for (const [route, h] of heldBefore) {
      const r = await again.call('POST', leasePath(route, 'release'), { session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() });
      assert.equal(r.status, 200, r.text);
      churn.held.delete(route);
    }
    await eventually('the observer to recover', () => recoveries.length > 0, 15_000);
    await matches(o, () => made(churn, churn2), 'the view to equal the held set after the restart', 15_000);
    assert.equal(recoveries[0]?.kind, 'resumed', JSON.stringify(recoveries));
    assert.ok(recoveries[0]?.since !== undefined && recoveries[0].since >= since!);
    // The new process's metrics start at zero: any LIST since is the observer's.
    assert.equal(await served(again, 'lease_list'), 0, 'no LIST reached the restarted server');
    assert.equal(await served(again, 'lease_inspect'), 0, 'no route was re-inspected');
    assert.equal(o.stats.relists, 0);
    assert.equal(canon(tokensOf(o.view)), canon(await truth(again, selector)));
    await churn2.close();
    await churn.close().catch(() => undefined);
  } finally {
    o.close();
    await again.close();
  }
});

test('resync: a server that cannot replay from the revision asked says so, and the observer relists on the same stream', async () => {
  const selector = 'lease://resume/resync/*';
  const churn = new Churn(s, routes('resync', 30), prng(109));
  await churn.init(2);
  await churn.steps(30);
  // A resume point the server cannot honour: beyond its current revision
  // (what a revision from another store lifetime looks like), so it answers
  // `resync` (docs/semantics.md §8, "Resuming") on a stream that stays open.
  const ctl = new ControlledFetch(s.fetch);
  let rewrite = false;
  const fetchFar: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    if (rewrite && isStreamOpen(url.href) && url.searchParams.has('since')) url.searchParams.set('since', String(Number.MAX_SAFE_INTEGER));
    return ctl.fetch(url.href, init);
  };
  const o = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: fetchFar }).observeInventory(selector, { ...NO_RECONCILE, backoff: { initialMs: 50, maxMs: 200 } });
  open.push(o);
  await o.ready;
  const recoveries: ObserverRecovery[] = [];
  o.onRecovery((r) => recoveries.push(r));
  const opens = ctl.count('GET', '/api/v1/inventory/stream');
  rewrite = true;
  assert.equal(ctl.dropStreams(), 1);
  await churn.steps(20);
  await eventually('the observer to recover', () => recoveries.length > 0, 10_000);
  await churn.steps(10);
  await matches(o, () => made(churn), 'the relisted view to follow the churn');
  assert.equal(recoveries[0]?.kind, 'relisted');
  assert.equal(recoveries[0]?.reason, 'resync');
  assert.equal(recoveries[0]?.detail, 'epoch');
  assert.equal(o.stats.relists, 1);
  assert.equal(o.stats.resumes, 0);
  assert.equal(ctl.count('GET', '/api/v1/inventory/stream'), opens + 1, 'relisted on the resumed stream, not a new one');
  assert.equal(canon(tokensOf(o.view)), canon(await truth(s, selector)));
  await churn.close();
});

test('resume off (resume: false): a cut stream relists, as before resumable feeds', async () => {
  const selector = 'lease://resume/off/*';
  const churn = new Churn(s, routes('off', 20), prng(113));
  await churn.init(2);
  await churn.steps(20);
  const ctl = new ControlledFetch(s.fetch);
  const o = new LeaseholdClient({ baseUrl: s.url, token: s.token, fetch: ctl.fetch }).observeInventory(selector, { ...NO_RECONCILE, resume: false, backoff: { initialMs: 50, maxMs: 200 } });
  open.push(o);
  await o.ready;
  const recoveries: ObserverRecovery[] = [];
  o.onRecovery((r) => recoveries.push(r));
  const lists = ctl.count('GET', '/api/v1/leases?');
  assert.equal(ctl.dropStreams(), 1);
  await churn.steps(10);
  await eventually('the observer to recover', () => recoveries.length > 0, 10_000);
  await matches(o, () => made(churn), 'the relisted view');
  assert.deepEqual(recoveries[0], { kind: 'relisted', reason: 'disabled' });
  assert.ok(ctl.count('GET', '/api/v1/leases?') > lists, 'it listed again');
  assert.equal(ctl.calls.some((c) => isStreamOpen(c.url) && new URL(c.url).searchParams.has('since')), false, 'never asked to resume');
  await churn.close();
});

test('heartbeat loss: a stream that falls silent is given up after two heartbeats and resumed, without a LIST', async () => {
  const local = await startTestServer({ engine: { feed: { heartbeatMs: 300 } } });
  try {
    const selector = 'lease://resume/silent/*';
    const churn = new Churn(local, routes('silent', 40), prng(127));
    await churn.init(2);
    await churn.steps(30);
    // A network that goes quiet: the stream's connection stays open but no
    // byte of it arrives (not even heartbeats); later streams flow.
    let opened = 0;
    let silenced = -1;
    const lists: string[] = [];
    const quiet: typeof fetch = async (input, init) => {
      const url = String(input);
      if (new URL(url).pathname === '/api/v1/leases') lists.push(url);
      const res = await local.fetch(input, init);
      if (!isStreamOpen(url) || !res.body) return res;
      const mine = opened++;
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(ctrl) {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return ctrl.close();
            if (silenced !== mine) return ctrl.enqueue(value);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const o = new LeaseholdClient({ baseUrl: local.url, token: local.token, fetch: quiet }).observeInventory(selector, { ...NO_RECONCILE, backoff: { initialMs: 50, maxMs: 200 } });
    open.push(o);
    await o.ready;
    await matches(o, () => made(churn), 'the first view');
    const recoveries: ObserverRecovery[] = [];
    o.onRecovery((r) => recoveries.push(r));
    const listed = lists.length;
    silenced = opened - 1;
    await churn.steps(20);
    await eventually('the silence to be noticed and the stream resumed', () => recoveries.length > 0, 10_000);
    await churn.steps(10);
    await matches(o, () => made(churn), 'the view to catch up');
    assert.equal(recoveries[0]?.kind, 'resumed', JSON.stringify(recoveries));
    assert.equal(lists.length, listed, 'no LIST after the silence');
    assert.equal(canon(tokensOf(o.view)), canon(await truth(local, selector)));
    await churn.close();
  } finally {
    for (const o of open.splice(0)) o.close();
    await local.close();
  }
});
