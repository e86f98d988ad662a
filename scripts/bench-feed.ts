/**
 * `npm run bench:feed`: the live feed's figures (docs/benchmarks.md).
 *
 * 1. Change-to-delivery latency through the real server (a child process,
 *    API only, NODE_ENV=production): one driver acquires and releases routes
 *    one at a time while N open streams (N = 1, then 1,000), each with one
 *    wildcard registration matching every route, receive the changes. For
 *    each `acquired` event on each stream: delivery time minus the lease's
 *    `acquired_at` (the server's clock at the change, millisecond
 *    resolution, so figures read up to 1 ms high), and delivery time minus
 *    the moment the driver sent the acquire request.
 * 2. In process: the cost of matching one change against the registration
 *    index (SubscriptionIndex, as FeedHub uses it) holding 1,000, 10,000 and
 *    100,000 registrations, half exact and half wildcard, 10 of which match
 *    the changed route; and the same through FeedHub's whole fan-out (frames
 *    to 10 streams' sinks). The largest over the smallest must stay under 2.
 *
 * Knobs: BENCH_FEED_CYCLES_1 (2000), BENCH_FEED_CYCLES_1000 (300).
 */

import { request as httpRequest, Agent } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { selectorOrThrow, routeSegments } from '../lib/selector';
import { EventHub } from '../server/engine/core/events';
import { FeedHub, type FeedFrame, type FeedSink } from '../server/engine/feed/feed';
import { SubscriptionIndex } from '../server/engine/feed/subscription-index';
import { call, leasePath, rid } from '../server/testing/harness';
import { ensureServerBuilt, killServers, SERVER, spawnListening } from '../server/testing/process';

const TOKEN = `lh_bench_feed_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const CYCLES = { 1: Number(process.env.BENCH_FEED_CYCLES_1 ?? 2_000), 1000: Number(process.env.BENCH_FEED_CYCLES_1000 ?? 300) };

setTimeout(() => {
  console.error('bench:feed: watchdog: still running after 6 minutes, giving up');
  killServers();
  process.exit(1);
}, 6 * 60_000).unref();

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const nowMs = () => performance.timeOrigin + performance.now();
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

/**
 * A lean stream reader for the benchmark: it only looks for `acquired_at`
 * in each chunk (parsing 1,000 streams' JSON would measure this process).
 */
function openReader(url: string, token: string, onAcquired: (acquiredAt: number, route: string, at: number) => void): Promise<() => void> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, path: `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://bench/**')}`, headers: { Authorization: `Bearer ${token}` }, agent },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream refused: ${res.statusCode}`));
        res.setEncoding('utf8');
        let rest = '';
        let subscribed = false;
        res.on('data', (chunk: string) => {
          const at = nowMs();
          const text = rest + chunk;
          let i = 0;
          for (;;) {
            const k = text.indexOf('"change":"acquired"', i);
            if (k < 0) break;
            const r = text.lastIndexOf('"route":"', k);
            const a = text.indexOf('"acquired_at":"', k);
            if (a < 0 || text.indexOf('"', a + 15) < 0) break; // the rest arrives in the next chunk
            const route = text.slice(r + 9, text.indexOf('"', r + 9));
            onAcquired(Date.parse(text.slice(a + 15, text.indexOf('"', a + 15))), route, at);
            i = a + 15;
          }
          if (!subscribed && text.includes('event: subscribed')) {
            subscribed = true;
            resolve(() => res.destroy());
          }
          rest = text.slice(Math.max(i, text.length - 4096));
        });
        res.on('error', () => {});
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function latency(url: string, fanout: 1 | 1000): Promise<{ commit: number[]; request: number[]; cycles: number }> {
  // 64 streams per token: spread the readers over enough read tokens.
  const tokens: string[] = [];
  for (let i = 0; i < Math.ceil(fanout / 64); i++) {
    const r = await call(url, 'POST', '/api/v1/tokens', { name: `reader-${i}`, grants: ['lease://bench/**#read'] }, { token: TOKEN });
    tokens.push(r.body.token as string);
  }
  const commit: number[] = [];
  const request: number[] = [];
  const sentAt = new Map<string, number>();
  const closers: Array<() => void> = [];
  for (let i = 0; i < fanout; i += 50) {
    closers.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, fanout - i) }, (_, j) =>
          openReader(url, tokens[Math.floor((i + j) / 64)]!, (acquiredAt, route, at) => {
            commit.push(at - acquiredAt);
            const sent = sentAt.get(route);
            if (sent !== undefined) request.push(at - sent);
          }),
        ),
      )),
    );
  }
  const session = (await call(url, 'POST', '/api/v1/sessions', { owner_id: 'bench', ttl_ms: 300_000 }, { token: TOKEN })).body.session.session_id as string;
  const cycles = CYCLES[fanout];
  const expected = () => commit.length;
  for (let i = 0; i < cycles; i++) {
    const route = `lease://bench/f${fanout}/r${i}`;
    sentAt.set(route, nowMs());
    const a = await call(url, 'POST', leasePath(route, 'acquire'), { session_id: session, request_id: rid() }, { token: TOKEN });
    if (a.status !== 200) throw new Error(`acquire: ${a.status} ${a.text}`);
    await call(url, 'POST', leasePath(route, 'release'), { session_id: session, request_id: rid(), lease_id: a.body.lease.lease_id, fencing_token: a.body.lease.fencing_token }, { token: TOKEN });
    // Wait for every stream's copy before the next change, so the figure is latency, not backlog.
    const deadline = Date.now() + 5_000;
    while (expected() < (i + 1) * fanout && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  }
  for (const c of closers) c();
  if (commit.length !== cycles * fanout) throw new Error(`expected ${cycles * fanout} deliveries, got ${commit.length}`);
  return { commit: commit.sort((x, y) => x - y), request: request.sort((x, y) => x - y), cycles };
}

