/**
 * `npm run bench:list`: LIST cost with many held leases, through the real
 * HTTP API of a real server process (`dist/server.mjs`, built if missing).
 *
 * 1. Seeds BENCH_LIST_LEASES (100,000) held leases with BENCH_SEED_WORKERS
 *    (64) concurrent acquire loops over HTTP (undici, a keep-alive connection
 *    per worker; each worker has its own session, kept alive, as in a
 *    fleet), and prints the seeding rate and the server's CPU per acquire.
 * 2. Sequential LISTs (one client, one request at a time, limit=100), each
 *    case BENCH_LIST_N (300) times after 20 unmeasured ones: an exact route
 *    (a point read), a prefix first page (`lease://acme/area-N/*`, 960
 *    matches), a sparse selector (realm wildcard, area and resource literal:
 *    the resource index holds 120 rows for it, 3 of which match), the
 *    resource wildcard's first page (120 matches across the realms), and an
 *    exact selector of a route nobody holds. For each: p50/p99 latency and
 *    the server's CPU per LIST (from /proc, over all the case's requests).
 *
 * Store: SQLite (a fresh data directory) by default; `--postgres` (or
 * BENCH_POSTGRES=<admin URL>) runs the server on a fresh PostgreSQL database
 * (127.0.0.1:5432 as postgres by default), dropped afterwards.
 * On PostgreSQL it then prints `EXPLAIN (ANALYZE)` of the statements a LIST
 * runs (due work of the family, a point read, each case's first chunk as the
 * shared planner renders it), against the seeded database.
 * `--cpu-prof=<dir>` runs the server under `node --cpu-prof` and prints its
 * top functions by self time over the whole run (seeding and LISTs).
 */

import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { closePools, sendJson, type BenchAnswer } from './bench-http';
import pg from 'pg';
import { parseSelector } from '../lib/selector';
import { postgres } from '../server/store/plan/dialect';
import { dueFamiliesSql, dueSql } from '../server/store/plan/expiry';
import { planLeaseScan, renderLeaseChunk } from '../server/store/plan/lease-scan';
import { millis } from '../server/store/millis';
import { createTestDatabase, type TestDatabase } from '../server/testing/pg';
import { spawnListening } from '../server/testing/process';
import { cpuMs } from '../server/testing/proc-cpu';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = process.env.BENCH_SERVER ?? join(ROOT, 'dist', 'server.mjs');
const LEASES = Number(process.env.BENCH_LIST_LEASES ?? 100_000);
const SEED_WORKERS = Number(process.env.BENCH_SEED_WORKERS ?? 64);
const N = Number(process.env.BENCH_LIST_N ?? 300);
const arg = (name: string) => process.argv.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
const POSTGRES = arg('postgres') ? 'postgres://postgres@127.0.0.1:5432/postgres' : process.env.BENCH_POSTGRES;
const CPU_PROF = arg('cpu-prof')?.split('=')[1];
const TOKEN = `lh_bench_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;

// The run must stop by itself, whatever happens.
setTimeout(() => {
  console.error('bench:list: watchdog: still running after 15 minutes, giving up');
  process.exit(1);
}, 15 * 60_000).unref();

let server: ChildProcess | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-list-'));
function cleanup(): void {
  if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    cleanup();
    process.exit(130);
  });
}

/** CPU seconds (user + system) the server process has used so far. */
function serverCpu(): number {
  return cpuMs(server!.pid) / 1000;
}

let baseUrl: string;
function send(method: string, path: string, body?: unknown): Promise<BenchAnswer> {
  return sendJson(baseUrl, TOKEN, method, path, body);
}

function leasePath(route: string, action: string): string {
  return `/api/v1/leases/${route.slice('lease://'.length).split('/').map(encodeURIComponent).join('/')}/${action}`;
}

/** acme: 100 areas × 960 resources; globex and initech: 10 areas × 200 each (100,000 in all; smaller totals scale acme down). */
function seedRoutes(total: number): string[] {
  const others: string[] = [];
  for (const realm of ['globex', 'initech']) for (let a = 0; a < 10; a++) for (let r = 0; r < 200; r++) others.push(`lease://${realm}/area-${a}/res-${r}`);
  const perArea = Math.max(200, Math.floor((total - others.length) / 100));
  const acme: string[] = [];
  for (let a = 0; a < 100; a++) for (let r = 0; r < perArea; r++) acme.push(`lease://acme/area-${a}/res-${r}`);
  return [...acme, ...others];
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface Case {
  name: string;
  selector: string;
  p50_ms: number;
  p99_ms: number;
  items: string;
  cpu_us_per_list: number;
}

