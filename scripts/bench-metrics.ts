/**
 * `npm run bench:metrics`: the cost of metrics to the lease path. Runs
 * `npm run bench` (scripts/bench.ts, every server a child process) with
 * LEASEHOLD_METRICS=on and =off, interleaved ABBA (on, off, off, on, …) so
 * that a drift in the machine's speed weighs on both alike, then prints every
 * run and both medians with their difference. Target: medians within 5 %.
 *
 * bench.ts measures how busy the machine was just before it starts; a run
 * that began on a busy machine (over 10 % of all cores, someone else's work)
 * is run again, at most twice, and every attempt is printed.
 *
 * Knobs: BENCH_METRICS_RUNS (5 per mode), and bench.ts's own
 * (BENCH_DURATION_S, BENCH_WARMUP_S; BENCH_LIST_LEASES defaults to 10,000
 * here, not 100,000, so that ten runs take minutes: the LIST figures are
 * compared too, on the smaller inventory). Writes bench-metrics-results.json.
 */

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.BENCH_METRICS_RUNS ?? 5);

type Mode = 'on' | 'off';

interface Figures {
  mode: Mode;
  /** Leasehold acquire → release cycles per second at 1, 16 and 64 workers. */
  c1: number;
  c16: number;
  c64: number;
  /** Server CPU µs per cycle at 64 workers. */
  cpu64: number;
  /** Leasehold / floor at 64 workers (the floor absorbs machine drift). */
  ratio64: number;
  /** LIST: p50 ms of the cursor walk of lease://acme/**. */
  walkP50: number;
  busy: number;
}

interface BenchResults {
  machine: { busy_before_run: number };
  cycles: { pairs: Array<{ workers: number; ratio: number; leasehold: { cycles_per_s: number; server_cpu_us_per_cycle: number } }> };
  list: { results: Array<{ case: string; p50_ms: number }> };
}

function runOnce(mode: Mode, n: number): Figures {
  console.log(`\n=== run ${n}: LEASEHOLD_METRICS=${mode} ===`);
  const started = Date.now();
  const r = spawnSync('npm', ['run', '--silent', 'bench'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    env: { ...process.env, LEASEHOLD_METRICS: mode, BENCH_LIST_LEASES: process.env.BENCH_LIST_LEASES ?? '10000' },
  });
  if (r.status !== 0) {
    console.log(r.stdout);
    throw new Error(`npm run bench (LEASEHOLD_METRICS=${mode}) failed with ${r.status}`);
  }
  const out = JSON.parse(readFileSync(join(ROOT, 'bench-results.json'), 'utf8')) as BenchResults;
  const at = (w: number) => out.cycles.pairs.find((p) => p.workers === w)!;
  const f: Figures = {
    mode,
    c1: at(1).leasehold.cycles_per_s,
    c16: at(16).leasehold.cycles_per_s,
    c64: at(64).leasehold.cycles_per_s,
    cpu64: at(64).leasehold.server_cpu_us_per_cycle,
    ratio64: at(64).ratio,
    walkP50: out.list.results.find((x) => x.case.startsWith('(b)'))?.p50_ms ?? NaN,
    busy: out.machine.busy_before_run,
  };
  console.log(`${JSON.stringify(f)} (${Math.round((Date.now() - started) / 1000)} s)`);
  return f;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function main(): void {
  const build = spawnSync('npm', ['run', '--silent', 'build:server'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build:server failed');
  const order: Mode[] = [];
  for (let i = 0; order.length < 2 * RUNS; i++) order.push(...((i % 2 === 0 ? ['on', 'off'] : ['off', 'on']) as Mode[]));
  const attempts: Figures[] = [];
  const runs = order.map((mode, i) => {
    let f = runOnce(mode, i + 1);
    for (let retry = 0; f.busy > 0.1 && retry < 2; retry++) {
      attempts.push(f);
      console.log(`the machine was ${Math.round(f.busy * 100)} % busy before that run: running it again`);
      f = runOnce(mode, i + 1);
    }
    return f;
  });
  if (attempts.length > 0) {
    console.log('\nattempts set aside (the machine was busy when they began):');
    for (const a of attempts) console.log(JSON.stringify(a));
  }

  const keys: Array<[keyof Figures, string, 'higher' | 'lower']> = [
    ['c64', 'cycles/s at 64 workers', 'higher'],
    ['c16', 'cycles/s at 16 workers', 'higher'],
    ['c1', 'cycles/s at 1 worker', 'higher'],
    ['cpu64', 'server CPU µs/cycle at 64', 'lower'],
    ['ratio64', 'leasehold/floor at 64', 'higher'],
    ['walkP50', 'LIST walk p50 ms', 'lower'],
  ];
  console.log('\nall runs (in the order they ran):\n');
  console.log(['run', 'metrics', ...keys.map((k) => k[1]), 'busy before'].join(' | '));
  runs.forEach((r, i) => console.log([i + 1, r.mode, ...keys.map(([k]) => r[k]), `${Math.round(r.busy * 100)}%`].join(' | ')));
  console.log('\nmedians:\n');
  const summary = keys.map(([k, label, better]) => {
    const on = median(runs.filter((r) => r.mode === 'on').map((r) => r[k] as number));
    const off = median(runs.filter((r) => r.mode === 'off').map((r) => r[k] as number));
    const diffPct = Math.round(((on - off) / off) * 1000) / 10;
    // A positive cost is metrics making it worse.
    const costPct = better === 'higher' ? -diffPct : diffPct;
    console.log(`${label}: on ${on}, off ${off}, on vs off ${diffPct > 0 ? '+' : ''}${diffPct} % (cost ${costPct} %)`);
    return { metric: k, label, on, off, diff_pct: diffPct, cost_pct: costPct };
  });
  const head = summary[0]!;
  console.log(`\ntarget: medians of ${head.label} within 5 % → ${Math.abs(head.diff_pct) < 5 ? 'met' : 'NOT met'} (${head.diff_pct} %)`);
  writeFileSync(join(ROOT, 'bench-metrics-results.json'), `${JSON.stringify({ date: new Date().toISOString(), runs, set_aside: attempts, summary }, null, 2)}\n`);
  console.log('raw results: bench-metrics-results.json');
}

main();