// ---- in-process matching cost ---------------------------------------------------

const PROBE = 'lease://p/q/z';
/** 10 registrations matching the probe route: 5 exact (5 streams) and 5 wildcard shapes. */
const MATCHING = ['lease://p/q/z', 'lease://p/q/z', 'lease://p/q/z', 'lease://p/q/z', 'lease://p/q/z', 'lease://p/q/*', 'lease://p/*/z', 'lease://*/q/z', 'lease://p/**', 'lease://**/z'];

/** `n` registrations, half exact and half wildcard, 10 matching the probe; the others share its prefixes where they can. */
function registrations(n: number): string[] {
  const out = [...MATCHING];
  for (let i = 0; out.length < n; i++) {
    if (i % 2 === 0) out.push(i % 4 === 0 ? `lease://p/q/x${i}` : `lease://r${i % 97}/a${i}/x${i}`);
    else out.push(i % 4 === 1 ? `lease://p/a${i}/*` : i % 4 === 3 ? `lease://*/a${i}/z` : `lease://r${i % 97}/**`);
  }
  return out;
}

function median(xs: number[]): number {
  return xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

function timeIt(iterations: number, fn: () => void): number {
  for (let i = 0; i < Math.min(iterations, 10_000); i++) fn(); // warm up
  const runs: number[] = [];
  for (let r = 0; r < 7; r++) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    runs.push(((performance.now() - t0) * 1e6) / iterations);
  }
  return median(runs);
}

class NullSink implements FeedSink {
  frames = 0;
  push(_f: FeedFrame): boolean {
    this.frames++;
    return true;
  }
  heartbeat(): void {}
  end(): number {
    return 0;
  }
  onClose(): void {}
}

