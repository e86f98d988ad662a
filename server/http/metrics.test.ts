/**
 * Metrics through a real server (docs/operations.md "Metrics"): a scripted
 * workload through the API, tallied by the test from the answers it got,
 * then the Prometheus text (read with a parser) and the summary's series
 * compared with the tallies. Also: who may read them, public and off modes,
 * and gauges that stay exact across a restart.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { leasePath, requestClosed, rid, startTestServer, tempDir, type Reply, type TestServer } from '../testing/harness';
import { histogramCount, parseExposition, sample, type Exposition } from '../testing/prometheus';
import { SseClient } from '../testing/sse';
import { gatedStore } from '../testing/gated-store';
import { waitFor } from '../testing/wait';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The harness's waitFor (its budget scaled under CI, its failure naming what it saw), for a yes/no condition. */
async function waitUntil(cond: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  await waitFor(what, cond, (v) => v === true, ms);
}

const REASON = 'stuck worker after node drain, ticket OPS-77';
const TTL = 300_000;
/** ~1 KiB of metadata, so each `acquired` frame is ~1.5 KB on the wire. */
const METADATA = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'x'.repeat(52)]));
/** Distinct selectors that all match `lease://slow/a/*`: each change there is one notification per registration. */
const SLOW_SELECTORS = ['lease://**', 'lease://slow/**', 'lease://*/**', 'lease://slow/*/*', 'lease://*/a/*', 'lease://*/*/*', 'lease://slow/a/*', 'lease://**/*'];

interface FamilyTally {
  acquired: number;
  queued: number;
  conflict: number;
  releases: number;
}

/** What the workload did, from the answers it received. */
const T = {
  acquire: { acquired: 0, queued: 0, conflict: 0, error: 0 },
  acquireCalls: 0,
  renew: { renewed: 0, lost: 0, error: 0 },
  renewCalls: 0,
  release: { released: 0, expired: 0, session_closed: 0, force_released: 0, revoked: 0, rolled_back: 0 },
  admin: { force_release: 0, revoke: 0 },
  cursor: { resume: 0, invalid: 0 },
  list: { examined: 0, returned: 0 },
  notifications: { default: 0, beta: 0 },
  dropped: 0,
  family: { default: { acquired: 0, queued: 0, conflict: 0, releases: 0 }, beta: { acquired: 0, queued: 0, conflict: 0, releases: 0 } } as Record<string, FamilyTally>,
};

let s: TestServer;
let gated: ReturnType<typeof gatedStore>;
let betaToken: string;

const fam = (token: string) => (token === betaToken ? 'beta' : 'default');

/** An acquire, tallied by its answer (an idempotent replay acquires nothing and is not counted). */
async function acquire(route: string, sessionId: string, extra: Record<string, unknown> = {}, opts: { token?: string; signal?: AbortSignal; requestId?: string } = {}): Promise<Reply> {
  const token = opts.token ?? s.token;
  T.acquireCalls++;
  const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: opts.requestId ?? rid(), ttl_ms: TTL, ...extra }, { token, signal: opts.signal });
  const f = T.family[fam(token)]!;
  if (r.headers['idempotent-replay'] === 'true') return r;
  if (r.status === 200 && r.body.queued === true) T.acquire.queued++, f.queued++;
  else if (r.status === 200) T.acquire.acquired++, f.acquired++;
  else if (r.body?.code === 'lease_conflict') T.acquire.conflict++, f.conflict++;
  else T.acquire.error++;
  return r;
}

async function renew(route: string, body: Record<string, unknown>): Promise<Reply> {
  T.renewCalls++;
  const r = await s.call('POST', leasePath(route, 'renew'), body);
  if (r.headers['idempotent-replay'] === 'true') return r;
  if (r.status === 200) T.renew.renewed++;
  else if (r.body?.code === 'lease_lost') T.renew.lost++;
  else T.renew.error++;
  return r;
}

function proof(r: Reply, sessionId: string) {
  return { session_id: sessionId, lease_id: r.body.lease.lease_id as string, fencing_token: r.body.lease.fencing_token as number, request_id: rid() };
}

async function scrape(token: string | null = s.token): Promise<Exposition> {
  const r = await s.call('GET', '/api/metrics', undefined, { token });
  assert.equal(r.status, 200, r.text);
  return parseExposition(r.text);
}

