/**
 * Audit trail figures on the embedded store: batch insert rate, bytes per
 * row on disk, query latency for the console's filters at depth, and how
 * long one retention step (2,000 rows) holds the writer.
 *
 *   npm run bench:audit                      # 1,000,000 rows
 *   BENCH_AUDIT_ROWS=200000 npm run bench:audit
 */

import { millis } from '../server/store/millis';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PRUNE_BATCH } from '../server/engine/audit/audit';
import { openStore } from '../server/store/factory';
import type { AuditScan, NewAuditRow } from '../server/store/types';
import { prng, tempDir } from '../server/testing/harness';

const ROWS = Number(process.env.BENCH_AUDIT_ROWS ?? 1_000_000);
const BATCH = 1_000;
const dir = tempDir('leasehold-bench-audit-');
const rand = prng(7);
const start = Date.parse('2026-11-01T00:00:00.000Z');

function row(i: number): NewAuditRow {
  const r = rand();
  const eventType = r < 0.6 ? 'lease_renew' : r < 0.75 ? 'lease_acquire' : r < 0.9 ? 'lease_release' : r < 0.95 ? 'lease_expire' : r < 0.9999 ? 'session_open' : 'lease_force_release';
  const routeless = eventType === 'session_open';
  return {
    time: millis(start + i * 10),
    eventType,
    family: 'default',
    route: routeless ? null : `lease://realm-${i % 20}/area-${i % 50}/resource-${i % 5_000}`,
    tokenId: 'tk_abcdefghijklmnop',
    subjectTokenId: null,
    ownerId: `worker-${i % 300}`,
    incarnation: `hi_${(i % 3_000).toString(36).padStart(16, 'x')}`,
    result: eventType === 'lease_renew' ? 'lease_renewed' : `${eventType.slice(6)}d`,
    fencingToken: i,
    reason: eventType === 'lease_force_release' ? 'benchmark operator reason' : null,
    correlationId: `c_ABCDEFGH${i.toString(36)}`,
    latencyMs: i % 7,
  };
}

function p50(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function main(): Promise<void> {
  let now = start + ROWS * 10;
  const store = await openStore(`sqlite:${dir}`, { clock: () => millis(now) });
  const t0 = performance.now();
  for (let i = 0; i < ROWS; i += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, ROWS - i) }, (_, k) => row(i + k));
    await store.atomic((tx) => tx.insertAudit(rows));
  }
  const insertS = (performance.now() - t0) / 1000;
  // One busy route over the last 7 days (an event every 10 s: 60,480 rows),
  // read by the lease timeline oldest first.
  const WEEK = 7 * 86_400_000;
  const busy: NewAuditRow[] = [];
  for (let t = now - WEEK; t < now; t += 10_000) busy.push({ ...row(0), route: 'lease://busy/area/route', eventType: 'lease_renew', result: 'lease_renewed', time: millis(t) });
  for (let i = 0; i < busy.length; i += BATCH) await store.atomic((tx) => tx.insertAudit(busy.slice(i, i + BATCH)));
  await store.close();
  const bytes = statSync(join(dir, 'leasehold.sqlite')).size;
  console.log(`rows                     ${ROWS.toLocaleString('en')}`);
  console.log(`insert (batches of ${BATCH})  ${Math.round(ROWS / insertS).toLocaleString('en')} rows/s`);
  console.log(`on disk                  ${Math.round(bytes / ROWS)} bytes/row with indexes (${(bytes / 2 ** 20).toFixed(0)} MiB)`);

  const reopened = await openStore(`sqlite:${dir}`, { clock: () => millis(now) });
  const base: AuditScan = { family: 'default', triple: [null, null, null], routeless: true, before: null, limit: 101, budget: 10_000 };
  const cases: Array<[string, AuditScan]> = [
    ['newest page, everything', base],
    ['newest page, one realm (lease://realm-3/**)', { ...base, triple: ['realm-3', null, null], routeless: false }],
    ['newest page, one area (lease://*/area-7/*)', { ...base, triple: [null, 'area-7', null], routeless: false }],
    ['newest page, one route', { ...base, triple: ['realm-3', 'area-3', 'resource-3'], routeless: false }],
    ['newest page, rare type (lease_force_release)', { ...base, eventType: 'lease_force_release' }],
    ['newest page, common type (lease_release)', { ...base, eventType: 'lease_release' }],
    ['page at half depth (cursor), everything', { ...base, before: [millis(start + (ROWS / 2) * 10), ROWS / 2] }],
    ['timeline: busy route, 7 d, oldest first (1,000)', { ...base, triple: ['busy', 'area', 'route'], routeless: false, since: millis(now - 7 * 86_400_000), oldestFirst: true, limit: 1001 }],
    ['timeline: busy route, 7 d, page at mid-week', { ...base, triple: ['busy', 'area', 'route'], routeless: false, since: millis(now - 7 * 86_400_000), oldestFirst: true, limit: 1001, before: [millis(now - 3.5 * 86_400_000), 0] }],
  ];
  for (const [name, scan] of cases) {
    const times: number[] = [];
    let n = 0;
    for (let k = 0; k < 30; k++) {
      const t = performance.now();
      n = (await reopened.atomic((tx) => tx.scanAudit(scan))).rows.length;
      times.push(performance.now() - t);
    }
    console.log(`${name.padEnd(46)} p50 ${p50(times).toFixed(2)} ms (${n} rows, budget 10,000 examined)`);
  }

  // Retention: a cap of half the rows; each step deletes up to 2,000.
  const steps: number[] = [];
  let deleted = 0;
  for (let k = 0; k < 100; k++) {
    const t = performance.now();
    deleted += await reopened.atomic((tx) => tx.pruneAudit(millis(0), ROWS / 2, PRUNE_BATCH));
    steps.push(performance.now() - t);
  }
  const sorted = steps.slice().sort((a, b) => a - b);
  const p90 = sorted[Math.floor(sorted.length * 0.9)]!;
  console.log(
    `retention step (${PRUNE_BATCH} rows)  first ${steps[0]!.toFixed(1)} ms (cold cache), then p50 ${p50(steps.slice(1)).toFixed(1)} ms, p90 ${p90.toFixed(1)} ms, max of the rest ${Math.max(...steps.slice(1)).toFixed(1)} ms (${deleted} deleted in ${steps.length} steps)`,
  );
  now += 1;
  await reopened.close();
  rmSync(dir, { recursive: true, force: true });
}

void main();
