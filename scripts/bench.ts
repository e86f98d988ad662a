/**
 * `npm run bench`: Leasehold against a bare Node HTTP server (the floor), on
 * loopback, in one run. Method and figures: docs/benchmarks.md.
 *
 * 1. acquire → release cycles at 1, 16 and 64 concurrent workers, each worker
 *    with its own session and its own small set of routes, against the floor
 *    (scripts/bench-floor.ts) and Leasehold (synchronous=NORMAL) side by side;
 *    then Leasehold with LEASEHOLD_SYNC=full (a separate server) at 1 and 64.
 * 2. LIST page latency with 100,000 held leases: an exact-prefix selector, a
 *    walk of `lease://acme/**` with the cursor, and a resource selector.
 *
 * Every server is a child process (API only, NODE_ENV=production, fresh temp
 * data dir); the load generator is this process: undici (a keep-alive
 * connection per worker), whose CPU per request is about a third of
 * node:http's, so the floor row measures the floor and not this client (its
 * CPU is printed beside the server's: a client near one core is the limit).
 * Prints tables, writes the raw figures to bench-results.json. Knobs (for
 * quick trials only; the documented figures use the defaults):
 * BENCH_DURATION_S (5), BENCH_WARMUP_S (1), BENCH_LIST_LEASES (100000).
 * BENCH_CPU_PROF=<dir> runs the synchronous=NORMAL server under `node
 * --cpu-prof` and prints its top functions by self time afterwards.
 *
 * 3. PostgreSQL (the local server at 127.0.0.1:5432 as postgres when it
 *    answers, or BENCH_POSTGRES=<postgres:// URL of a server, any database>;
 *    BENCH_POSTGRES=0 skips it): the same cycles on the PostgreSQL store at 1
 *    and 64 workers, one and two instances (workers split between them), the
 *    workers in one family or spread over four, each on a fresh database
 *    dropped afterwards, beside one SQLite instance measured before and after
 *    them (the ratios). BENCH_ONLY=postgres runs only this section;
 *    BENCH_PG_CASES=2x1,2x4 only those rows (instances x families),
 *    BENCH_PG_LEVELS=64 only that many workers.
 */

import { spawnSync, type ChildProcess } from 'node:child_process';
import { spawnListening, runMain } from '../server/testing/process';
import { createTestDatabase, type TestDatabase } from '../server/testing/pg';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { closePools, sendJson, type BenchAnswer } from './bench-http';
import { connect } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { cpuMs } from '../server/testing/proc-cpu';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** BENCH_SERVER=<path to a built server.mjs> measures another build (A/B runs). */
const SERVER = process.env.BENCH_SERVER ?? join(ROOT, 'dist', 'server.mjs');
const DURATION_MS = Number(process.env.BENCH_DURATION_S ?? 5) * 1000;
const WARMUP_MS = Number(process.env.BENCH_WARMUP_S ?? 1) * 1000;
const LIST_LEASES = Number(process.env.BENCH_LIST_LEASES ?? 100_000);
const LEVELS = [1, 16, 64];
const ROUTES_PER_WORKER = 8;
const TOKEN = `lh_bench_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const CPU_PROF = process.env.BENCH_CPU_PROF;
const POSTGRES = postgresUrl();
const ONLY_POSTGRES = process.env.BENCH_ONLY === 'postgres';
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

// ---- child processes ----------------------------------------------------------

interface Child {
  name: string;
  proc: ChildProcess;
  url: string;
  host: string;
  port: number;
  dataDir?: string;
}

const live = new Set<ChildProcess>();
const tempDirs: string[] = [];

function killAll(): void {
  for (const p of live) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    killAll();
    process.exit(130);
  });
}
// The run must stop by itself, whatever happens.
setTimeout(() => {
  console.error('bench: watchdog: still running after 8 minutes, giving up');
  process.exit(1);
}, 8 * 60_000).unref();

async function startChild(name: string, args: string[], env: Record<string, string>): Promise<Child> {
  const started = await spawnListening(name, args, env, 30_000);
  live.add(started.proc);
  const u = new URL(started.url);
  return { name, proc: started.proc, url: started.url, host: u.hostname, port: Number(u.port) };
}

async function startLeasehold(sync: 'normal' | 'full', profile = false): Promise<Child> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-'));
  tempDirs.push(dataDir);
  const args = profile && CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, SERVER] : [SERVER];
  const c = await startChild(`leasehold (sync=${sync})`, args, {
    LEASEHOLD_CONSOLE: 'off',
    LEASEHOLD_DATA_DIR: dataDir,
    LEASEHOLD_SYNC: sync,
    LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN,
  });
  return { ...c, dataDir };
}

async function startPostgresInstance(name: string, url: string): Promise<Child> {
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-pg-'));
  tempDirs.push(dataDir);
  // BENCH_PG_CPU_PROF=<dir>: each PostgreSQL instance runs under `node --cpu-prof` (profiles written there at exit).
  const prof = process.env.BENCH_PG_CPU_PROF;
  const args = prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`, SERVER] : [SERVER];
  const c = await startChild(name, args, { LEASEHOLD_CONSOLE: 'off', LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_DATABASE_URL: url, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN });
  return { ...c, dataDir };
}

