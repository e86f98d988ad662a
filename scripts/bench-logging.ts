/**
 * `npm run bench:logging`: what the access log costs. Two Leasehold servers
 * (SQLite, API only, NODE_ENV=production), one with LEASEHOLD_ACCESS_LOG=on
 * and one with it off, each writing its JSON log to a file (as under a
 * supervisor that sends stdout to a log pipeline). acquire → release cycles
 * at BENCH_WORKERS (16) concurrent workers, in interleaved rounds (off, on,
 * off, on, …) so a change in the machine's load hits both alike; prints
 * each round, and the median over rounds of each round's on/off ratio
 * (robust to the load drifting between rounds). docs/benchmarks.md has the
 * figures. Knobs: BENCH_ROUNDS (8), BENCH_ROUND_S (2), BENCH_WORKERS (16).
 * First, in this process: the CPU one request line costs (the access log's
 * record → pino → an asynchronous file write), which does not depend on how
 * busy the machine is nearly as much as throughput does.
 */

import { runMain } from '../server/testing/process';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { call, leasePath } from '../server/testing/harness';
import { createLog } from '../server/log';
import { AccessLog } from '../server/http/access-log';
import { cpuMs } from '../server/testing/proc-cpu';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = join(ROOT, 'dist', 'server.mjs');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const ROUND_MS = Number(process.env.BENCH_ROUND_S ?? 2) * 1000;
const WORKERS = Number(process.env.BENCH_WORKERS ?? 16);
const TOKEN = `lh_bench_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface Server {
  name: string;
  proc: ChildProcess;
  url: string;
  dir: string;
  logFile: string;
}

const children: Server[] = [];
process.on('exit', () => {
  for (const s of children) {
    if (s.proc.exitCode === null) s.proc.kill('SIGKILL');
    rmSync(s.dir, { recursive: true, force: true });
  }
});
setTimeout(() => {
  console.error('bench:logging: watchdog: still running after 5 minutes, giving up');
  process.exit(1);
}, 5 * 60_000).unref();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Start a server whose stdout and stderr go to a file; resolve once it says where it listens. */
async function start(name: string, accessLog: 'on' | 'off'): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-logging-'));
  const logFile = join(dir, 'server.log');
  const fd = openSync(logFile, 'a');
  const proc = spawn(process.execPath, [SERVER], {
    cwd: ROOT,
    stdio: ['ignore', fd, fd],
    env: {
      ...process.env,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: '0',
      LEASEHOLD_CONSOLE: 'off',
      LEASEHOLD_DATA_DIR: dir,
      LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN,
      LEASEHOLD_ACCESS_LOG: accessLog,
      LEASEHOLD_LOG_FORMAT: 'json',
      LEASEHOLD_DRAIN_MS: '0',
    },
  });
  closeSync(fd);
  const server: Server = { name, proc, url: '', dir, logFile };
  children.push(server);
  for (let i = 0; i < 300; i++) {
    const m = /listening on (http:\/\/[^\s,)"]+)/.exec(readFileSync(logFile, 'utf8'));
    if (m) return { ...server, url: m[1]! };
    if (proc.exitCode !== null) break;
    await sleep(50);
  }
  throw new Error(`${name} did not start:\n${readFileSync(logFile, 'utf8')}`);
}

function cpuSeconds(pid: number): number {
  return cpuMs(pid) / 1000;
}

interface Round {
  server: string;
  cycles_per_s: number;
  p50_ms: number;
  cpu_us_per_cycle: number;
  log_bytes_per_cycle: number;
}

let seq = 0;

/** One round of acquire → release cycles against `s` for ROUND_MS (after 0.5 s of warm-up). */
async function round(s: Server): Promise<Round> {
  const tag = `r${++seq}`;
  const send = (path: string, body: unknown) => call(s.url, 'POST', path, body, { token: TOKEN, agent });
  const sessions = await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => (await send('/api/v1/sessions', { owner_id: `${tag}-${w}`, ttl_ms: 300_000 })).body.session.session_id as string),
  );
  const from = performance.now() + 500;
  const end = from + ROUND_MS;
  let cpu0 = NaN;
  let bytes0 = NaN;
  const mark = setTimeout(() => {
    cpu0 = cpuSeconds(s.proc.pid!);
    bytes0 = statSync(s.logFile).size;
  }, 500);
  const lat: number[] = [];
  await Promise.all(
    sessions.map(async (session_id, w) => {
      for (let n = 0; performance.now() < end; n++) {
        const base = leasePath(`lease://bench/${tag}-w${w}/r-${n % 8}`);
        const t0 = performance.now();
        const a = await send(`${base}/acquire`, { session_id, request_id: `${tag}-${w}-${n}-a`, ttl_ms: 30_000 });
        if (a.status !== 200) throw new Error(`acquire: ${a.status} ${a.text}`);
        const r = await send(`${base}/release`, { session_id, request_id: `${tag}-${w}-${n}-r`, lease_id: a.body.lease.lease_id, fencing_token: a.body.lease.fencing_token });
        if (r.status !== 200) throw new Error(`release: ${r.status} ${r.text}`);
        const t1 = performance.now();
        if (t0 >= from && t1 <= end) lat.push(t1 - t0);
      }
    }),
  );
  clearTimeout(mark);
  const cpu = cpuSeconds(s.proc.pid!) - cpu0;
  const bytes = statSync(s.logFile).size - bytes0;
  lat.sort((a, b) => a - b);
  return {
    server: s.name,
    cycles_per_s: Math.round(lat.length / (ROUND_MS / 1000)),
    p50_ms: Math.round(lat[Math.floor(lat.length / 2)]! * 100) / 100,
    cpu_us_per_cycle: Math.round((cpu / lat.length) * 1e6),
    log_bytes_per_cycle: Math.round(bytes / lat.length),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** CPU µs per request line, in this process: 1,000 lines a tick (batched writes) and one line a tick (a write each). */
async function lineCost(): Promise<{ batched: number; single: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-lines-'));
  try {
    const log = createLog({ format: 'json', level: 'info', instance: 'i_bench', destination: join(dir, 'lines.log') });
    const access = new AccessLog({ logger: log.logger, all: true });
    const entry = { method: 'POST', operation: 'lease_acquire', family: 'default', route: 'lease://bench/w1/r-1', status: 200, code: 'lease_acquired', latencyMs: 1.234, waits: false };
    const measure = async (lines: number, perTick: number) => {
      const c0 = process.cpuUsage();
      for (let i = 0; i < lines; i += perTick) {
        for (let k = 0; k < perTick; k++) access.record({ ...entry, correlationId: `c_bench${i + k}` });
        await new Promise((r) => setImmediate(r));
      }
      log.flush();
      const c = process.cpuUsage(c0);
      return Math.round(((c.user + c.system) / lines) * 10) / 10;
    };
    await measure(20_000, 1_000); // warm-up
    return { batched: await measure(100_000, 1_000), single: await measure(20_000, 1) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const cost = await lineCost();
  console.log(`one request line, in process: ${cost.batched} µs CPU when many are written a tick, ${cost.single} µs when one is (the cost of an empty tick included)`);
  const build = spawnSync('npm', ['run', '--silent', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build:server failed');
  const off = await start('access log off', 'off');
  const on = await start('access log on', 'on');
  console.log(`acquire → release cycles, ${WORKERS} workers, ${ROUNDS} interleaved rounds of ${ROUND_MS / 1000} s each`);
  console.log('| round | server | cycles/s | p50 ms | server CPU µs/cycle | log bytes/cycle |');
  console.log('|--:|--|--:|--:|--:|--:|');
  const results: Round[] = [];
  const ratios: Array<{ throughput: number; cpu: number }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    // Alternate which goes first, so neither always follows the other.
    const pair: Record<string, Round> = {};
    for (const s of i % 2 === 0 ? [off, on] : [on, off]) {
      const r = (pair[s.name] = await round(s));
      results.push(r);
      console.log(`| ${i + 1} | ${r.server} | ${r.cycles_per_s.toLocaleString('en')} | ${r.p50_ms} | ${r.cpu_us_per_cycle} | ${r.log_bytes_per_cycle} |`);
    }
    const [a, b] = [pair[on.name]!, pair[off.name]!];
    ratios.push({ throughput: a.cycles_per_s / b.cycles_per_s, cpu: a.cpu_us_per_cycle / b.cpu_us_per_cycle });
  }
  const of = (s: Server, k: keyof Round) => median(results.filter((r) => r.server === s.name).map((r) => r[k] as number));
  const ratio = median(ratios.map((r) => r.throughput));
  const cpuRatio = median(ratios.map((r) => r.cpu));
  console.log(
    `\nmedians: off ${of(off, 'cycles_per_s').toLocaleString('en')} cycles/s (${of(off, 'cpu_us_per_cycle')} µs CPU/cycle), ` +
      `on ${of(on, 'cycles_per_s').toLocaleString('en')} cycles/s (${of(on, 'cpu_us_per_cycle')} µs CPU/cycle, ${of(on, 'log_bytes_per_cycle')} log bytes/cycle)`,
  );
  console.log(`per-round on/off throughput ratios: ${ratios.map((r) => r.throughput.toFixed(2)).join(', ')}`);
  console.log(`median on / off: throughput ${ratio.toFixed(3)}, server CPU per cycle ${cpuRatio.toFixed(3)} (target: throughput within 10 %, ≥ 0.90)`);
  for (const s of [off, on]) s.proc.kill('SIGTERM');
  await sleep(300);
}

runMain(main, 'bench-logging');
