/**
 * The acquire path's cost with 1,000 policies against none (docs/benchmarks.md).
 * Two engines on embedded stores, one with no policy and one with 1,000
 * overlapping policies in the family; rounds alternate between them
 * (interleaved, so machine noise hits both alike) and each round times
 * `OPS` acquire + release pairs. Prints the median per-pair time of each and
 * their ratio. Usage: npm run bench:policies [-- rounds ops]
 */

import { PolicyIndex } from '../server/engine/policies/policies';
import { engineFixture, proofOf, type EngineFixture } from '../server/testing/engine-fixture';

const ROUNDS = Number(process.argv[2] ?? 10);
const OPS = Number(process.argv[3] ?? 2_000);
const NONE = { ttlMinMs: null, ttlMaxMs: null, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs: null, maxWaiters: null };

async function round(f: EngineFixture, session: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    const route = `lease://realm${i % 50}/area${i % 7}/r${i}`;
    const a = await f.acquire(route, session, { ttlMs: 30_000 });
    await f.engine.leases.release(f.admin, route, proofOf(session, a.answer.lease));
  }
  return Number(process.hrtime.bigint() - t0) / 1e3 / OPS;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const none = await engineFixture();
const many = await engineFixture();
for (let i = 0; i < 1_000; i++) {
  const sel = i % 3 === 0 ? `lease://realm${i % 50}/area${i % 7}/*` : i % 3 === 1 ? `lease://realm${i}/**` : `lease://*/area${i}/r${i}`;
  await many.engine.policies.set(many.admin, sel, { ...NONE, ttlMaxMs: 60_000 + i }, 'benchmark policy set');
}
const s0 = await none.open('bench', 300_000);
const s1 = await many.open('bench', 300_000);
await round(none, s0);
await round(many, s1);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  a.push(await round(none, s0));
  b.push(await round(many, s1));
}
const ma = median(a);
const mb = median(b);
console.log(`acquire+release, ${ROUNDS} interleaved rounds of ${OPS} (SQLite, in-process engine)`);
console.log(`  no policies:    median ${ma.toFixed(1)} µs per pair`);
console.log(`  1,000 policies: median ${mb.toFixed(1)} µs per pair`);
console.log(`  ratio (1,000 / none): ${(mb / ma).toFixed(3)}`);
// The lookup itself, alone: what 1,000 policies add to each acquire and renew.
const index = new PolicyIndex(await many.engine.parts.store.atomic((tx) => tx.policies.listPolicies('default')));
const t0 = process.hrtime.bigint();
const N = 200_000;
let hits = 0;
for (let i = 0; i < N; i++) if (index.match(`lease://realm${i % 50}/area${i % 7}/r${i}`)) hits++;
const perMatch = Number(process.hrtime.bigint() - t0) / 1e3 / N;
console.log(`  policy lookup alone (1,000 policies, ${index.size} indexed): ${perMatch.toFixed(2)} µs per route (${((perMatch / ma) * 100).toFixed(2)} % of a pair; ${hits} of ${N} matched)`);
await none.close();
await many.close();