function startFloor(): Promise<Child> {
  return startChild('floor', ['--import', 'tsx', join(ROOT, 'scripts', 'bench-floor.ts')], {});
}

async function stopChild(c: Child): Promise<void> {
  const p = c.proc;
  if (p.exitCode === null && p.signalCode === null) {
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
  live.delete(p);
  if (c.dataDir) rmSync(c.dataDir, { recursive: true, force: true });
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid: number | undefined): number {
  return cpuMs(pid) / 1000;
}

/** Busy share of all cores over `ms` (from /proc/stat): other load on the machine skews every figure. */
async function machineBusy(ms: number): Promise<number> {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3]! + f[4]!;
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  try {
    const a = read();
    await sleep(ms);
    const b = read();
    return 1 - (b.idle - a.idle) / (b.total - a.total);
  } catch {
    return NaN;
  }
}

// ---- HTTP client --------------------------------------------------------------

type Res = BenchAnswer;

function send(t: Child, method: string, path: string, body?: unknown, token = TOKEN): Promise<Res> {
  return sendJson(t.url, token, method, path, body);
}

function leasePath(route: string, action?: string): string {
  const p = `/api/v1/leases/${route.slice('lease://'.length).split('/').map(encodeURIComponent).join('/')}`;
  return action ? `${p}/${action}` : p;
}