async function summary(token: string, windowS = 900): Promise<Record<string, Array<[number, number]>>> {
  const r = await s.call('GET', `/api/v1/metrics/summary?window_s=${windowS}`, undefined, { token });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.code, 'metrics_summary');
  assert.equal(r.body.step_s, 1);
  return r.body.series;
}

const total = (points: Array<[number, number]> | undefined) => (points ?? []).reduce((a, [, v]) => a + v, 0);
const last = (points: Array<[number, number]> | undefined) => points?.[points.length - 1]?.[1];

let reader: SseClient;

// Prometheus metrics are per process: on PostgreSQL every call goes to
// instance A and B does no sweeps (`spread: false`), so A's counters are the
// whole workload; B still shares the database and A's notifications.
before(async () => {
  s = await startTestServer({ spread: false, engine: { sweepIntervalMs: 50 }, wrapStore: (inner) => (gated = gatedStore(inner)) });
  betaToken = await s.createToken(['lease://**#admin'], { family: 'beta' });
});
after(async () => {
  reader?.close();
  await s.close();
});

describe('a scripted workload', () => {
  before(async () => {
    reader = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://wl/**')}&selector=${encodeURIComponent('lease://wl/a/x1')}`, { token: s.token });
    await reader.waitForCount((e) => e.event === 'subscribed', 2);

    const a = (await s.openSession('a', TTL)).sessionId;
    const b = (await s.openSession('b', TTL)).sessionId;
    const c = (await s.openSession('c', TTL)).sessionId;

    // Acquired, conflict, an idempotent replay, then a queued grant.
    const firstId = rid();
    const h1 = await acquire('lease://wl/a/x1', a, {}, { requestId: firstId });
    assert.equal(h1.status, 200);
    assert.equal((await acquire('lease://wl/a/x1', b)).status, 409);
    assert.equal((await acquire('lease://wl/a/x1', a, {}, { requestId: firstId })).headers['idempotent-replay'], 'true');
    const waiting = acquire('lease://wl/a/x1', b, { wait_ms: 10_000 });
    await waitUntil(async () => (await s.call('GET', leasePath('lease://wl/a/x1'))).body.lease.waiters === 1, 5_000, 'the waiter');
    assert.equal(last((await summary(s.token, 5)).waiters), 1, 'the summary sees the waiter');
    assert.equal((await s.call('POST', leasePath('lease://wl/a/x1', 'release'), proof(h1, a))).status, 200);
    T.release.released++;
    const h2 = await waiting;
    assert.equal(h2.body.queued, true);

    // A wait that times out is a conflict; an unknown session and a bad body are errors.
    assert.equal((await acquire('lease://wl/a/x1', c, { wait_ms: 200 })).status, 409);
    assert.equal((await acquire('lease://wl/a/x2', 'ss_unknown_session')).status, 404);
    assert.equal((await acquire('lease://wl/a/x2', a, { ttl_ms: 5 })).status, 400);

    // Renewals: renewed, lost, a bad body, and a replay (not counted).
    const renewBody = proof(h2, b);
    assert.equal((await renew('lease://wl/a/x1', renewBody)).status, 200);
    assert.equal((await renew('lease://wl/a/x1', renewBody)).headers['idempotent-replay'], 'true');
    assert.equal((await renew('lease://wl/a/x1', { ...proof(h2, b), lease_id: 'ls_not_it' })).status, 409);
    assert.equal((await renew('lease://wl/a/x1', { ...proof(h2, b), ttl_ms: 999 })).status, 400);

    // Expired: a 1 s lease left alone.
    const exp = await acquire('lease://wl/a/exp', a, { ttl_ms: 1_000 });
    assert.equal(exp.status, 200);

    // session_closed: a session holding two leases closes.
    assert.equal((await acquire('lease://wl/b/c1', c)).status, 200);
    assert.equal((await acquire('lease://wl/b/c2', c)).status, 200);
    assert.equal((await s.call('POST', '/api/v1/sessions/close', { session_id: c })).body.released, 2);
    T.release.session_closed += 2;

    // Operators: force-release and revoke.
    const f = await acquire('lease://wl/c/f', a);
    const fr = await s.call('POST', leasePath('lease://wl/c/f', 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: f.body.lease.fencing_token });
    assert.equal(fr.status, 200, fr.text);
    T.release.force_released++;
    T.admin.force_release++;
    const rv = await acquire('lease://wl/c/r', a);
    const rr = await s.call('POST', leasePath('lease://wl/c/r', 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: rv.body.lease.fencing_token });
    assert.equal(rr.status, 200, rr.text);
    T.release.revoked++;
    T.admin.revoke++;

    // rolled_back: the waiter's client leaves between its grant and its answer.
    const rb = await acquire('lease://wl/d/rb', a);
    const d = (await s.openSession('d', TTL)).sessionId;
    const ac = new AbortController();
    const waiterLeft = requestClosed(s.app, 'POST', leasePath('lease://wl/d/rb', 'acquire'));
    const gone = acquire('lease://wl/d/rb', d, { wait_ms: 10_000 }, { signal: ac.signal }).catch(() => 'aborted');
    await waitUntil(() => s.app.engine.parts.waiters.held('default', 'lease://wl/d/rb') === 1, 5_000, 'the waiter');
    const open = gated.hold();
    const release = s.call('POST', leasePath('lease://wl/d/rb', 'release'), proof(rb, a));
    try {
      await waitUntil(() => s.app.engine.parts.waiters.held('default', 'lease://wl/d/rb') === 0, 5_000, 'the claim');
      ac.abort();
      await waiterLeft; // the server has seen the waiting client leave
    } finally {
      open(); // a failed wait must not leave every later step of the file held
    }
    assert.equal((await release).status, 200);
    T.release.released++;
    assert.equal(await gone, 'aborted');
    T.acquire.error++; // the client left unanswered: the server counts an error
    await waitUntil(async () => (await s.call('GET', leasePath('lease://wl/d/rb'))).status === 404, 5_000, 'the rollback');
    T.release.rolled_back++;

    // LIST pages: a walk with the cursor, a tampered cursor, a cursor from another selector.
    for (const n of [1, 2, 3]) assert.equal((await acquire(`lease://wl/l/${n}`, a)).status, 200);
    let cursor: string | undefined;
    let pages = 0;
    do {
      const q = `/api/v1/leases?selector=${encodeURIComponent('lease://wl/l/*')}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const p = await s.call('GET', q);
      assert.equal(p.status, 200, p.text);
      if (cursor) T.cursor.resume++;
      T.list.returned += p.body.items.length;
      cursor = p.body.next_cursor ?? undefined;
      pages++;
      if (pages === 2) {
        const other = await s.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://wl/**')}&cursor=${encodeURIComponent(cursor!)}`);
        assert.equal(other.body.code, 'cursor_invalid');
        const tampered = await s.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://wl/l/*')}&cursor=${encodeURIComponent(`${cursor!.slice(0, -2)}xx`)}`);
        assert.equal(tampered.body.code, 'cursor_invalid');
        T.cursor.invalid += 2;
      }
    } while (cursor);
    assert.equal(pages, 3);
    // Each page reads one route past its last item (to know whether there is more): 2 + 2 + 1.
    T.list.examined += 5;

    // The 1 s lease has expired by now, or does so within the sweep's 50 ms.
    await waitUntil(async () => (await s.call('GET', leasePath('lease://wl/a/exp'))).status === 404, 5_000, 'the expiry');
    T.release.expired++;

    // Family beta: a stream that stops reading overflows; its notifications are counted, its queue dropped.
    const beta = (await s.openSession('beta-worker', TTL, betaToken)).sessionId;
    const slowPath = `/api/v1/inventory/stream?${SLOW_SELECTORS.map((x) => `selector=${encodeURIComponent(x)}`).join('&')}`;
    const slow = await SseClient.open(s.url, slowPath, { token: betaToken });
    await slow.waitForCount((e) => e.event === 'subscribed', SLOW_SELECTORS.length);
    slow.pause();
    const before = s.app.engine.feed.stats();
    let changes = 0;
    while (s.app.engine.feed.stats().overflows === before.overflows) {
      assert.ok(changes < 5_000, 'the paused stream overflows');
      const r = await acquire(`lease://slow/a/r${changes}`, beta, { metadata: METADATA }, { token: betaToken });
      assert.equal(r.status, 200, r.text);
      changes++;
    }
    T.notifications.beta = changes * SLOW_SELECTORS.length;
    T.dropped = s.app.engine.feed.stats().dropped - before.dropped;
    assert.ok(T.dropped > 0, 'the overflow discarded queued events');
    slow.close();
    assert.equal((await s.call('POST', '/api/v1/sessions/close', { session_id: beta }, { token: betaToken })).body.released, changes);
    T.release.session_closed += changes;
    T.family.beta!.releases += changes;

    // A marker change: once the reader has it, it has every earlier one.
    assert.equal((await acquire('lease://wl/z/marker', a)).status, 200);
    await reader.waitFor((e) => e.event === 'change' && e.data.route === 'lease://wl/z/marker', 5_000);
    T.notifications.default = reader.events.filter((e) => e.event === 'change' || e.event === 'renewed').length;
    T.family.default!.releases = Object.values(T.release).reduce((x, y) => x + y, 0) - T.family.beta!.releases;
    // Requests whose client left (the rolled-back acquire, the overflowed
    // stream) are counted when the server finishes them: wait for both.
    await waitFor(
      'the requests whose client left counted',
      async () => parseExposition(await s.app.metrics!.exposition()),
      (m) => histogramCount(m, 'leasehold_request_duration_seconds', { operation: 'lease_acquire' }) === T.acquireCalls && sample(m, 'leasehold_streams') === 1,
    );
  });

  test('every counter in the Prometheus text equals what the workload did', async () => {
    const m = await scrape();
    for (const [result, n] of Object.entries(T.acquire)) assert.equal(sample(m, 'leasehold_acquire_total', { result }), n, `acquire ${result}`);
    for (const [result, n] of Object.entries(T.renew)) assert.equal(sample(m, 'leasehold_renew_total', { result }), n, `renew ${result}`);
    for (const [kind, n] of Object.entries(T.release)) assert.equal(sample(m, 'leasehold_release_total', { kind }), n, `release ${kind}`);
    for (const [action, n] of Object.entries(T.admin)) assert.equal(sample(m, 'leasehold_admin_actions_total', { action }), n, `admin ${action}`);
    for (const [result, n] of Object.entries(T.cursor)) assert.equal(sample(m, 'leasehold_cursor_total', { result }), n, `cursor ${result}`);
    assert.equal(sample(m, 'leasehold_list_returned_total'), T.list.returned);
    assert.equal(sample(m, 'leasehold_list_examined_total'), T.list.examined);
    assert.equal(sample(m, 'leasehold_notifications_total'), T.notifications.default + T.notifications.beta);
    assert.equal(sample(m, 'leasehold_notifications_dropped_total'), T.dropped);
    assert.equal(sample(m, 'leasehold_stream_overflows_total'), 1);
  });

  test('the latency histogram counted every request of each operation', async () => {
    const m = await scrape();
    assert.equal(histogramCount(m, 'leasehold_request_duration_seconds', { operation: 'lease_acquire' }), T.acquireCalls);
    assert.equal(histogramCount(m, 'leasehold_request_duration_seconds', { operation: 'lease_renew' }), T.renewCalls);
    assert.equal(histogramCount(m, 'leasehold_request_duration_seconds', { operation: 'lease_force_release' }), 1);
    assert.equal(histogramCount(m, 'leasehold_request_duration_seconds', { operation: 'lease_revoke' }), 1);
    for (const family of Object.values(m)) {
      for (const d of family.data) {
        for (const [k, v] of Object.entries(d.labels)) {
          assert.ok(!String(v).includes('lease://') && !String(v).includes('/api/'), `no route or path as a label value (${k}=${v})`);
        }
      }
    }
  });

  test('gauges: held leases, live sessions, streams and registrations, as the API lists them', async () => {
    const m = await scrape();
    const held = (await s.call('GET', '/api/v1/leases?selector=lease://**&limit=1000')).body.items.length + (await s.call('GET', '/api/v1/leases?selector=lease://**&limit=1000', undefined, { token: betaToken })).body.items.length;
    const sessions = (await s.call('GET', '/api/v1/sessions?limit=1000')).body.items.length + (await s.call('GET', '/api/v1/sessions?limit=1000', undefined, { token: betaToken })).body.items.length;
    assert.ok(held > 0);
    assert.equal(sample(m, 'leasehold_active_leases'), held);
    assert.equal(sample(m, 'leasehold_active_sessions'), sessions);
    assert.equal(sample(m, 'leasehold_waiters'), 0);
    assert.equal(sample(m, 'leasehold_streams'), 1, 'the reader (the overflowed stream is gone)');
    assert.equal(sample(m, 'leasehold_subscriptions', { kind: 'wildcard' }), 1);
    assert.equal(sample(m, 'leasehold_subscriptions', { kind: 'exact' }), 1);
  });

  test('the summary’s series agree with the counters, family by family', async () => {
    const m = await scrape();
    const a = await summary(s.token);
    const b = await summary(betaToken);
    const d = T.family.default!;
    const e = T.family.beta!;
    assert.equal(total(a.acquisitions_per_s), d.acquired + d.queued);
    assert.equal(total(b.acquisitions_per_s), e.acquired + e.queued);
    assert.equal(total(a.acquisitions_per_s) + total(b.acquisitions_per_s), sample(m, 'leasehold_acquire_total', { result: 'acquired' }) + sample(m, 'leasehold_acquire_total', { result: 'queued' }));
    assert.equal(total(a.conflicts_per_s), d.conflict);
    assert.equal(total(a.conflicts_per_s) + total(b.conflicts_per_s), sample(m, 'leasehold_acquire_total', { result: 'conflict' }));
    assert.equal(total(a.releases_per_s), d.releases);
    assert.equal(total(b.releases_per_s), e.releases);
    assert.equal(total(a.notifications_per_s), T.notifications.default);
    assert.equal(total(b.notifications_per_s), T.notifications.beta);
    assert.equal(total(a.notifications_dropped_per_s), 0);
    assert.equal(total(b.notifications_dropped_per_s), T.dropped);
    assert.equal(last(a.active_leases)! + last(b.active_leases)!, sample(m, 'leasehold_active_leases'));
    assert.equal(last(b.active_leases), 0);
    assert.equal(last(a.active_sessions)! + last(b.active_sessions)!, sample(m, 'leasehold_active_sessions'));
    assert.equal(last(a.waiters), 0);
    // One point a second, in order, within the window.
    const now = Date.now();
    for (const points of Object.values(a)) {
      for (let i = 1; i < points.length; i++) assert.ok(points[i]![0] > points[i - 1]![0]);
      for (const [t] of points) assert.ok(t % 1000 === 0 && t > now - 901_000 && t <= now);
    }
    const p50 = a['latency_p50_ms.lease_acquire'];
    const p99 = a['latency_p99_ms.lease_acquire'];
    assert.ok(p50 && p99 && p50.length > 0 && p50.length === p99.length, 'acquire latency has points');
    p50.forEach(([t, v], i) => {
      assert.equal(p99[i]![0], t);
      assert.ok(v > 0 && v <= p99[i]![1]);
    });
  });

  test('the summary is family-scoped: a workload in one family does not show in another’s', async () => {
    const a0 = await summary(s.token);
    const b0 = await summary(betaToken);
    const beta = (await s.openSession('beta-2', TTL, betaToken)).sessionId;
    for (const n of [1, 2, 3]) assert.equal((await acquire(`lease://scoped/b/${n}`, beta, {}, { token: betaToken })).status, 200);
    const a1 = await summary(s.token);
    const b1 = await summary(betaToken);
    assert.equal(total(a1.acquisitions_per_s), total(a0.acquisitions_per_s));
    assert.equal(last(a1.active_leases), last(a0.active_leases));
    assert.equal(last(a1.active_sessions), last(a0.active_sessions));
    assert.equal(total(b1.acquisitions_per_s), total(b0.acquisitions_per_s) + 3);
    assert.equal(last(b1.active_leases), last(b0.active_leases)! + 3);
    assert.equal(last(b1.active_sessions), last(b0.active_sessions)! + 1);
  });
});