function matchCost(n: number): { index: number; hub: number; heapMiB: number } {
  const sels = registrations(n);
  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  const index = new SubscriptionIndex<number>();
  sels.forEach((s, i) => index.add('default', selectorOrThrow(s).triple, i));
  global.gc?.();
  const heapMiB = (process.memoryUsage().heapUsed - heap0) / 2 ** 20;
  const segs = routeSegments(PROBE);
  let matched = 0;
  const indexNs = timeIt(1_000_000, () => {
    matched = 0;
    index.match('default', segs, () => matched++);
  });
  if (matched !== 10) throw new Error(`index matched ${matched}, expected 10`);

  // The whole fan-out: FeedHub over one event, 10 matching registrations on 10 streams.
  const events = new EventHub();
  const hub = new FeedHub(events, { now: () => 0, epoch: () => 'ep', limits: { maxStreams: 1e9, streamsPerToken: 1e9, exactPerStream: 1e9, wildcardPerStream: 1e9 } });
  const sinks: NullSink[] = [];
  // Each of the 10 matching selectors on a stream of its own; the rest spread over streams of 100.
  for (let i = 0; i < sels.length; ) {
    const take = i < 10 ? 1 : 100;
    const sink = new NullSink();
    sinks.push(sink);
    hub.open({ tokenId: `tk_${i}`, family: 'default', expiresAt: null }, sels.slice(i, i + take).map((s) => selectorOrThrow(s)), false, sink, 0);
    i += take;
  }
  for (const s of sinks) s.frames = 0;
  let revision = 0;
  const change = { type: 'change' as const, family: 'default', route: PROBE, change: 'released' as const, revision: 0, fencingToken: 1 };
  const hubNs = timeIt(200_000, () => {
    change.revision = ++revision;
    events.publish(change);
  });
  const delivered = sinks.reduce((a, s) => a + s.frames, 0);
  if (delivered % 10 !== 0 || delivered === 0) throw new Error(`hub delivered ${delivered} frames, not a multiple of 10`);
  hub.dispose();
  return { index: indexNs, hub: hubNs, heapMiB };
}

async function main(): Promise<void> {
  ensureServerBuilt();
  const results: Record<string, unknown> = {};
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-feed-'));
  try {
    const server = await spawnListening('leasehold', [SERVER], { LEASEHOLD_CONSOLE: 'off', LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN }, 30_000);
    console.log('\nChange-to-delivery latency through the real server (ms)');
    console.log('fan-out | cycles | deliveries | commit→delivery p50 / p99 | request→delivery p50 / p99');
    for (const fanout of [1, 1000] as const) {
      const r = await latency(server.url, fanout);
      const row = {
        cycles: r.cycles,
        deliveries: r.commit.length,
        commit_p50: pct(r.commit, 50),
        commit_p99: pct(r.commit, 99),
        request_p50: pct(r.request, 50),
        request_p99: pct(r.request, 99),
      };
      results[`latency_fanout_${fanout}`] = row;
      const f = (x: number) => x.toFixed(2);
      console.log(`${String(fanout).padStart(7)} | ${String(r.cycles).padStart(6)} | ${String(r.commit.length).padStart(10)} | ${f(row.commit_p50)} / ${f(row.commit_p99)} | ${f(row.request_p50)} / ${f(row.request_p99)}`);
    }
    server.proc.kill('SIGTERM');
  } finally {
    killServers();
    rmSync(dataDir, { recursive: true, force: true });
  }

  console.log('\nMatching one change (in process; 10 registrations match)');
  console.log('registrations | index match ns | hub fan-out ns | index heap MiB');
  const sizes = [1_000, 10_000, 100_000];
  const costs = sizes.map((n) => ({ n, ...matchCost(n) }));
  for (const c of costs) console.log(`${String(c.n).padStart(13)} | ${c.index.toFixed(0).padStart(14)} | ${c.hub.toFixed(0).padStart(14)} | ${c.heapMiB.toFixed(1)}`);
  const ratio = costs[2]!.index / costs[0]!.index;
  const hubRatio = costs[2]!.hub / costs[0]!.hub;
  console.log(`largest / smallest: index ${ratio.toFixed(2)}, hub ${hubRatio.toFixed(2)} (target < 2)`);
  results.matching = costs;
  results.ratio = { index: ratio, hub: hubRatio };
  writeFileSync('bench-feed-results.json', `${JSON.stringify(results, null, 2)}\n`);
  if (ratio >= 2) {
    console.error('bench:feed: matching cost grows with the number of registrations');
    process.exitCode = 1;
  }
}

main().catch((e: unknown) => {
  console.error(e);
  killServers();
  process.exit(1);
});