async function openSession(t: Child, owner: string, token = TOKEN): Promise<string> {
  const r = await send(t, 'POST', '/api/v1/sessions', { owner_id: owner, ttl_ms: 300_000 }, token);
  if (r.status !== 201) throw new Error(`${t.name}: open session: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.session.session_id as string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function summary(samples: number[]): { n: number; p50_ms: number; p99_ms: number; max_ms: number } {
  const s = [...samples].sort((a, b) => a - b);
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return { n: s.length, p50_ms: r3(pct(s, 50)), p99_ms: r3(pct(s, 99)), max_ms: r3(s[s.length - 1] ?? NaN) };
}

/**
 * CPU seconds of every local `postgres` process so far, by pid (empty when
 * the database is not on this machine). Backends of the instances' pools
 * live through a measured window; one that exits inside it is left out.
 */
function postgresCpu(): Map<number, number> {
  const by = new Map<number, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return by;
  }
  for (const d of pids) {
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    const s = cpuSeconds(Number(d));
    if (Number.isFinite(s)) by.set(Number(d), s);
  }
  return by;
}

/** CPU seconds the `postgres` processes used between two snapshots (a process new in the second counts whole). */
function postgresCpuBetween(a: Map<number, number>, b: Map<number, number>): number {
  let sum = 0;
  for (const [pid, s] of b) sum += s - (a.get(pid) ?? 0);
  return sum;
}

/** Busy and total CPU seconds of the whole machine so far (all cores, from /proc/stat). */
function machineCpu(): { busy: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, x) => a + x, 0);
  const idle = f[3]! + f[4]!;
  return { busy: (total - idle) / CLK_TCK, total: total / CLK_TCK };
}

// ---- acquire → release cycles -------------------------------------------------

interface CycleResult {
  target: string;
  workers: number;
  cycles: number;
  seconds: number;
  cycles_per_s: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  errors: number;
  error_codes: Record<string, number>;
  /** Share of one core the server process used during the measured window. */
  server_cpu: number;
  /** Share of one core this load generator used. */
  client_cpu: number;
  server_cpu_us_per_cycle: number;
  /** CPU of the local PostgreSQL processes per cycle (NaN for a SQLite server). */
  db_cpu_us_per_cycle: number;
  /** Share of the machine's cores busy during the window (every process: the servers, the database, this client, anything else). */
  machine_busy: number;
}

let levelSeq = 0;

/** Closed-loop cycles; worker w uses `tokens[w % tokens.length]` (one token per family spreads the workers over families). */
async function cycles(target: Child | Child[], label: string, workers: number, tokens: readonly string[] = [TOKEN]): Promise<CycleResult> {
  // Several targets (instances on one database): worker w uses targets[w % n]; CPU is their sum.
  const targets = Array.isArray(target) ? target : [target];
  const t: Child = targets.length === 1 ? targets[0]! : { ...targets[0]!, name: targets.map((x) => x.name).join(' + ') };
  const pick = (w: number) => targets[w % targets.length]!;
  const serverCpu0 = () => targets.reduce((a, x) => a + cpuSeconds(x.proc.pid), 0);
  const tag = `${label}-${++levelSeq}`;
  const tokenOf = (w: number) => tokens[w % tokens.length]!;
  const sessions = await Promise.all(Array.from({ length: workers }, (_, w) => openSession(pick(w), `bench-${tag}-${w}`, tokenOf(w))));
  const start = performance.now();
  const from = start + WARMUP_MS;
  const end = from + DURATION_MS;
  const lat: number[] = [];
  const errorCodes: Record<string, number> = {};
  let errors = 0;
  const cpu = { server0: NaN, client0: NaN, server1: NaN, client1: NaN };
  // The database's own CPU, for the PostgreSQL rows (the store's cost is partly spent there).
  const pgRows = Array.isArray(target);
  const db: { at0?: Map<number, number>; at1?: Map<number, number> } = {};
  const machine: { at0?: { busy: number; total: number }; at1?: { busy: number; total: number } } = {};
  const mark0 = setTimeout(() => {
    cpu.server0 = serverCpu0();
    cpu.client0 = cpuSeconds(process.pid);
    if (pgRows) db.at0 = postgresCpu();
    machine.at0 = machineCpu();
  }, WARMUP_MS);
  const mark1 = setTimeout(() => {
    cpu.server1 = serverCpu0();
    cpu.client1 = cpuSeconds(process.pid);
    if (pgRows) db.at1 = postgresCpu();
    machine.at1 = machineCpu();
  }, WARMUP_MS + DURATION_MS);

  const note = (r: Res) => {
    const code = `${r.status} ${typeof r.body === 'object' && r.body ? r.body.code : ''}`.trim();
    errorCodes[code] = (errorCodes[code] ?? 0) + 1;
  };

  await Promise.all(
    sessions.map(async (session_id, w) => {
      const t = pick(w);
      const routes = Array.from({ length: ROUTES_PER_WORKER }, (_, k) => leasePath(`lease://bench/${tag}-w${w}/r-${k}`));
      let k = 0;
      while (performance.now() < end) {
        const base = routes[k % routes.length]!;
        const n = k++;
        const t0 = performance.now();
        const a = await send(t, 'POST', `${base}/acquire`, { session_id, request_id: `${tag}-${w}-${n}-a`, ttl_ms: 30_000 }, tokenOf(w));
        let ok = a.status === 200;
        if (ok) {
          const r = await send(t, 'POST', `${base}/release`, {
            session_id,
            request_id: `${tag}-${w}-${n}-r`,
            lease_id: a.body.lease.lease_id,
            fencing_token: a.body.lease.fencing_token,
          }, tokenOf(w));
          ok = r.status === 200;
          if (!ok) note(r);
        } else note(a);
        const t1 = performance.now();
        if (t1 >= from && t1 <= end) {
          if (ok) lat.push(t1 - t0);
          else errors++;
        }
      }
    }),
  );
  clearTimeout(mark0);
  clearTimeout(mark1);
  if (Number.isNaN(cpu.server1)) {
    cpu.server1 = serverCpu0();
    cpu.client1 = cpuSeconds(process.pid);
    if (pgRows) db.at1 = postgresCpu();
    machine.at1 = machineCpu();
  }
  const dbCpu = db.at0 && db.at1 ? postgresCpuBetween(db.at0, db.at1) : NaN;
  const busy = machine.at0 && machine.at1 ? (machine.at1.busy - machine.at0.busy) / (machine.at1.total - machine.at0.total) : NaN;
  const seconds = DURATION_MS / 1000;
  const s = summary(lat);
  const serverCpu = cpu.server1 - cpu.server0;
  return {
    target: t.name,
    workers,
    cycles: lat.length,
    seconds,
    cycles_per_s: Math.round(lat.length / seconds),
    p50_ms: s.p50_ms,
    p99_ms: s.p99_ms,
    max_ms: s.max_ms,
    errors,
    error_codes: errorCodes,
    server_cpu: Math.round((serverCpu / seconds) * 100) / 100,
    client_cpu: Math.round(((cpu.client1 - cpu.client0) / seconds) * 100) / 100,
    server_cpu_us_per_cycle: lat.length ? Math.round((serverCpu / lat.length) * 1e6) : NaN,
    db_cpu_us_per_cycle: lat.length && pgRows ? Math.round((dbCpu / lat.length) * 1e6) : NaN,
    machine_busy: Math.round(busy * 100) / 100,
  };
}