async function listCase(name: string, shown: string, selectorOf: (i: number) => string): Promise<Case> {
  const one = async (i: number) => {
    const t0 = performance.now();
    const r = await send('GET', `/api/v1/leases?${new URLSearchParams({ selector: selectorOf(i), limit: '100' })}`);
    if (r.status !== 200) throw new Error(`list ${selectorOf(i)}: ${r.status} ${JSON.stringify(r.body)}`);
    return { ms: performance.now() - t0, items: (r.body.items as unknown[]).length };
  };
  for (let i = 0; i < 20; i++) await one(i);
  const c0 = serverCpu();
  const samples: Array<{ ms: number; items: number }> = [];
  for (let i = 0; i < N; i++) samples.push(await one(i));
  const cpu = serverCpu() - c0;
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const counts = samples.map((s) => s.items);
  const lo = Math.min(...counts);
  const hi = Math.max(...counts);
  return { name, selector: shown, p50_ms: pct(ms, 50), p99_ms: pct(ms, 99), items: lo === hi ? String(lo) : `${lo}–${hi}`, cpu_us_per_list: Math.round((cpu / N) * 1e6) };
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(cells[0]!), w.map((n) => '-'.repeat(n)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** Top functions by self time (share of busy samples) in the newest profile of `dir`. */
function profileTop(dir: string, n = 25): string[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const newest = files.map((f) => join(dir, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!newest) return [];
  const prof = JSON.parse(readFileSync(newest, 'utf8')) as { nodes: Array<{ hitCount?: number; callFrame: { functionName: string; url: string; lineNumber: number } }> };
  const self = new Map<string, number>();
  let total = 0;
  for (const node of prof.nodes) {
    const hits = node.hitCount ?? 0;
    if (!hits || node.callFrame.functionName === '(idle)') continue;
    const cf = node.callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '')}:${cf.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + hits);
    total += hits;
  }
  return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([fn, h]) => `${((h / total) * 100).toFixed(1).padStart(5)} %  ${fn}`);
}

