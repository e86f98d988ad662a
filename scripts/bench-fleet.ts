/**
 * `npm run bench:fleet`: what a fleet's leases cost the server (CONTRACT
 * §20, docs/benchmarks.md "Fleets"), through real server processes
 * (`dist/server.mjs`, built if missing), on SQLite (one instance) and on
 * PostgreSQL (two instances on one fresh database).
 *
 * 1. Batched renewal: a session holding BENCH_FLEET_BATCH_LEASES (10,000)
 *    leases renewed BENCH_FLEET_BATCH_ITEMS (100) at a time by 4 concurrent
 *    clients for BENCH_FLEET_BATCH_S (10) seconds, then the same leases
 *    renewed one request each: server CPU per renewed lease (every Leasehold
 *    process; PostgreSQL's own CPU printed apart), beside the floor's in the
 *    same run (the same load against scripts/bench-floor.ts, a bare Node
 *    server that parses each body and answers each item with a lease).
 * 2. Renew and keepalive against the session's size: one lease in one
 *    session, one lease in a session of BENCH_FLEET_BIG (10,000), renewed
 *    (and kept alive) alternately, one request at a time: p50 of each and
 *    their ratio.
 * 3. The fleet: BENCH_FLEET_LEASES (100,000) leases held by
 *    BENCH_FLEET_SESSIONS (100) sessions through the SDK, each lease
 *    renewed every 10 s (TTL 30 s), for BENCH_FLEET_S (60) seconds: leases
 *    lost, renew requests and their p50/p99, server CPU. With batching, and
 *    (SQLite, `BENCH_FLEET_UNBATCHED=0` skips it) the same fleet with
 *    `batchRenewals: false`.
 *
 * `--sqlite` or `--postgres` runs one store; `--part=1,2,3` some parts;
 * `BENCH_SERVER=<path to a server.mjs>` measures another build (A/B).
 */

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { LeaseholdClient, type LeaseHandle, type Session } from '../lib/client';
import { STORE_KINDS, type StoreKind } from '../lib/wire';
import { call, leasePath, rid, tempDir } from '../server/testing/harness';
import { createTestDatabase } from '../server/testing/pg';
import { cpuMs, cpuMsOfCommand } from '../server/testing/proc-cpu';
import { ensureServerBuilt, runMain, SERVER, spawnListening, stopServer, type ServerProcess } from '../server/testing/process';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const BATCH_LEASES = env('BENCH_FLEET_BATCH_LEASES', 10_000);
const BATCH_ITEMS = env('BENCH_FLEET_BATCH_ITEMS', 100);
const BATCH_S = env('BENCH_FLEET_BATCH_S', 10);
const BIG = env('BENCH_FLEET_BIG', 10_000);
const SIZE_SAMPLES = env('BENCH_FLEET_SIZE_SAMPLES', 400);
const FLEET_LEASES = env('BENCH_FLEET_LEASES', 100_000);
const FLEET_SESSIONS = env('BENCH_FLEET_SESSIONS', 100);
const FLEET_S = env('BENCH_FLEET_S', 60);
const FLEET_TTL_MS = 30_000;
const TOKEN = `lh_bench_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;

const SERVER_PATH = process.env.BENCH_SERVER ?? SERVER;
const only = process.argv.find((a) => a === '--sqlite' || a === '--postgres')?.slice(2);
const partsArg = process.argv.find((a) => a.startsWith('--part='));
const parts = new Set((partsArg?.slice(7) ?? '1,2,3').split(',').map(Number));

setTimeout(() => {
  console.error('bench:fleet: watchdog: still running after 40 minutes, giving up');
  process.exit(1);
}, 40 * 60_000).unref();

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
const ms = (x: number) => `${x.toFixed(1)} ms`;
const int = (x: number) => Math.round(x).toLocaleString('en-US');
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

interface Held {
  route: string;
  lease_id: string;
  fencing_token: string;
}

/** A store's servers: one SQLite instance, or two PostgreSQL instances on one fresh database. */
interface Cluster {
  label: string;
  urls: string[];
  serverCpuMs(): number;
  databaseCpuMs(): number;
  /** The servers' peak resident memory (VmHWM), summed, in MiB. */
  serverPeakRssMiB(): number;
  stop(): Promise<void>;
}

async function startCluster(store: StoreKind): Promise<Cluster> {
  const dirs = [tempDir('bench-fleet-a-'), tempDir('bench-fleet-b-')];
  const db = store === 'postgres' ? await createTestDatabase() : undefined;
  const envs = store === 'postgres'
    ? dirs.map((d) => ({ LEASEHOLD_DATA_DIR: d, LEASEHOLD_DATABASE_URL: db!.url }))
    : [{ LEASEHOLD_DATA_DIR: dirs[0]! }];
  const procs: ServerProcess[] = [];
  for (const e of envs) procs.push(await spawnListening('server', [SERVER_PATH], { LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN, ...e }));
  return {
    label: store === 'postgres' ? 'PostgreSQL, 2 instances' : 'SQLite, 1 instance',
    urls: procs.map((p) => p.url),
    serverCpuMs: () => procs.reduce((sum, p) => sum + cpuMs(p.proc.pid), 0),
    databaseCpuMs: () => (store === 'postgres' ? cpuMsOfCommand('postgres') : 0),
    serverPeakRssMiB: () => procs.reduce((sum, p) => sum + Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.proc.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024, 0),
    async stop() {
      await Promise.all(procs.map((p) => stopServer(p.proc)));
      await db?.drop();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** A read retried once when the server closed an idle kept-alive socket as it was reused (`socket hang up`). */
async function read(url: string, path: string) {
  try {
    return await call(url, 'GET', path, undefined, { token: TOKEN });
  } catch {
    return call(url, 'GET', path, undefined, { token: TOKEN });
  }
}

async function ask(url: string, method: string, path: string, body?: unknown) {
  let r = method === 'GET' ? await read(url, path) : await call(url, method, path, body, { token: TOKEN });
  // A read refused by a server that is behind (a fleet past what it carries) is asked again, a few times.
  for (let i = 0; method === 'GET' && r.status === 503 && i < 10; i++) {
    await sleep(500);
    r = await read(url, path);
  }
  if (r.status !== 200 && r.status !== 201) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body;
}

async function openSession(url: string, owner: string): Promise<string> {
  const b = await ask(url, 'POST', '/api/v1/sessions', { owner_id: owner, ttl_ms: 300_000 });
  return b.session.session_id as string;
}

/** `count` leases for `sessionId` under `prefix`, 16 a request (all-or-nothing acquire), 8 requests in flight. */
async function fill(url: string, sessionId: string, prefix: string, count: number): Promise<Held[]> {
  const held: Held[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const start = next;
        if (start >= count) return;
        next = Math.min(count, start + 16);
        const leases = Array.from({ length: next - start }, (_, i) => ({ route: `${prefix}${String(start + i).padStart(6, '0')}`, ttl_ms: 600_000 }));
        const b = await ask(url, 'POST', '/api/v1/sessions/acquire', { session_id: sessionId, request_id: rid(), leases });
        for (const l of b.leases as Held[]) held.push({ route: l.route, lease_id: l.lease_id, fencing_token: l.fencing_token });
      }
    }),
  );
  return held;
}

/** What part 1's load runs against: the servers (or the floor) and how much CPU they have used. */
interface Target {
  urls: string[];
  cpuMs(): number;
  databaseCpuMs(): number;
}

/**
 * Part 1's load: 4 clients renewing `held` (leases of `sessionId`),
 * `itemsPerRequest` a request, for BENCH_FLEET_BATCH_S; prints the rate,
 * latency and `target`'s CPU per renewed lease, and returns that CPU (µs).
 */
async function renewLoad(target: Target, sessionId: string, held: Held[], itemsPerRequest: number, versus?: number): Promise<number> {
  const workers = 4;
  let stop = false;
  let renewed = 0;
  let lost = 0;
  let requests = 0;
  const latencies: number[] = [];
  const slice = Math.floor(held.length / workers);
  const cpu0 = target.cpuMs();
  const db0 = target.databaseCpuMs();
  const t0 = performance.now();
  const timer = setTimeout(() => (stop = true), BATCH_S * 1000);
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const mine = held.slice(w * slice, (w + 1) * slice);
      const url = target.urls[w % target.urls.length]!;
      for (let at = 0; !stop; at = (at + itemsPerRequest) % mine.length) {
        const items = mine.slice(at, at + itemsPerRequest);
        const s = performance.now();
        if (itemsPerRequest === 1) {
          const l = items[0]!;
          const r = await call(url, 'POST', leasePath(l.route, 'renew'), { session_id: sessionId, request_id: rid(), lease_id: l.lease_id, fencing_token: l.fencing_token }, { token: TOKEN });
          if (r.status === 200) renewed++;
          else lost++;
        } else {
          const b = await ask(url, 'POST', '/api/v1/sessions/renew', { session_id: sessionId, request_id: rid(), leases: items });
          for (const r of b.results as Array<{ code: string }>) {
            if (r.code === 'lease_renewed') renewed++;
            else lost++;
          }
        }
        latencies.push(performance.now() - s);
        requests++;
      }
    }),
  );
  clearTimeout(timer);
  const wall = (performance.now() - t0) / 1000;
  const cpu = target.cpuMs() - cpu0;
  const db = target.databaseCpuMs() - db0;
  latencies.sort((a, b) => a - b);
  const perLease = (cpu * 1000) / renewed;
  const dbPart = target.urls.length > 1 ? `; PostgreSQL ${((db * 1000) / renewed).toFixed(1)} µs per lease` : '';
  const ratio = versus === undefined ? '' : ` (${(perLease / versus).toFixed(1)}× the floor's)`;
  console.log(
    `  ${itemsPerRequest === 1 ? 'one lease a request' : `${itemsPerRequest} leases a request`}, ${workers} clients, ${wall.toFixed(1)} s: ` +
      `${int(requests)} requests (p50 ${ms(pct(latencies, 0.5))}, p99 ${ms(pct(latencies, 0.99))}), ${int(renewed / wall)} leases renewed/s, lost ${lost}; ` +
      `server CPU ${perLease.toFixed(1)} µs per renewed lease${ratio} (${((cpu * 1000) / requests).toFixed(0)} µs per request, ${(cpu / 1000 / wall).toFixed(2)} cores)${dbPart}`,
  );
  return perLease;
}