// ---- LIST with many held leases -----------------------------------------------

function seedRoutes(total: number): string[] {
  // acme: 100 areas × 960 resources; globex and initech: 10 areas × 200 each
  // (100,000 in all at the default size). Smaller totals scale acme down.
  const others: string[] = [];
  for (const realm of ['globex', 'initech']) for (let a = 0; a < 10; a++) for (let r = 0; r < 200; r++) others.push(`lease://${realm}/area-${a}/res-${r}`);
  const acmePerArea = Math.max(200, Math.floor((total - others.length) / 100));
  const acme: string[] = [];
  for (let a = 0; a < 100; a++) for (let r = 0; r < acmePerArea; r++) acme.push(`lease://acme/area-${a}/res-${r}`);
  return [...acme, ...others];
}

interface ListResult {
  case: string;
  selector: string;
  pages: number;
  items_per_page_min: number;
  items_per_page_max: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

async function listPage(t: Child, selector: string, cursor?: string): Promise<{ ms: number; items: unknown[]; next: string | null }> {
  const q = new URLSearchParams({ selector, limit: '100' });
  if (cursor) q.set('cursor', cursor);
  const t0 = performance.now();
  const r = await send(t, 'GET', `/api/v1/leases?${q}`);
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`list ${selector}: ${r.status} ${JSON.stringify(r.body)}`);
  return { ms, items: r.body.items as unknown[], next: r.body.next_cursor as string | null };
}

function listResult(name: string, selector: string, samples: Array<{ ms: number; items: unknown[] }>): ListResult {
  const s = summary(samples.map((x) => x.ms));
  const counts = samples.map((x) => x.items.length);
  return {
    case: name,
    selector,
    pages: s.n,
    items_per_page_min: Math.min(...counts),
    items_per_page_max: Math.max(...counts),
    p50_ms: s.p50_ms,
    p99_ms: s.p99_ms,
    max_ms: s.max_ms,
  };
}