/** The plans PostgreSQL picks for the statements of a LIST, over the seeded tables. */
async function explain(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('ANALYZE');
    const now = Date.now();
    const show = async (name: string, sql: string, params: unknown[]) => {
      const r = await c.query(`EXPLAIN (ANALYZE, COSTS OFF) ${sql}`, params);
      console.log(`\n-- ${name}\n${r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n')}`);
    };
    await show('due leases of the family (before every LIST)', dueSql(postgres, 'leases', true), [now, 'default', 512]);
    await show('due sessions of the family', dueSql(postgres, 'sessions', true), [now, 'default', 512]);
    await show('families with due work (the sweep)', dueFamiliesSql(postgres), [now, now, 64]);
    await show('exact selector: point read', 'SELECT * FROM leases WHERE family = $1 AND route = $2', ['default', 'lease://acme/area-3/res-5']);
    for (const text of ['lease://acme/area-7/*', 'lease://*/area-1/res-9', 'lease://*/*/res-42', 'lease://acme/*/res-42']) {
      const sel = parseSelector(text);
      if (!sel.ok) throw new Error(text);
      const scan = { family: 'default', triple: sel.value.triple, after: null, want: 101, budget: 10_000, now: millis(now) };
      const plan = planLeaseScan(scan);
      const q = renderLeaseChunk(postgres, plan, 'default', plan.from, 101);
      await show(`${text}: first chunk (${plan.index})`, q.sql, q.params);
    }
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  if (!existsSync(SERVER)) {
    const r = spawnSync('npm', ['run', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build:server failed');
  }
  let db: TestDatabase | undefined;
  if (POSTGRES) {
    process.env.LEASEHOLD_TEST_DATABASE_URL = POSTGRES;
    db = await createTestDatabase();
  }
  const args = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, SERVER] : [SERVER];
  const started = await spawnListening('leasehold', args, {
    LEASEHOLD_CONSOLE: 'off',
    LEASEHOLD_DATA_DIR: dataDir,
    LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN,
    ...(db ? { LEASEHOLD_DATABASE_URL: db.url } : {}),
  }, 30_000);
  server = started.proc;
  baseUrl = started.url;
  const store = db ? 'PostgreSQL' : 'SQLite';
  try {
    // One session per seeding worker, as each worker of a fleet has its own.
    const sessions = await Promise.all(
      Array.from({ length: SEED_WORKERS }, async (_, w) => {
        const r = await send('POST', '/api/v1/sessions', { owner_id: `seed-${w}`, ttl_ms: 300_000 });
        if (r.status !== 201) throw new Error(`open session: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body.session.session_id as string;
      }),
    );
    const keepalive = setInterval(() => {
      for (const session_id of sessions) void send('POST', '/api/v1/sessions/keepalive', { session_id }).catch(() => {});
    }, 30_000);
    try {
      const routes = seedRoutes(LEASES);
      let next = 0;
      let failed = 0;
      let retried = 0;
      const codes: Record<string, number> = {};
      const c0 = serverCpu();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: SEED_WORKERS }, async (_, w) => {
          while (next < routes.length) {
            const i = next++;
            // A retryable refusal (a step past its deadline under load) is retried with the same request id, as a client would.
            for (let attempt = 0; ; attempt++) {
              const r = await send('POST', leasePath(routes[i]!, 'acquire'), { session_id: sessions[w], request_id: `seed-${i}`, ttl_ms: 600_000 });
              if (r.status === 200) break;
              const code = `${r.status} ${r.body?.code ?? ''}`;
              codes[code] = (codes[code] ?? 0) + 1;
              if (r.body?.retryable !== true || attempt >= 5) {
                failed++;
                break;
              }
              retried++;
            }
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      const cpu = serverCpu() - c0;
      if (failed) throw new Error(`seeding: ${failed} acquires failed (${JSON.stringify(codes)})`);
      console.log(
        `${store}: seeded ${routes.length} held leases over HTTP in ${seconds.toFixed(1)} s with ${SEED_WORKERS} concurrent workers: ` +
          `${Math.round(routes.length / seconds)} acquisitions/s, server CPU ${Math.round((cpu / routes.length) * 1e6)} µs per acquire` +
          (retried ? ` (${retried} retried: ${JSON.stringify(codes)})` : ''),
      );

      const cases: Case[] = [];
      cases.push(await listCase('exact route (held)', 'lease://acme/area-N/res-M', (i) => `lease://acme/area-${(3 + i * 11) % 100}/res-${(5 + i * 17) % 200}`));
      cases.push(await listCase('exact route (free)', 'lease://acme/area-N/none-M', (i) => `lease://acme/area-${(3 + i * 11) % 100}/none-${i}`));
      cases.push(await listCase('prefix, first page of 100', 'lease://acme/area-N/*', (i) => `lease://acme/area-${(7 + i * 13) % 100}/*`));
      cases.push(await listCase('sparse: area index, first page', 'lease://*/area-N/res-M', (i) => `lease://*/area-${(1 + i * 7) % 10}/res-${(9 + i * 3) % 200}`));
      cases.push(await listCase('sparse: resource index, first page', 'lease://*/*/res-N', (i) => `lease://*/*/res-${(42 + i * 7) % 200}`));
      console.log(`\n${store}, ${routes.length} held leases: LIST, limit=100, one client, sequential, ${N} requests a case\n`);
      console.log(table(['case', 'selector', 'items', 'p50 ms', 'p99 ms', 'server CPU µs/LIST'], cases.map((c) => [c.name, c.selector, c.items, c.p50_ms.toFixed(2), c.p99_ms.toFixed(2), c.cpu_us_per_list])));
      if (db) await explain(db.url);
    } finally {
      clearInterval(keepalive);
    }
  } finally {
    await closePools();
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    const t = setTimeout(() => server!.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
    await db?.drop();
  }
  if (CPU_PROF) {
    console.log(`\nserver CPU profile (whole run), top functions by self time:\n`);
    for (const l of profileTop(CPU_PROF)) console.log(l);
  }
}

await main();