/**
 * The floor of a batched renewal, in the same run: the same load against
 * a bare Node `http` server (scripts/bench-floor.ts) that parses each
 * request's body and answers every item with a lease of the usual size,
 * with no authentication, validation, engine or store.
 */
async function floorCost(held: Held[]): Promise<number> {
  const floor = await spawnListening('floor', ['--import', 'tsx', join(import.meta.dirname, 'bench-floor.ts')], {});
  try {
    console.log('\nThe floor (bare Node http: the body parsed, each item answered with a lease; nothing else)');
    return await renewLoad({ urls: [floor.url], cpuMs: () => cpuMs(floor.proc.pid!), databaseCpuMs: () => 0 }, 'ss_floor', held, BATCH_ITEMS);
  } finally {
    await stopServer(floor.proc);
  }
}

/** Part 1: CPU per renewed lease, batched and one request each, beside the floor's. */
async function batchCost(c: Cluster): Promise<void> {
  const sessionId = await openSession(c.urls[0]!, 'bench-batch');
  const held = await fill(c.urls[0]!, sessionId, 'lease://bench/batch/r', BATCH_LEASES);
  const floor = await floorCost(held);
  const target: Target = { urls: c.urls, cpuMs: () => c.serverCpuMs(), databaseCpuMs: () => c.databaseCpuMs() };
  console.log(`\n${c.label}: batched renewal, a session of ${int(held.length)} leases`);
  await renewLoad(target, sessionId, held, BATCH_ITEMS, floor);
  await renewLoad(target, sessionId, held, 1);
  await renewLoad(target, sessionId, held, BATCH_ITEMS, floor);
  await ask(c.urls[0]!, 'POST', '/api/v1/sessions/close', { session_id: sessionId });
}