async function listBench(t: Child): Promise<{ seed: Record<string, number>; results: ListResult[]; walk: Record<string, number> }> {
  const routes = seedRoutes(LIST_LEASES);
  const sessions = await Promise.all(Array.from({ length: 8 }, (_, i) => openSession(t, `seed-${i}`)));
  const keepalive = setInterval(() => {
    for (const session_id of sessions) void send(t, 'POST', '/api/v1/sessions/keepalive', { session_id }).catch(() => {});
  }, 30_000);
  try {
    // Seed: 64 concurrent acquire loops over HTTP.
    const t0 = performance.now();
    let next = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < routes.length) {
          const i = next++;
          const r = await send(t, 'POST', leasePath(routes[i]!, 'acquire'), { session_id: sessions[i % sessions.length], request_id: `seed-${i}`, ttl_ms: 600_000 });
          if (r.status !== 200) failed++;
        }
      }),
    );
    const seedSeconds = (performance.now() - t0) / 1000;
    if (failed) throw new Error(`seeding: ${failed} acquires failed`);
    const seed = { leases: routes.length, seconds: Math.round(seedSeconds * 10) / 10, acquires_per_s: Math.round(routes.length / seedSeconds) };
    console.log(`seeded ${routes.length} held leases in ${seed.seconds} s (${seed.acquires_per_s} acquires/s, 64 concurrent)`);

    const results: ListResult[] = [];
    const N = 300;
    const warm = async (sel: string) => {
      for (let i = 0; i < 20; i++) await listPage(t, sel);
    };

    // (a) exact prefix: one area, first page, rotating over the areas.
    await warm('lease://acme/area-7/*');
    const a: Array<{ ms: number; items: unknown[] }> = [];
    for (let i = 0; i < N; i++) a.push(await listPage(t, `lease://acme/area-${(7 + i * 13) % 100}/*`));
    results.push(listResult('(a) exact prefix, first page', 'lease://acme/area-{N}/*', a));

    // (b) a realm walked with the cursor, 100 items a page, from start to end.
    await warm('lease://acme/**');
    const b: Array<{ ms: number; items: unknown[] }> = [];
    let cursor: string | undefined;
    let walked = 0;
    const seen = new Set<string>();
    const walkStart = performance.now();
    do {
      const p = await listPage(t, 'lease://acme/**', cursor);
      b.push(p);
      walked += p.items.length;
      for (const it of p.items as Array<{ route: string }>) seen.add(it.route);
      cursor = p.next ?? undefined;
    } while (cursor);
    const walkSeconds = (performance.now() - walkStart) / 1000;
    const acmeCount = routes.filter((r) => r.startsWith('lease://acme/')).length;
    if (walked !== acmeCount || seen.size !== acmeCount) throw new Error(`walk of lease://acme/** returned ${walked} items (${seen.size} distinct), expected ${acmeCount}`);
    results.push(listResult('(b) lease://acme/** walked with the cursor, every page', 'lease://acme/**', b));
    const walk = { pages: b.length, items: walked, seconds: Math.round(walkSeconds * 100) / 100 };

    // (c) resource in every realm and area: first page, rotating over resources.
    await warm('lease://*/*/res-42');
    const c: Array<{ ms: number; items: unknown[] }> = [];
    for (let i = 0; i < N; i++) c.push(await listPage(t, `lease://*/*/res-${(42 + i * 7) % 200}`));
    results.push(listResult('(c) resource wildcard, first page', 'lease://*/*/res-{N}', c));

    // (d) an exact route (a point read), rotating over held routes.
    await warm('lease://acme/area-3/res-5');
    const d: Array<{ ms: number; items: unknown[] }> = [];
    for (let i = 0; i < N; i++) d.push(await listPage(t, `lease://acme/area-${(3 + i * 11) % 100}/res-${(5 + i * 17) % 200}`));
    results.push(listResult('(d) exact route', 'lease://acme/area-{N}/res-{M}', d));

    return { seed, results, walk };
  } finally {
    clearInterval(keepalive);
  }
}

/** Top functions by self time (share of the busy, non-idle samples) in the newest .cpuprofile of `dir`. */
function profileTop(dir: string, n = 20): Array<{ self_pct: number; fn: string }> {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const newest = files.map((f) => join(dir, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  if (!newest) return [];
  const prof = JSON.parse(readFileSync(newest, 'utf8')) as {
    nodes: Array<{ id: number; hitCount?: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  };
  const self = new Map<string, number>();
  let total = 0;
  for (const node of prof.nodes) {
    const hits = node.hitCount ?? 0;
    if (!hits || node.callFrame.functionName === '(idle)') continue;
    const cf = node.callFrame;
    const file = cf.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '');
    const key = `${cf.functionName || '(anonymous)'} ${file ? `${file}:${cf.lineNumber + 1}` : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + hits);
    total += hits;
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([fn, hits]) => ({ self_pct: Math.round((hits / total) * 1000) / 10, fn }));
}

// ---- PostgreSQL: one and two instances -------------------------------------------

interface PgRow {
  instances: number;
  families: number;
  results: CycleResult[];
}

/** A token of its own family for each of `n` families (the bootstrap token is root). */
async function familyTokens(t: Child, n: number): Promise<string[]> {
  if (n === 1) return [TOKEN];
  return Promise.all(
    Array.from({ length: n }, async (_, k) => {
      const r = await send(t, 'POST', '/api/v1/tokens', { name: `bench-family-${k}`, family: `bench-${k}`, grants: ['lease://**#write'] });
      if (r.status !== 201 && r.status !== 200) throw new Error(`create token: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.token as string;
    }),
  );
}

/**
 * The PostgreSQL server for the PostgreSQL rows: BENCH_POSTGRES=<postgres:// URL>, or by default
 * the local one (127.0.0.1:5432, user postgres) if it accepts connections; BENCH_POSTGRES=0 skips them.
 */
