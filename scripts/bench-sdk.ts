/**
 * `npm run bench:sdk`: the SDK's figures against the real server (a child
 * process, API only, NODE_ENV=production), docs/benchmarks.md "SDK".
 *
 * 1. Bootstrap: `observeInventory` over a selector holding N leases (5,000 by
 *    default, the console's stated load), from construction to `ready`, at
 *    page sizes 100, 500 and 1,000; five runs each, median and worst.
 * 2. Live apply: one driver acquires and releases routes as fast as it can
 *    through the SDK while an observer follows; changes applied per second by
 *    the observer, and the lag from the driver's answer to the observer's
 *    view holding the change (p50/p99).
 * 3. Memory: the observer's heap per held item (exposed gc, the view of N).
 *
 * Knobs: BENCH_SDK_LEASES (5000), BENCH_SDK_CYCLES (1500).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LeaseholdClient, type LeaseHandle, type Session } from '../lib/client';
import { ensureServerBuilt, killServers, SERVER, spawnListening, runMain } from '../server/testing/process';

const TOKEN = `lh_bench_sdk_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const N = Number(process.env.BENCH_SDK_LEASES ?? 5_000);
const CYCLES = Number(process.env.BENCH_SDK_CYCLES ?? 1_500);

setTimeout(() => {
  console.error('bench:sdk: watchdog: still running after 6 minutes, giving up');
  killServers();
  process.exit(1);
}, 6 * 60_000).unref();

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const gc = (globalThis as { gc?: () => void }).gc;

async function main(): Promise<void> {
  ensureServerBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-sdk-'));
  const server = await spawnListening('leasehold', [SERVER], { LEASEHOLD_CONSOLE: 'off', LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN }, 30_000);
  const client = new LeaseholdClient({ baseUrl: server.url, token: TOKEN });
  const sessions: Session[] = [];
  try {
    console.log(`bench:sdk: ${N} leases, Node ${process.version}, ${new Date().toISOString()}`);
    // Fill: 10 sessions of 60 s TTL, N leases of 10 min TTL, 32 in flight.
    for (let i = 0; i < 10; i++) sessions.push(await client.openSession({ ownerId: `bench-${i}`, ttlMs: 60_000 }));
    let next = 0;
    const fillStart = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let i = next++; i < N; i = next++) {
          await sessions[i % sessions.length]!.acquire(`lease://bench/fleet/r${String(i).padStart(6, '0')}`, { ttlMs: 600_000 });
        }
      }),
    );
    console.log(`fill: ${N} acquisitions through the SDK in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);

    // 1. Bootstrap.
    for (const pageSize of [100, 500, 1000]) {
      const runs: number[] = [];
      for (let r = 0; r < 5; r++) {
        const start = performance.now();
        const o = client.observeInventory('lease://bench/fleet/*', { pageSize, maxItems: N + 10 });
        await o.ready;
        runs.push(performance.now() - start);
        if (o.view.size !== N) throw new Error(`view holds ${o.view.size}, expected ${N}`);
        o.close();
      }
      runs.sort((a, b) => a - b);
      console.log(`bootstrap to ready, ${N} leases, page ${pageSize}: median ${runs[2]!.toFixed(0)} ms, worst ${runs[4]!.toFixed(0)} ms (runs ${runs.map((x) => x.toFixed(0)).join(', ')})`);
    }

    // 3. Memory per item (before the live phase churns the view).
    gc?.();
    const before = process.memoryUsage().heapUsed;
    const held = client.observeInventory('lease://bench/fleet/*', { pageSize: 1000, maxItems: N + 10 });
    await held.ready;
    gc?.();
    const after = process.memoryUsage().heapUsed;
    console.log(gc ? `memory: ${((after - before) / N).toFixed(0)} bytes of heap per observed item (${((after - before) / 2 ** 20).toFixed(1)} MiB for ${N})` : 'memory: run with --expose-gc for the heap figure');
    held.close();

    // 2. Live apply.
    const o = client.observeInventory('lease://bench/live/*');
    await o.ready;
    const waiting = new Map<string, { token: number; since: number; resolve: () => void }>();
    o.onChange((changes) => {
      for (const c of changes) {
        const w = waiting.get(c.route);
        if (w && (c.lease ? c.lease.fencing_token === w.token : w.token === -1)) {
          waiting.delete(c.route);
          w.resolve();
        }
      }
    });
    const lags: number[] = [];
    const driver = sessions[0]!;
    const liveStart = performance.now();
    for (let i = 0; i < CYCLES; i++) {
      const route = `lease://bench/live/r${i % 50}`;
      let h: LeaseHandle | undefined;
      await new Promise<void>((resolve) => {
        void driver.acquire(route, { ttlMs: 60_000 }).then((handle) => {
          h = handle;
          const since = performance.now();
          if (o.view.get(route)?.fencing_token === handle.fencingToken) {
            lags.push(0);
            resolve();
          } else waiting.set(route, { token: handle.fencingToken, since, resolve: () => (lags.push(performance.now() - since), resolve()) });
        });
      });
      await new Promise<void>((resolve) => {
        void h!.release().then(() => {
          const since = performance.now();
          if (!o.view.has(route)) {
            lags.push(0);
            resolve();
          } else waiting.set(route, { token: -1, since, resolve: () => (lags.push(performance.now() - since), resolve()) });
        });
      });
    }
    const secs = (performance.now() - liveStart) / 1000;
    lags.sort((a, b) => a - b);
    console.log(
      `live: ${2 * CYCLES} changes in ${secs.toFixed(1)} s (${((2 * CYCLES) / secs).toFixed(0)} changes/s, one driver, sequential); ` +
        `lag from the driver's answer to the observer's view: p50 ${pct(lags, 50).toFixed(2)} ms, p99 ${pct(lags, 99).toFixed(2)} ms`,
    );
    console.log(`observer stats: ${JSON.stringify(o.stats)}`);
    o.close();
  } finally {
    for (const s of sessions) await s.close().catch(() => undefined);
    server.proc.kill('SIGTERM');
    await new Promise((r) => server.proc.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runMain(main, 'bench-sdk');
