/**
 * `npm run bench:big-session`: what one huge session costs its family
 * (CONTRACT §19, docs/benchmarks.md "A huge session"), through real server
 * processes (`dist/server.mjs`, built if missing).
 *
 * For each store (SQLite, one instance; PostgreSQL, two instances on one
 * fresh database, requests alternating between them):
 * 1. Baseline: a prober runs the family's everyday requests (open a
 *    session, acquire and release another route, LIST, close) one after
 *    another for BENCH_BASELINE_S (5) seconds: p50/p99 per request.
 * 2. A session holding BENCH_BIG_LEASES (100,000) leases is written into the
 *    stopped store (server/testing/seed-session.ts), the server started
 *    again, and the session closed while the prober runs: the close's own
 *    latency, the time until its last lease has ended (LIST finds none),
 *    and the prober's p50/p99 meanwhile.
 *
 * `--sqlite` or `--postgres` runs one store only.
 */

import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { call, leasePath, rid, tempDir, type Reply } from '../server/testing/harness';
import { createTestDatabase } from '../server/testing/pg';
import { runMain, spawnServer, stopServer, type ServerProcess } from '../server/testing/process';
import { seedSession, type SeedTarget } from '../server/testing/seed-session';
import type { StoreKind } from '../lib/wire';

const LEASES = Number(process.env.BENCH_BIG_LEASES ?? 100_000);
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 5);
const TOKEN = `lh_bench_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const only = process.argv.find((a) => a === '--sqlite' || a === '--postgres')?.slice(2);

setTimeout(() => {
  console.error('bench:big-session: watchdog: still running after 20 minutes, giving up');
  process.exit(1);
}, 20 * 60_000).unref();

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/** The family's everyday requests, one after another, against `urls` in turn, until `stop()`. */
function prober(urls: string[]) {
  let stopped = false;
  let turn = 0;
  const latencies: number[] = [];
  let errors = 0;
  const ask = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const t0 = performance.now();
    const r = await call(urls[turn++ % urls.length]!, method, path, body, { token: TOKEN });
    latencies.push(performance.now() - t0);
    if (r.status >= 500) errors++;
    return r;
  };
  const running = (async () => {
    for (let i = 0; !stopped; i++) {
      const opened = await ask('POST', '/api/v1/sessions', { owner_id: 'prober', ttl_ms: 60_000 });
      if (opened.status !== 201) continue;
      const sessionId = opened.body.session.session_id as string;
      const route = `lease://bench/other/r${i % 50}`;
      const got = await ask('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      if (got.status === 200) {
        await ask('POST', leasePath(route, 'release'), { session_id: sessionId, request_id: rid(), lease_id: got.body.lease.lease_id, fencing_token: got.body.lease.fencing_token });
      }
      await ask('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://bench/other/*')}&limit=10`);
      await ask('POST', '/api/v1/sessions/close', { session_id: sessionId });
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      const sorted = [...latencies].sort((a, b) => a - b);
      return { n: sorted.length, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), errors };
    },
  };
}

async function startAll(envs: Array<Record<string, string>>): Promise<ServerProcess[]> {
  const out: ServerProcess[] = [];
  for (const env of envs) out.push(await spawnServer({ LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN, ...env }));
  return out;
}

async function stopAll(procs: ServerProcess[]): Promise<void> {
  await Promise.all(procs.map((p) => stopServer(p.proc)));
}

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

async function runStore(store: StoreKind): Promise<void> {
  const dirs = [tempDir('bench-big-a-'), tempDir('bench-big-b-')];
  const db = store === 'postgres' ? await createTestDatabase() : undefined;
  const envs = store === 'postgres'
    ? dirs.map((d) => ({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_DATABASE_URL: db!.url }))
    : [{ LEASEHOLD_DATA_DIR: dirs[0]! }];
  try {
    let procs = await startAll(envs);
    const urls = () => procs.map((p) => p.url);
    const base = prober(urls());
    await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
    const baseline = await base.stop();
    await stopAll(procs);

    const target: SeedTarget = store === 'postgres' ? { backend: 'postgres', databaseUrl: db!.url } : { backend: 'sqlite', dataDir: dirs[0]! };
    const t0 = performance.now();
    const seeded = await seedSession(target, { prefix: 'lease://bench/big/s', count: LEASES, sessionTtlMs: 600_000, leaseTtlMs: 600_000 });
    const seedMs = performance.now() - t0;
    const s0 = performance.now();
    procs = await startAll(envs);
    const startMs = performance.now() - s0;

    const during = prober(urls());
    const c0 = performance.now();
    const closed = await call(urls()[0]!, 'POST', '/api/v1/sessions/close', { session_id: seeded.sessionId }, { token: TOKEN });
    const closeMs = performance.now() - c0;
    if (closed.status !== 200) throw new Error(`close: ${closed.status} ${closed.text}`);
    for (;;) {
      const r = await call(urls()[0]!, 'GET', `/api/v1/leases?selector=${encodeURIComponent('lease://bench/big/*')}&limit=1`, undefined, { token: TOKEN });
      if (r.status === 200 && r.body.items.length === 0) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const endedMs = performance.now() - c0;
    const meanwhile = await during.stop();
    await stopAll(procs);

    const label = store === 'postgres' ? 'PostgreSQL, 2 instances' : 'SQLite, 1 instance';
    console.log(`\n${label}: a session of ${LEASES.toLocaleString('en-US')} leases (seeded in ${fmt(seedMs)}; the server started again in ${fmt(startMs)})`);
    console.log(`  close answered in ${fmt(closeMs)} (released ${closed.body.released}); its last lease ended ${fmt(endedMs)} after the close began (${(LEASES / (endedMs / 1000)).toFixed(0)} leases/s)`);
    console.log(`  the family's other requests, baseline: n=${baseline.n} p50 ${fmt(baseline.p50)} p99 ${fmt(baseline.p99)} (5xx: ${baseline.errors})`);
    console.log(`  the family's other requests, during:   n=${meanwhile.n} p50 ${fmt(meanwhile.p50)} p99 ${fmt(meanwhile.p99)} (5xx: ${meanwhile.errors})`);
  } finally {
    await db?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

runMain(async () => {
  console.log(`bench:big-session — LEASEHOLD_STEP_MAX_LEASES default (1,000), ${BASELINE_S} s baseline`);
  if (only !== 'postgres') await runStore('sqlite');
  if (only !== 'sqlite') await runStore('postgres');
}, 'bench:big-session');