async function postgresUrl(): Promise<string | undefined> {
  const env = process.env.BENCH_POSTGRES;
  if (env === '0') return undefined;
  if (env && env !== '1') return env;
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (env === '1') return local;
  const reachable = await new Promise<boolean>((resolve) => {
    const s = connect({ host: '127.0.0.1', port: 5432, timeout: 1_000 }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });
  if (!reachable) console.log('no PostgreSQL at 127.0.0.1:5432: the PostgreSQL rows are skipped (BENCH_POSTGRES=<url> names another server)');
  return reachable ? local : undefined;
}

/** PostgreSQL rows at these worker counts (64: the acceptance row; 1: latency). */
const PG_LEVELS = (process.env.BENCH_PG_LEVELS ?? '1,64').split(',').map(Number);

/**
 * The PostgreSQL rows, each beside one SQLite instance measured in the same
 * run (64 workers, before and after the PostgreSQL rows, averaged), so the
 * ratios hold on a loaded machine too.
 */
async function postgresBench(adminUrl: string): Promise<{ rows: PgRow[]; sqlite64: CycleResult[] }> {
  process.env.LEASEHOLD_TEST_DATABASE_URL = adminUrl;
  const sqliteRef = async (): Promise<CycleResult> => {
    const s = await startLeasehold('normal');
    try {
      const r = await cycles(s, 'sqlite-ref', 64);
      console.log(`sqlite (one instance, reference), 64 workers: ${r.cycles_per_s}/s, server CPU ${r.server_cpu_us_per_cycle} µs/cycle`);
      return r;
    } finally {
      await stopChild(s);
    }
  };
  const run = async (instances: number, families: number): Promise<PgRow> => {
    const db: TestDatabase = await createTestDatabase();
    const children: Child[] = [];
    try {
      for (let i = 0; i < instances; i++) children.push(await startPostgresInstance(`pg-${instances}x${families}f-${String.fromCharCode(65 + i)}`, db.url));
      const tokens = await familyTokens(children[0]!, families);
      const results: CycleResult[] = [];
      for (const workers of PG_LEVELS) {
        const r = await cycles(children, `pg${instances}x${families}`, workers, tokens);
        results.push(r);
        console.log(`postgres, ${instances} instance(s), ${families} famil${families === 1 ? 'y' : 'ies'}, ${workers} workers: ${r.cycles_per_s}/s, p50 ${f1(r.p50_ms)} ms, p99 ${f1(r.p99_ms)} ms, server CPU ${r.server_cpu_us_per_cycle} µs/cycle, database CPU ${r.db_cpu_us_per_cycle} µs/cycle, machine ${Math.round(r.machine_busy * 100)}% busy, errors ${r.errors}`);
      }
      return { instances, families, results };
    } finally {
      for (const c of children) await stopChild(c);
      await db.drop();
    }
  };
  const sqlite64 = [await sqliteRef()];
  const rows: PgRow[] = [];
  // BENCH_PG_CASES="2x1,2x4" (instances x families) runs only those rows (quick trials).
  const cases = (process.env.BENCH_PG_CASES ?? '1x1,2x1,1x4,2x4').split(',').map((c) => c.split('x').map(Number) as [number, number]);
  for (const [instances, families] of cases) rows.push(await run(instances, families));
  sqlite64.push(await sqliteRef());
  const ref = sqlite64.reduce((a, r) => a + r.cycles_per_s, 0) / sqlite64.length;
  console.log(`\nPostgreSQL store: acquire → release cycles, one and two instances on one database, workers in one family or spread over four,`);
  console.log(`against one SQLite instance at 64 workers in the same run (${sqlite64.map((r) => r.cycles_per_s).join(' and ')} cycles/s, before and after: ${Math.round(ref)})\n`);
  console.log(
    table(
      ['instances', 'families', 'workers', 'cyc/s', '× SQLite', 'p50 ms', 'p99 ms', 'server CPU µs/cyc', 'database CPU µs/cyc', 'client CPU', 'machine busy', 'errors'],
      rows.flatMap((row) =>
        row.results.map((r) => [
          row.instances, row.families, r.workers, r.cycles_per_s, r.workers === 64 ? (r.cycles_per_s / ref).toFixed(2) : '',
          f1(r.p50_ms), f1(r.p99_ms), r.server_cpu_us_per_cycle, Number.isFinite(r.db_cpu_us_per_cycle) ? r.db_cpu_us_per_cycle : '-',
          r.client_cpu.toFixed(2), `${Math.round(r.machine_busy * 100)}%`, r.errors,
        ]),
      ),
    ),
  );
  const ref64 = sqlite64.map((r) => `${r.server_cpu_us_per_cycle} µs server + ${Math.round((r.client_cpu / r.cycles_per_s) * 1e6)} µs client per cycle, machine ${Math.round(r.machine_busy * 100)}% busy`);
  console.log(`
the SQLite reference: ${ref64.join('; ')}`);
  const at = (i: number, f: number) => (rows.find((r) => r.instances === i && r.families === f)?.results.find((r) => r.workers === 64)?.cycles_per_s ?? NaN) / ref;
  console.log(`\ntargets: two instances, one family ≥ 0.5 × SQLite → ${at(2, 1).toFixed(2)} × (${at(2, 1) >= 0.5 ? 'met' : 'NOT met'}); four families ≥ 1 × → ${at(2, 4).toFixed(2)} × (${at(2, 4) >= 1 ? 'met' : 'NOT met'})\n`);
  return { rows, sqlite64 };
}

// ---- output -------------------------------------------------------------------

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(cells[0]!), w.map((n) => '-'.repeat(n)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

function printList(list: Awaited<ReturnType<typeof listBench>>): void {
  console.log(`\nLIST, limit=100, with ${list.seed.leases} held leases (one client, sequential)\n`);
  console.log(
    table(
      ['case', 'selector', 'pages', 'items/page', 'p50 ms', 'p99 ms', 'max ms'],
      list.results.map((r) => [
        r.case,
        r.selector,
        r.pages,
        r.items_per_page_min === r.items_per_page_max ? r.items_per_page_min : `${r.items_per_page_min}–${r.items_per_page_max}`,
        f1(r.p50_ms),
        f1(r.p99_ms),
        f1(r.max_ms),
      ]),
    ),
  );
  console.log(`\nfull walk of lease://acme/**: ${list.walk.items} items in ${list.walk.pages} pages, ${list.walk.seconds} s`);
}

const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

async function main(): Promise<void> {
  if (!existsSync(SERVER)) {
    console.log('dist/server.mjs is missing: npm run build:server');
    const r = spawnSync('npm', ['run', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build:server failed');
  }
  const machine = {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
  console.log(`bench: ${machine.cpus} × ${machine.cpu_model}, Node ${machine.node}; ${WARMUP_MS / 1000} s warm-up + ${DURATION_MS / 1000} s per level`);
  const busyBefore = await machineBusy(2_000);
  console.log(`machine busy before the run: ${(busyBefore * 100).toFixed(0)}% of all cores`);
  if (busyBefore > 0.1) console.log('WARNING: other processes are using the CPU; the figures below are not representative');
  console.log('');

  const pgUrl = process.env.BENCH_ONLY === 'list' ? undefined : await POSTGRES;
  const pgRun = pgUrl ? await postgresBench(pgUrl) : undefined;
  const pg = pgRun?.rows;
  if (ONLY_POSTGRES) {
    writeFileSync(join(ROOT, 'bench-results.json'), `${JSON.stringify({ date: new Date().toISOString(), machine, postgres: pgRun }, null, 2)}\n`);
    return;
  }

  if (process.env.BENCH_ONLY === 'list') {
    const server = await startLeasehold('normal');
    const list = await listBench(server);
    await stopChild(server);
    printList(list);
    return;
  }

  const floor = await startFloor();
  const normal = await startLeasehold('normal', true);
  const rows: CycleResult[] = [];
  const pairs: Array<{ workers: number; floor: CycleResult; leasehold: CycleResult; ratio: number }> = [];
  for (const workers of LEVELS) {
    const fl = await cycles(floor, 'floor', workers);
    const lh = await cycles(normal, 'normal', workers);
    rows.push(fl, lh);
    const ratio = Math.round((lh.cycles_per_s / fl.cycles_per_s) * 1000) / 1000;
    pairs.push({ workers, floor: fl, leasehold: lh, ratio });
    console.log(`${workers} workers: floor ${fl.cycles_per_s}/s, leasehold ${lh.cycles_per_s}/s (× ${ratio})`);
  }
  await stopChild(floor);
  await stopChild(normal);

  const full = await startLeasehold('full');
  const fullRows: CycleResult[] = [];
  for (const workers of [1, 64]) {
    const r = await cycles(full, 'full', workers);
    fullRows.push(r);
    console.log(`${workers} workers, sync=full: ${r.cycles_per_s}/s`);
  }
  await stopChild(full);

  console.log(`\nseeding ${LIST_LEASES} leases for LIST …`);
  const listServer = await startLeasehold('normal');
  const list = await listBench(listServer);
  await stopChild(listServer);

  // ---- report
  console.log('\nacquire → release cycles (2 POSTs a cycle), keep-alive HTTP on loopback\n');
  console.log(
    table(
      ['workers', 'floor cyc/s', 'p50 ms', 'p99 ms', 'leasehold cyc/s', 'p50 ms', 'p99 ms', 'ratio', 'lh CPU µs/cyc', 'errors'],
      pairs.map((p) => [
        p.workers,
        p.floor.cycles_per_s,
        f1(p.floor.p50_ms),
        f1(p.floor.p99_ms),
        p.leasehold.cycles_per_s,
        f1(p.leasehold.p50_ms),
        f1(p.leasehold.p99_ms),
        p.ratio.toFixed(2),
        p.leasehold.server_cpu_us_per_cycle,
        p.floor.errors + p.leasehold.errors,
      ]),
    ),
  );
  const at64 = pairs.find((p) => p.workers === 64)!;
  const target = at64.ratio >= 0.5;
  console.log(`\ntarget at 64 workers: leasehold ≥ 0.5 × floor → ${at64.ratio.toFixed(2)} × (${target ? 'met' : 'NOT met'}); server CPU ${at64.leasehold.server_cpu_us_per_cycle} µs per cycle (target ≤ 120); client CPU ${at64.floor.client_cpu.toFixed(2)} of a core during the floor row`);
  if (pg) {
    // The shared store against the embedded one, at 64 workers, from this same run.
    for (const row of pg) {
      const r = row.results.find((x) => x.workers === 64)!;
      console.log(`postgres ${row.instances} instance(s), ${row.families} famil${row.families === 1 ? 'y' : 'ies'}: ${(r.cycles_per_s / at64.leasehold.cycles_per_s).toFixed(2)} × SQLite at 64 workers`);
    }
  }

  console.log('\nsynchronous=FULL (LEASEHOLD_SYNC=full) against NORMAL\n');
  console.log(
    table(
      ['workers', 'normal cyc/s', 'p50 ms', 'p99 ms', 'full cyc/s', 'p50 ms', 'p99 ms', 'full/normal'],
      fullRows.map((f) => {
        const n = pairs.find((p) => p.workers === f.workers)!.leasehold;
        return [f.workers, n.cycles_per_s, f1(n.p50_ms), f1(n.p99_ms), f.cycles_per_s, f1(f.p50_ms), f1(f.p99_ms), (f.cycles_per_s / n.cycles_per_s).toFixed(2)];
      }),
    ),
  );

  printList(list);

  let profile: Array<{ self_pct: number; fn: string }> | undefined;
  if (CPU_PROF) {
    profile = profileTop(CPU_PROF);
    console.log(`\nleasehold (sync=normal) CPU profile, top functions by self time, % of its busy time (whole run of that server):\n`);
    for (const p of profile) console.log(`${p.self_pct.toFixed(1).padStart(6)}%  ${p.fn}`);
  }

  const allRows = [...rows, ...fullRows];
  const errs = allRows.filter((r) => r.errors > 0);
  for (const r of errs) console.log(`errors: ${r.target} at ${r.workers} workers: ${JSON.stringify(r.error_codes)}`);
  console.log('\nCPU (share of one core) during the measured windows:');
  console.log(
    table(
      ['target', 'workers', 'server CPU', 'client CPU', 'server µs/cycle'],
      allRows.map((r) => [r.target, r.workers, r.server_cpu.toFixed(2), r.client_cpu.toFixed(2), r.server_cpu_us_per_cycle]),
    ),
  );

  const out = {
    date: new Date().toISOString(),
    machine: { ...machine, busy_before_run: Math.round(busyBefore * 1000) / 1000 },
    config: { warmup_s: WARMUP_MS / 1000, duration_s: DURATION_MS / 1000, levels: LEVELS, routes_per_worker: ROUTES_PER_WORKER, list_leases: LIST_LEASES },
    cycles: { pairs, full: fullRows },
    target_64: { ratio: at64.ratio, met: target },
    list,
    ...(pgRun ? { postgres: pgRun } : {}),
    ...(profile ? { profile } : {}),
  };
  writeFileSync(join(ROOT, 'bench-results.json'), `${JSON.stringify(out, null, 2)}\n`);
  console.log('\nraw results: bench-results.json');
  await closePools();
}

runMain(main, 'bench');