/** Part 2: renew and keepalive p50 with 1 and with BIG leases in the session. */
async function sizeCost(c: Cluster): Promise<void> {
  const url = c.urls[0]!;
  const small = await openSession(url, 'bench-small');
  const big = await openSession(url, 'bench-big');
  const [one] = await fill(url, small, 'lease://bench/small/r', 1);
  const many = await fill(url, big, 'lease://bench/big/r', BIG);
  const probe = many[Math.floor(many.length / 2)]!;
  const times = { renewSmall: [] as number[], renewBig: [] as number[], keepSmall: [] as number[], keepBig: [] as number[] };
  const timed = async (into: number[], fn: () => Promise<unknown>) => {
    const s = performance.now();
    await fn();
    into.push(performance.now() - s);
  };
  const renew = (sessionId: string, l: Held) => () => ask(url, 'POST', leasePath(l.route, 'renew'), { session_id: sessionId, request_id: rid(), lease_id: l.lease_id, fencing_token: l.fencing_token });
  const keep = (sessionId: string) => () => ask(url, 'POST', '/api/v1/sessions/keepalive', { session_id: sessionId });
  for (let i = 0; i < SIZE_SAMPLES; i++) {
    // Alternate which goes first so drift on the machine falls on both alike.
    const pairs: Array<[number[], () => Promise<unknown>]> = [
      [times.renewSmall, renew(small, one!)],
      [times.renewBig, renew(big, probe)],
      [times.keepSmall, keep(small)],
      [times.keepBig, keep(big)],
    ];
    if (i % 2 === 1) pairs.reverse();
    for (const [into, fn] of pairs) await timed(into, fn);
  }
  const p50 = (xs: number[]) => pct([...xs].sort((a, b) => a - b), 0.5);
  console.log(`\n${c.label}: renew and keepalive against the session's size (${SIZE_SAMPLES} of each, one at a time, alternating)`);
  console.log(`  renew:     1 lease p50 ${ms(p50(times.renewSmall))}, ${int(many.length)} leases p50 ${ms(p50(times.renewBig))}: ${(p50(times.renewBig) / p50(times.renewSmall)).toFixed(2)}×`);
  console.log(`  keepalive: 1 lease p50 ${ms(p50(times.keepSmall))}, ${int(many.length)} leases p50 ${ms(p50(times.keepBig))}: ${(p50(times.keepBig) / p50(times.keepSmall)).toFixed(2)}×`);
  await ask(url, 'POST', '/api/v1/sessions/close', { session_id: small });
  await ask(url, 'POST', '/api/v1/sessions/close', { session_id: big });
}

