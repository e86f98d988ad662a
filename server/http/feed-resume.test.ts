/**
 * Resuming a stream from a revision (docs/semantics.md §8, "Resuming"),
 * through real servers and real SSE: the replay from the change log, the
 * seam with live events while changes keep committing, `resync` and its
 * reasons, and what is never replayed. On PostgreSQL (the unit script's
 * second pass) two instances share one database, and resumed streams are
 * opened on the instance the first stream was not.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { call, leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { parseExposition, sample } from '../testing/prometheus';
import { SseClient, SseRefused, type SseEvent } from '../testing/sse';

let s: TestServer;
/** A server whose change log keeps 5 changes (by count alone) and whose replays hold at most 5 events. */
let small: TestServer;
before(async () => {
  s = await startTestServer({ engine: { sweepIntervalMs: 50 } });
  small = await startTestServer({ engine: { sweepIntervalMs: 20, limits: { changeLogChanges: 5, changeLogMs: 0 }, feed: { maxReplay: 5 } } });
});
after(async () => {
  await s.close();
  await small.close();
});

function streamPath(selectors: string[], extra: string[] = []): string {
  const q = [...selectors.map((x) => `selector=${encodeURIComponent(x)}`), ...extra];
  return `/api/v1/inventory/stream${q.length ? `?${q.join('&')}` : ''}`;
}

interface OpenOptions {
  server?: TestServer;
  /** Which instance (PostgreSQL: 0 or 1). */
  at?: number;
  token?: string;
  since?: number | string;
  lastEventId?: string;
  renewals?: boolean;
}

async function open(selectors: string[], o: OpenOptions = {}) {
  const srv = o.server ?? s;
  const extra: string[] = [];
  if (o.since !== undefined) extra.push(`since=${o.since}`);
  if (o.renewals) extra.push('renewals=1');
  const headers: Record<string, string> = o.lastEventId === undefined ? {} : { 'Last-Event-ID': o.lastEventId };
  const c = await SseClient.open(srv.urls[(o.at ?? 0) % srv.urls.length]!, streamPath(selectors, extra), { token: o.token ?? srv.token, headers });
  const hello = await c.waitFor((e) => e.event === 'hello');
  await c.waitForCount((e) => e.event === 'subscribed', new Set(selectors).size);
  return { c, hello: hello.data };
}

async function hold(srv: TestServer, route: string, sessionId: string, token?: string) {
  const a = await srv.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 }, { token });
  assert.equal(a.status, 200, a.text);
  return { leaseId: a.body.lease.lease_id as string, fencing: a.body.lease.fencing_token as number };
}

async function release(srv: TestServer, route: string, sessionId: string, h: { leaseId: string; fencing: number }, token?: string) {
  const r = await srv.call('POST', leasePath(route, 'release'), { session_id: sessionId, lease_id: h.leaseId, fencing_token: h.fencing, request_id: rid() }, { token });
  assert.equal(r.status, 200, r.text);
}

/** Acquire and release `route` `times` times: 2 × times changes. */
async function churn(srv: TestServer, route: string, sessionId: string, times: number, token?: string) {
  for (let i = 0; i < times; i++) await release(srv, route, sessionId, await hold(srv, route, sessionId, token), token);
}

const changes = (c: SseClient): SseEvent[] => c.events.filter((e) => e.event === 'change');
const ids = (es: SseEvent[]): number[] => es.map((e) => Number(e.id));
/** The events after `hello` and the `subscribed` events, by type. */
const afterSubscribed = (c: SseClient): string[] => c.events.filter((e) => e.event !== 'hello' && e.event !== 'subscribed').map((e) => e.event);