describe('who may read the metrics', () => {
  test('GET /api/metrics: 401 without a token, 403 for a token that is not root (audited), 200 for root', async () => {
    const none = await s.call('GET', '/api/metrics', undefined, { token: null });
    assert.deepEqual([none.status, none.body.code], [401, 'invalid_credential']);
    const admin = await s.createToken(['lease://**#admin']);
    const denied = await s.call('GET', '/api/metrics', undefined, { token: admin });
    assert.deepEqual([denied.status, denied.body.code], [403, 'access_denied']);
    const beta = await s.call('GET', '/api/metrics', undefined, { token: betaToken });
    assert.equal(beta.status, 403);
    const audit = await s.call('GET', '/api/v1/audit?event_type=access_denied');
    assert.ok(audit.body.items.length >= 1, 'the refusal is audited');
    const root = await s.call('GET', '/api/metrics');
    assert.equal(root.status, 200);
    assert.match(String(root.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(String(root.headers['x-correlation-id']), /^c_/);
    const head = await s.call('HEAD', '/api/metrics');
    assert.deepEqual([head.status, head.text], [200, '']);
    const post = await s.call('POST', '/api/metrics', {});
    assert.deepEqual([post.status, post.headers.allow], [405, 'GET, HEAD']);
  });

  test('GET /api/v1/metrics/summary needs read on lease://** (embed tokens never)', async () => {
    assert.equal((await s.call('GET', '/api/v1/metrics/summary', undefined, { token: null })).status, 401);
    const narrow = await s.createToken(['lease://wl/**#read']);
    const denied = await s.call('GET', '/api/v1/metrics/summary', undefined, { token: narrow });
    assert.deepEqual([denied.status, denied.body.code], [403, 'access_denied']);
    const reader = await s.createToken(['lease://**#read']);
    const ok = await s.call('GET', '/api/v1/metrics/summary?window_s=60', undefined, { token: reader });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.window_s, 60);
    const embed = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://**' });
    assert.equal(embed.status, 201);
    assert.equal((await s.call('GET', '/api/v1/metrics/summary', undefined, { token: embed.body.token })).status, 403);
  });

  test('with LEASEHOLD_METRICS_PUBLIC the exposition needs no token (the summary still does)', async () => {
    const p = await startTestServer({ spread: false, metrics: { public: true } });
    try {
      const r = await p.call('GET', '/api/metrics', undefined, { token: null });
      assert.equal(r.status, 200);
      assert.equal(sample(await parseExposition(r.text), 'leasehold_active_leases'), 0);
      assert.equal((await p.call('GET', '/api/v1/metrics/summary', undefined, { token: null })).status, 401);
    } finally {
      await p.close();
    }
  });

  test('with LEASEHOLD_METRICS=off both paths are unknown (404) and nothing subscribes to the engine', async () => {
    const off = await startTestServer({ spread: false, metrics: { enabled: false } });
    const on = await startTestServer({ spread: false });
    try {
      for (const path of ['/api/metrics', '/api/v1/metrics/summary']) {
        const r = await off.call('GET', path, undefined, { token: null });
        assert.deepEqual([r.status, r.body.code], [404, 'not_found'], path);
      }
      assert.equal(off.app.metrics, undefined);
      const listeners = (x: TestServer) => (x.app.engine.parts.events as unknown as { listeners: Set<unknown> }).listeners.size;
      assert.equal(listeners(on), listeners(off) + 1, 'metrics add exactly one subscriber, and only when on');
    } finally {
      await off.close();
      await on.close();
    }
  });
});

test('active leases and sessions are exact across a restart (expiry during the downtime included)', async () => {
  const dataDir = tempDir();
  let x = await startTestServer({ spread: false, dataDir });
  const token = x.token;
  try {
    const w = (await x.openSession('w', TTL)).sessionId;
    await x.openSession('idle', TTL);
    for (const n of [1, 2, 3]) assert.equal((await x.call('POST', leasePath(`lease://restart/a/${n}`, 'acquire'), { session_id: w, request_id: rid(), ttl_ms: TTL })).status, 200);
    assert.equal((await x.call('POST', leasePath('lease://restart/a/short', 'acquire'), { session_id: w, request_id: rid(), ttl_ms: 1_000 })).status, 200);
    const before = await parseExposition((await x.call('GET', '/api/metrics')).text);
    assert.equal(sample(before, 'leasehold_active_leases'), 4);
    assert.equal(sample(before, 'leasehold_active_sessions'), 2);
    await x.close();
    await sleep(1_100); // timing is the subject: the short lease's 1 s TTL runs out while the server is down
    x = await startTestServer({ spread: false, dataDir, engine: { bootstrapSecret: token } });
    const afterRestart = await parseExposition((await x.call('GET', '/api/metrics')).text);
    assert.equal(sample(afterRestart, 'leasehold_active_leases'), 3, 'the short lease expired while the server was down');
    assert.equal(sample(afterRestart, 'leasehold_active_sessions'), 2);
    assert.equal((await x.call('POST', '/api/v1/sessions/close', { session_id: w })).body.released, 3);
    const closed = await parseExposition((await x.call('GET', '/api/metrics')).text);
    assert.equal(sample(closed, 'leasehold_active_leases'), 0);
    assert.equal(sample(closed, 'leasehold_active_sessions'), 1);
    assert.equal(sample(closed, 'leasehold_release_total', { kind: 'session_closed' }), 3);
  } finally {
    await x.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