/** The server's renew latency histogram (`leasehold_request_duration_seconds`), both instances summed: cumulative count by bucket bound. */
async function renewBuckets(c: Cluster): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const url of c.urls) {
    const r = await read(url, '/api/metrics');
    for (const line of r.text.split('\n')) {
      const m = /^leasehold_request_duration_seconds_bucket\{(?=[^}]*operation="(?:session_renew|lease_renew)")[^}]*le="([^"]+)"[^}]*\} (\d+)/.exec(line);
      if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  return out;
}

/** From two readings of `renewBuckets`: the bucket bound under which p50 and p99 fall, and the share within 100 ms. */
function serverQuantiles(before: Map<string, number>, after: Map<string, number>): string {
  const bounds = [...after.keys()].filter((b) => b !== '+Inf').sort((a, b) => Number(a) - Number(b));
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  if (total === 0) return 'no renew requests in the histogram';
  const within = (b: string) => ((after.get(b) ?? 0) - (before.get(b) ?? 0)) / total;
  const at = (q: number) => bounds.find((b) => within(b) >= q) ?? '+Inf';
  return `server-side (histogram): p50 ≤ ${Number(at(0.5)) * 1000} ms, p99 ≤ ${Number(at(0.99)) * 1000} ms, ${(within('0.1') * 100).toFixed(1)} % within 100 ms`;
}

/** The garbage collector's pauses in this process (the SDK's) from now until `stop()`: their total, count, full collections and the longest. */
function gcPauses(): { stop(): { total: number; count: number; major: number; longest: number } } {
  const seen = { total: 0, count: 0, major: 0, longest: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      seen.total += e.duration;
      seen.count++;
      seen.longest = Math.max(seen.longest, e.duration);
      if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) seen.major++;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop: () => {
      observer.disconnect();
      return seen;
    },
  };
}