describe('resuming a stream', () => {
  test('a stream cut while changes commit resumes from its last id: every change once, in revision order, then live', async () => {
    const sel = 'lease://rs/drop/*';
    const { sessionId } = await s.openSession('churner');
    // The control stream stays open throughout: the truth about what happened.
    const control = await open([sel]);
    const first = await open([sel]);
    let stop = false;
    const loops = [0, 1, 2].map(async (k) => {
      const route = `lease://rs/drop/r${k}`;
      while (!stop) await churn(s, route, sessionId, 1);
    });
    await first.c.waitForCount((e) => e.event === 'change', 10, 10_000);
    first.c.close();
    await first.c.done;
    const seen = changes(first.c);
    const last = seen[seen.length - 1]!.id!;
    // Changes keep committing while the client is away and while it resumes.
    await control.c.waitForCount((e) => e.event === 'change', seen.length + 20, 10_000);
    const second = await open([sel], { since: last, at: 1 });
    assert.equal(second.hello.resumed, true);
    await second.c.waitForCount((e) => e.event === 'change', 20, 10_000);
    stop = true;
    await Promise.all(loops);
    // The family's last revision, as the store has it (each instance hears the other's changes a little later).
    const final = await s.app.store.atomic((tx) => tx.revision('default'));
    for (const c of [control.c, second.c]) await c.waitFor((e) => e.event === 'change' && Number(e.id) === final, 10_000, `revision ${final}`);
    const resumed = changes(second.c);
    const got = [...ids(seen), ...ids(resumed)];
    assert.deepEqual(got, ids(changes(control.c)), 'every change exactly once, in revision order');
    // Replayed events are the live ones, byte for byte (less the registration, which is the new stream's).
    const live = new Map(changes(control.c).map((e) => [e.id, e.data]));
    for (const e of resumed) assert.deepEqual({ ...e.data, subscription_id: 0 }, { ...live.get(e.id), subscription_id: 0 });
    assert.ok(resumed.every((e) => e.data.subscription_id === second.c.of('subscribed')[0]!.data.subscription_id));
    assert.deepEqual(afterSubscribed(second.c).filter((x) => x !== 'change'), []);
    control.c.close();
    second.c.close();
  });

  test('an acquired change replays with its lease view; hello carries resumed and the replay’s revision', async () => {
    const sel = 'lease://rs/view/*';
    const { sessionId } = await s.openSession('viewer');
    const live = await open([sel]);
    const since = live.hello.revision as number;
    const h = await hold(s, 'lease://rs/view/a', sessionId);
    const [acquired] = await live.c.waitForCount((e) => e.event === 'change', 1);
    const again = await open([sel], { since, at: 1 });
    const [replayed] = await again.c.waitForCount((e) => e.event === 'change', 1);
    assert.equal(replayed!.id, String(h.fencing));
    assert.equal(replayed!.data.change, 'acquired');
    assert.deepEqual(replayed!.data.lease, acquired!.data.lease);
    assert.equal(again.hello.resumed, true);
    assert.ok(again.hello.revision >= h.fencing);
    live.c.close();
    again.c.close();
  });

  test('resuming at the current revision is an empty replay (resumed: true), then live', async () => {
    const sel = 'lease://rs/empty/*';
    const { sessionId } = await s.openSession('empty');
    const first = await open([sel]);
    const r = first.hello.revision as number;
    first.c.close();
    const again = await open([sel], { since: r });
    assert.equal(again.hello.resumed, true);
    const h = await hold(s, 'lease://rs/empty/a', sessionId);
    const [e] = await again.c.waitForCount((x) => x.event === 'change', 1);
    assert.equal(Number(e!.id), h.fencing);
    assert.deepEqual(afterSubscribed(again.c), ['change']);
    again.c.close();
  });

  test('Last-Event-ID resumes like since; the since parameter wins over it', async () => {
    const sel = 'lease://rs/leid/*';
    const { sessionId } = await s.openSession('leid');
    const first = await open([sel]);
    const base = first.hello.revision as number;
    await churn(s, 'lease://rs/leid/a', sessionId, 2);
    const all = await first.c.waitForCount((e) => e.event === 'change', 4);
    const byHeader = await open([sel], { lastEventId: all[1]!.id });
    await byHeader.c.waitForCount((e) => e.event === 'change', 2);
    assert.equal(byHeader.hello.resumed, true);
    assert.deepEqual(ids(changes(byHeader.c)), ids(all.slice(2)));
    const both = await open([sel], { since: base, lastEventId: all[2]!.id, at: 1 });
    await both.c.waitForCount((e) => e.event === 'change', 4);
    assert.deepEqual(ids(changes(both.c)), ids(all));
    for (const x of [first, byHeader, both]) x.c.close();
  });

  test('renewal hints and release requests are never replayed; a route outside the registrations neither', async () => {
    const sel = 'lease://rs/hints/*';
    const { sessionId } = await s.openSession('hints');
    const first = await open([sel, 'lease://rs/hints/a'], { renewals: true });
    const since = first.hello.revision as number;
    const h = await hold(s, 'lease://rs/hints/a', sessionId);
    const renew = await s.call('POST', leasePath('lease://rs/hints/a', 'renew'), { session_id: sessionId, lease_id: h.leaseId, fencing_token: h.fencing, request_id: rid() });
    assert.equal(renew.status, 200, renew.text);
    const ask = await s.call('POST', leasePath('lease://rs/hints/a', 'release-request'), { reason: 'resume test, nothing wrong', request_id: rid(), expected_fencing_token: h.fencing });
    assert.equal(ask.status, 200, ask.text);
    await hold(s, 'lease://rs/other/a', sessionId);
    await release(s, 'lease://rs/hints/a', sessionId, h);
    await first.c.waitFor((e) => e.event === 'renewed');
    await first.c.waitFor((e) => e.event === 'release_requested');
    const live = await first.c.waitForCount((e) => e.event === 'change', 4);
    const again = await open([sel, 'lease://rs/hints/a'], { since, renewals: true, at: 1 });
    await again.c.waitForCount((e) => e.event === 'change', 4);
    // Each change once per matching registration (the wildcard and the exact one), as live.
    assert.deepEqual(
      changes(again.c).map((e) => [e.id, e.data.change]),
      live.map((e) => [e.id, e.data.change]),
    );
    assert.deepEqual(afterSubscribed(again.c), ['change', 'change', 'change', 'change']);
    first.c.close();
    again.c.close();
  });

  test('a family’s replay holds only its own changes', async () => {
    const otherToken = await s.createToken(['lease://**#admin'], { family: 'rs-other', root: false });
    const other = await s.openSession('other', 15_000, otherToken);
    const mine = await s.openSession('mine');
    const sel = 'lease://rs/fam/*';
    const first = await open([sel]);
    const theirs = await open([sel], { token: otherToken });
    const since = first.hello.revision as number;
    const otherSince = theirs.hello.revision as number;
    await churn(s, 'lease://rs/fam/x', other.sessionId, 3, otherToken);
    await churn(s, 'lease://rs/fam/x', mine.sessionId, 1);
    await first.c.waitForCount((e) => e.event === 'change', 2);
    await theirs.c.waitForCount((e) => e.event === 'change', 6);
    const again = await open([sel], { since, at: 1 });
    const theirsAgain = await open([sel], { since: otherSince, token: otherToken, at: 1 });
    await again.c.waitForCount((e) => e.event === 'change', 2);
    await theirsAgain.c.waitForCount((e) => e.event === 'change', 6);
    assert.deepEqual(ids(changes(again.c)), ids(changes(first.c)));
    assert.deepEqual(ids(changes(theirsAgain.c)), ids(changes(theirs.c)));
    // Let anything stray arrive before checking nothing else came.
    await churn(s, 'lease://rs/fam/y', mine.sessionId, 1);
    await again.c.waitForCount((e) => e.event === 'change', 4);
    assert.equal(changes(theirsAgain.c).length, 6);
    for (const x of [first, theirs, again, theirsAgain]) x.c.close();
  });
});

