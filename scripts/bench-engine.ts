/**
 * `npm run bench:engine`: the engine and the SQLite store alone (no HTTP):
 * acquire → release cycles from 64 concurrent workers, with the CPU time one
 * cycle costs. Separates store and engine cost from HTTP cost when tuning.
 * BENCH_STORE=postgres: the PostgreSQL store instead (a fresh database on
 * the local server), with its batches' size and round trips.
 */
import { systemClock } from '../server/store/millis';
import { engineFixture, proofOf } from '../server/testing/engine-fixture';

const WORKERS = 64;
const CYCLES = Number(process.env.BENCH_CYCLES ?? 300);

const backend = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite';
const f = await engineFixture({ backend });
f.clock.now = systemClock;
const sessions = await Promise.all(Array.from({ length: WORKERS }, (_, i) => f.open(`w${i}`, 300_000)));

async function worker(i: number, n: number): Promise<void> {
  for (let k = 0; k < n; k++) {
    const route = `lease://bench/w${i}/r${k % 8}`;
    const a = await f.acquire(route, sessions[i]!);
    await f.engine.leases.release(f.admin, route, proofOf(sessions[i]!, a.answer.lease));
  }
}

await Promise.all(sessions.map((_, i) => worker(i, 50)));
const t0 = performance.now();
const c0 = process.cpuUsage();
await Promise.all(sessions.map((_, i) => worker(i, CYCLES)));
const ms = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const cycles = WORKERS * CYCLES;
console.log(`engine only (${backend}), ${WORKERS} workers: ${Math.round((cycles / ms) * 1000)} cycles/s, ${((cpu.user + cpu.system) / cycles).toFixed(1)} µs CPU per cycle`);
const batches = (f.engine.parts.store as { batchStats?: { batches: number; steps: number; roundTrips: number } }).batchStats;
if (batches) console.log(`postgres batches: ${batches.batches}, ${(batches.steps / batches.batches).toFixed(1)} steps and ${(batches.roundTrips / batches.batches).toFixed(2)} round trips each`);
await f.close();