/** Part 3: the fleet through the SDK. */
async function fleet(c: Cluster, batchRenewals: boolean): Promise<void> {
  let counting = false;
  const requests = new Map<string, number>();
  const renewLatencies: number[] = [];
  const refusals = new Map<string, number>();
  // BENCH_FLEET_TIMELINE=<file>: every counted renew request's send time (epoch ms) and latency, as JSON, to line up with a server's own timings.
  const timeline: Array<[number, number]> | undefined = process.env.BENCH_FLEET_TIMELINE ? [] : undefined;
  const countingFetch: typeof fetch = async (input, init) => {
    const path = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url).pathname;
    const kind = path === '/api/v1/sessions/renew' ? 'batched renew' : path.endsWith('/renew') ? 'renew' : path.endsWith('/keepalive') ? 'keepalive' : 'other';
    const s = performance.now();
    const r = await fetch(input, init);
    if (!r.ok) {
      // Refusals by kind, status and code, while filling and while counted: how a fleet the server cannot keep fails.
      const code = await r.clone().json().then((b: { code?: string }) => b.code ?? '?', () => '?');
      const key = `${counting ? '' : 'filling: '}${kind} ${r.status} ${code}`;
      refusals.set(key, (refusals.get(key) ?? 0) + 1);
    }
    if (counting) {
      requests.set(kind, (requests.get(kind) ?? 0) + 1);
      if (kind.endsWith('renew')) {
        renewLatencies.push(performance.now() - s);
        timeline?.push([Date.now() - (performance.now() - s), performance.now() - s]);
      }
    }
    return r;
  };
  const clients = c.urls.map((baseUrl) => new LeaseholdClient({ baseUrl, token: TOKEN, fetch: countingFetch, batchRenewals }));
  const sessions: Session[] = [];
  const handles: LeaseHandle[] = [];
  const perSession = Math.ceil(FLEET_LEASES / FLEET_SESSIONS);
  const f0 = performance.now();
  for (let s = 0; s < FLEET_SESSIONS; s++) sessions.push(await clients[s % clients.length]!.openSession({ ownerId: `fleet-${s}`, ttlMs: 30_000 }));
  let nextSession = 0;
  // A fleet the server cannot keep (batching off) loses sessions while it fills: counted, not fatal.
  const fillErrors = new Map<string, number>();
  // Acquisitions the server sheds while it is behind (`rate_limited`, docs/design.md "Admission") are
  // asked again after the delay it names, as a fleet manager growing a fleet would, for up to 10 minutes.
  const fillUntil = performance.now() + 600_000;
  let shedRetries = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let s = nextSession++; s < FLEET_SESSIONS; s = nextSession++) {
        try {
          for (let i = 0; i < perSession; i += 16) {
            const routes = Array.from({ length: Math.min(16, perSession - i) }, (_, k) => `lease://fleet/s${String(s).padStart(3, '0')}/r${String(i + k).padStart(5, '0')}`);
            for (;;) {
              try {
                handles.push(...(await sessions[s]!.acquireAll(routes, { ttlMs: FLEET_TTL_MS })));
                break;
              } catch (e) {
                const err = e as { code?: string; retryAfterMs?: number };
                if (err.code !== 'rate_limited' || performance.now() > fillUntil) throw e;
                shedRetries++;
                await sleep(err.retryAfterMs ?? 1_000);
              }
            }
          }
        } catch (e) {
          const code = (e as { code?: string }).code ?? String(e);
          fillErrors.set(code, (fillErrors.get(code) ?? 0) + 1);
        }
      }
    }),
  );
  if (fillErrors.size > 0) console.log(`  sessions that could not be filled: ${[...fillErrors].map(([code, n]) => `${n} (${code})`).join(', ')}`);
  if (shedRetries > 0) console.log(`  all-or-nothing acquires asked again after the SDK's own attempts were refused rate_limited: ${int(shedRetries)}`);
  const fillS = (performance.now() - f0) / 1000;
  // Renewals of the fill are spread over its duration; count from here.
  counting = true;
  const buckets0 = await renewBuckets(c);
  const cpu0 = c.serverCpuMs();
  const db0 = c.databaseCpuMs();
  const clientCpu0 = cpuMs(process.pid);
  const gc = gcPauses();
  const t0 = performance.now();
  await sleep(FLEET_S * 1000);
  const wall = (performance.now() - t0) / 1000;
  counting = false;
  const pauses = gc.stop();
  const cpu = c.serverCpuMs() - cpu0;
  const db = c.databaseCpuMs() - db0;
  const clientCpu = cpuMs(process.pid) - clientCpu0;
  const buckets1 = await renewBuckets(c);
  const lost = handles.filter((h) => h.state === 'lost').length;
  const released = handles.filter((h) => h.state === 'released').length;
  const distinct = new Set(handles.map((h) => h.lease.route)).size;
  const lostSessions = sessions.filter((s) => s.state !== 'open').length;
  // What the server holds, counted from the server's side.
  const listedRoutes = new Set<string>();
  let cursor: string | undefined;
  // A server past what it carries may refuse the listing past `ask`'s retries: the minute's figures still print.
  let unlisted: string | undefined;
  try {
    do {
      const q = new URLSearchParams({ selector: 'lease://fleet/**', limit: '1000', ...(cursor ? { cursor } : {}) });
      const b = await ask(c.urls[0]!, 'GET', `/api/v1/leases?${q}`);
      for (const item of b.items as Array<{ route: string }>) listedRoutes.add(item.route);
      cursor = (b.next_cursor as string | null) ?? undefined;
    } while (cursor);
  } catch (e) {
    unlisted = String(e).slice(0, 200);
  }
  const listed = listedRoutes.size;
  // Leases lost while the server was listed (after the counted minute): a fleet on the edge of what the server carries.
  const lostWhileListing = handles.filter((h) => h.state === 'lost').length - lost;
  // A handle the SDK holds that the server does not list is a lease the SDK would report held wrongly.
  const missing = unlisted ? [] : handles.filter((h) => h.state === 'held' && !listedRoutes.has(h.lease.route));
  for (const h of missing.slice(0, 3)) {
    const r = await read(c.urls[0]!, leasePath(h.lease.route));
    console.log(`  held by the SDK, not listed: ${h.lease.route} (the SDK's expires_at ${h.lease.expires_at}, now ${new Date().toISOString()}): the server says ${r.status} ${r.text.slice(0, 300)}`);
  }
  renewLatencies.sort((a, b) => a - b);
  const total = [...requests.values()].reduce((a, b) => a + b, 0);
  const dbPart = c.urls.length > 1 ? `, PostgreSQL ${(db / 1000 / wall).toFixed(2)} cores` : '';
  console.log(
    `\n${c.label}: a fleet of ${int(handles.length)} leases in ${FLEET_SESSIONS} sessions through the SDK, TTL ${FLEET_TTL_MS / 1000} s (renewed every ${FLEET_TTL_MS / 3000} s), batchRenewals ${batchRenewals} (filled in ${fillS.toFixed(1)} s)`,
  );
  console.log(
    `  ${wall.toFixed(1)} s: ${int(total)} requests (${int(total / wall)}/s: ${[...requests].map(([k, n]) => `${k} ${int(n)}`).join(', ')}); ` +
      `renew requests as the SDK's process saw them p50 ${ms(pct(renewLatencies, 0.5))}, p99 ${ms(pct(renewLatencies, 0.99))}; ${serverQuantiles(buckets0, buckets1)}`,
  );
  console.log(
    `  leases lost ${lost}${released > 0 ? `, released ${int(released)}` : ''}${distinct !== handles.length ? `, distinct routes ${int(distinct)}` : ''}, sessions not open ${lostSessions}, ${unlisted ? `the listing refused after ${int(listed)} leases (${unlisted})` : `leases the server lists ${int(listed)}`}${lostWhileListing > 0 ? ` (${int(lostWhileListing)} more lost while it was listed, after the counted minute)` : ''}; ` +
      `server CPU ${(cpu / 1000 / wall).toFixed(2)} cores${dbPart}, the SDK's process ${(clientCpu / 1000 / wall).toFixed(2)} cores; server peak memory ${int(c.serverPeakRssMiB())} MiB`,
  );
  console.log(
    `  the SDK's process collecting garbage: ${int(pauses.total)} ms in ${int(pauses.count)} pauses (${(pauses.total / 10 / wall).toFixed(1)} % of the time), ${pauses.major} full collections, longest pause ${ms(pauses.longest)}; heap ${int(process.memoryUsage().heapUsed / 2 ** 20)} MiB used after the minute`,
  );
  if (timeline) writeFileSync(process.env.BENCH_FLEET_TIMELINE!, JSON.stringify(timeline));
  if (refusals.size > 0) console.log(`  refused requests: ${[...refusals].map(([k, n]) => `${k} ×${int(n)}`).join(', ')}`);
  await Promise.allSettled(sessions.map((s) => s.close()));
}

runMain(async () => {
  if (!process.env.BENCH_SERVER) ensureServerBuilt();
  console.log(`bench:fleet — parts ${[...parts].join(',')}, server ${SERVER_PATH}, Node ${process.version}, ${new Date().toISOString()}`);
  for (const store of STORE_KINDS) {
    if (only && only !== store) continue;
    if (parts.has(1) || parts.has(2)) {
      const c = await startCluster(store);
      try {
        if (parts.has(1)) await batchCost(c);
        if (parts.has(2)) await sizeCost(c);
      } finally {
        await c.stop();
      }
    }
    if (parts.has(3)) {
      // BENCH_FLEET_UNBATCHED: 0 skips the unbatched fleet, "only" runs it alone (SQLite).
      const unbatched = process.env.BENCH_FLEET_UNBATCHED;
      const modes = store !== 'sqlite' ? [true] : unbatched === '0' ? [true] : unbatched === 'only' ? [false] : [true, false];
      for (const batched of modes) {
        const c = await startCluster(store);
        try {
          await fleet(c, batched);
        } finally {
          await c.stop();
        }
      }
    }
  }
}, 'bench:fleet');