describe('resync instead of a replay', () => {
  test('since beyond the current revision: resync epoch first, and the stream stays live', async () => {
    const sel = 'lease://rs/epoch/*';
    const { sessionId } = await s.openSession('epoch');
    const first = await open([sel]);
    const r = first.hello.revision as number;
    first.c.close();
    const again = await open([sel], { since: r + 1_000 });
    assert.equal(again.hello.resumed, false);
    const resync = await again.c.waitFor((e) => e.event === 'resync');
    assert.deepEqual(resync.data, { reason: 'epoch', revision: again.hello.revision });
    const h = await hold(s, 'lease://rs/epoch/a', sessionId);
    const [e] = await again.c.waitForCount((x) => x.event === 'change', 1);
    assert.equal(Number(e!.id), h.fencing);
    assert.deepEqual(afterSubscribed(again.c), ['resync', 'change']);
    again.c.close();
  });

  test('a Last-Event-ID that is not a revision is resync epoch, not a refusal', async () => {
    for (const bad of ['abc', '-1', '1.5', '01', '99999999999999999999']) {
      const { c, hello } = await open(['lease://rs/badid/*'], { lastEventId: bad });
      const resync = await c.waitFor((e) => e.event === 'resync');
      assert.equal(resync.data.reason, 'epoch', bad);
      assert.equal(hello.resumed, false);
      c.close();
    }
  });

  test('a malformed or repeated since is invalid_request', async () => {
    for (const q of ['since=abc', 'since=-1', 'since=1.5', 'since=', 'since=1&since=2']) {
      const err = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://rs/x/*')}&${q}`, { token: s.token }).then(
        () => assert.fail(`opened with ${q}`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof SseRefused, q);
      assert.equal(err.status, 400, q);
      assert.equal(err.body.code, 'invalid_request', q);
    }
  });

  test('since older than the horizon: resync horizon (which wins), the stream live; from the horizon on it replays', async () => {
    const sel = 'lease://rs/horizon/*';
    const { sessionId } = await small.openSession('horizon');
    const first = await open([sel], { server: small });
    const since = first.hello.revision as number;
    await churn(small, 'lease://rs/horizon/a', sessionId, 6);
    // The log keeps 5 changes: wait for the sweeper to prune below them.
    const stats = async () => (await small.app.store.atomic((tx) => tx.changes.stats())).find((x) => x.family === 'default')!;
    const deadline = Date.now() + 10_000;
    while ((await stats()).rows > 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const { horizon, rows } = await stats();
    assert.ok(rows <= 5 && horizon > since, `horizon ${horizon}, rows ${rows}`);
    const again = await open([sel], { server: small, since, at: 1 });
    assert.equal(again.hello.resumed, false);
    const resync = await again.c.waitFor((e) => e.event === 'resync');
    assert.deepEqual(resync.data, { reason: 'horizon', revision: again.hello.revision });
    // From exactly the horizon, the log is complete (nothing changed since it was read, so nothing was pruned).
    const fromHorizon = await open([sel], { server: small, since: horizon });
    assert.equal(fromHorizon.hello.resumed, true);
    const replayed = await fromHorizon.c.waitForCount((e) => e.event === 'change', rows);
    assert.deepEqual(ids(replayed), ids(changes(first.c)).slice(-rows));
    const h = await hold(small, 'lease://rs/horizon/b', sessionId);
    await again.c.waitFor((e) => e.event === 'change' && Number(e.id) === h.fencing);
    await fromHorizon.c.waitFor((e) => e.event === 'change' && Number(e.id) === h.fencing);
    assert.deepEqual(afterSubscribed(again.c), ['resync', 'change']);
    for (const x of [first, again, fromHorizon]) x.c.close();
  });

  test('more events than the replay bound: resync too_many; exactly the bound replays', async () => {
    const sel = 'lease://rs/many/*';
    const { sessionId } = await small.openSession('many');
    const first = await open([sel], { server: small });
    await churn(small, 'lease://rs/many/a', sessionId, 3);
    const six = await first.c.waitForCount((e) => e.event === 'change', 6);
    // The log keeps only 5 changes: from the first of the 6 on, exactly 5 replay.
    const five = await open([sel], { server: small, since: Number(six[0]!.id) });
    await five.c.waitForCount((e) => e.event === 'change', 5);
    assert.equal(five.hello.resumed, true);
    assert.deepEqual(ids(changes(five.c)), ids(six.slice(1)));
    // Two registrations matching every change make 10 events from the same point: too many.
    const ten = await open([sel, 'lease://rs/many/a'], { server: small, since: Number(six[0]!.id), at: 1 });
    const resync = await ten.c.waitFor((e) => e.event === 'resync');
    assert.equal(resync.data.reason, 'too_many');
    assert.deepEqual(afterSubscribed(ten.c), ['resync']);
    for (const x of [first, five, ten]) x.c.close();
  });
});

describe('resume metrics', () => {
  test('resumes, replayed events, resyncs by reason, and each family’s change-log size and horizon are exposed', async () => {
    const scrape = async () => {
      // Counters are per process: always instance A's.
      const r = await call(small.urls[0]!, 'GET', '/api/metrics', undefined, { token: small.token });
      assert.equal(r.status, 200, r.text);
      return parseExposition(r.text);
    };
    const sel = 'lease://rs/metrics/*';
    const { sessionId } = await small.openSession('metrics');
    const base = await scrape();
    const first = await open([sel], { server: small });
    const since = first.hello.revision as number;
    await churn(small, 'lease://rs/metrics/a', sessionId, 1);
    await first.c.waitForCount((e) => e.event === 'change', 2);
    const resumed = await open([sel], { server: small, since });
    await resumed.c.waitForCount((e) => e.event === 'change', 2);
    const epoch = await open([sel], { server: small, since: since + 1_000_000 });
    await epoch.c.waitFor((e) => e.event === 'resync');
    // Six more changes of this test's own put the log past its 5, whatever the tests before left:
    // let the sweep (every 20 ms; a bounded number of looks) prune it back and raise the horizon.
    await churn(small, 'lease://rs/metrics/b', sessionId, 3);
    const logStats = async () => (await small.app.store.atomic((tx) => tx.changes.stats())).find((x) => x.family === 'default')!;
    for (let i = 0; ; i++) {
      const st = await logStats();
      if (st.rows <= 5 && st.horizon > 0) break;
      assert.ok(i < 500, `the sweep never pruned the change log: ${JSON.stringify(st)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const m = await scrape();
    assert.equal(sample(m, 'leasehold_stream_resumes_total') - sample(base, 'leasehold_stream_resumes_total'), 1);
    assert.equal(sample(m, 'leasehold_replayed_events_total') - sample(base, 'leasehold_replayed_events_total'), 2);
    assert.equal(sample(m, 'leasehold_stream_resyncs_total', { reason: 'epoch' }) - sample(base, 'leasehold_stream_resyncs_total', { reason: 'epoch' }), 1);
    assert.equal(sample(m, 'leasehold_stream_resyncs_total', { reason: 'too_many' }), sample(base, 'leasehold_stream_resyncs_total', { reason: 'too_many' }));
    const stats = await logStats();
    // The log of this server keeps 5 changes: its size and horizon as the store has them
    // (nothing changes after the scrape but a sweep, which only prunes).
    assert.ok(sample(m, 'leasehold_change_log_changes', { family: 'default' }) <= 5);
    assert.ok(sample(m, 'leasehold_change_log_changes', { family: 'default' }) >= stats.rows);
    assert.ok(sample(m, 'leasehold_change_log_horizon', { family: 'default' }) <= stats.horizon);
    assert.ok(sample(m, 'leasehold_change_log_horizon', { family: 'default' }) > 0);
    for (const x of [first, resumed, epoch]) x.c.close();
  });
});
