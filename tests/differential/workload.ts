/**
 * Differential test: one seeded random workload (sessions, acquires with and
 * without waiting, renews, releases, checkpoints, force-release, revoke,
 * expiry, lists, audit reads) run in lockstep against SQLite and against two
 * PostgreSQL instances on one database (requests alternating between them)
 * must get the same answer codes, op by op, and end in the same state.
 *
 * Time is made comparable, not raced: both runs use a manual clock that
 * only the workload moves (`tick`), and the background sweep is off, so
 * expiry happens where both runs observe it identically: lazily, when an
 * operation touches a route or session, and in explicit `sweep` operations.
 * A waiting acquire is not awaited: after each operation the test reads the
 * route's queue length (inspect) and waits for exactly the waiters the
 * server says it took off the queue. Fencing tokens and ids are compared
 * for shape, not value: the order in which one sweep ends leases due at the
 * same instant is left open by the contract, and that order numbers them.
 *
 * CI runs five seeds, one file each (`seed-*.test.ts`: node's runner times
 * out a whole file at once). A failure names the seed and the operation;
 * replay any seed with `LEASEHOLD_DIFF_SEED=<seed> node --import tsx --test
 * tests/differential/seed-1.test.ts` (LEASEHOLD_DIFF_OPS sets the length,
 * 2,000 by default).
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, ManualClock, prng, rid, startTestServer, type Reply, type TestServer } from '../../server/testing/harness';
import type { StoreKind } from '../../lib/wire';

const OPS = Number(process.env.LEASEHOLD_DIFF_OPS ?? 2_000);
const ROUTES = ['a', 'b'].flatMap((area) => [0, 1, 2, 3, 4].map((i) => `lease://dt/${area}/r${i}`));
const REASON = 'differential test: operator action';
/** A waiter still queued after this many operations has its route forced free. */
const WAITER_MAX_AGE = 60;

interface Run {
  name: StoreKind;
  s: TestServer;
  clock: ManualClock;
}

interface Grant {
  session: number;
  /** Per run: the lease as that run granted it. */
  lease: Array<{ lease_id: string; fencing_token: number }>;
}

interface Waiter {
  route: string;
  session: number;
  op: number;
  /** Per run: the pending answer, and the answer once settled. */
  pending: Array<Promise<Reply>>;
  settled: Array<Reply | undefined>;
}

const code = (r: Reply): string => `${r.status} ${r.body?.code ?? '-'}`;

async function startRun(name: Run['name']): Promise<Run> {
  const clock = new ManualClock();
  // No background sweep: expiry only where the workload can see it (see above).
  const s = await startTestServer({ backend: name, clock: clock.now, engine: { sweepIntervalMs: 2 ** 31 - 1 } });
  return { name, s, clock };
}

async function runSeed(seed: number, sqlite: Run, postgres: Run): Promise<{ ops: number; codes: Map<string, number> }> {
  const runs = [sqlite, postgres];
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const sessions: Array<{ ids: string[]; alive: boolean }> = [];
  const grants = new Map<string, Grant[]>();
  let waiters: Waiter[] = [];
  const codes = new Map<string, number>();
  let op = 0;
  let what = '';
  /** The last operations and their answers, for the failure message. */
  const trail: string[] = [];

  const fail = (detail: string): never => {
    assert.fail(`seed ${seed} diverged at op #${op} (${what}): ${detail}\nthe operations before:\n  ${trail.slice(-12).join('\n  ')}\nreplay: LEASEHOLD_DIFF_SEED=${seed} node --import tsx --test tests/differential/seed-1.test.ts`);
  };
  /** The same request on both runs (per-run bodies), compared by answer code. */
  const both = async (method: string, path: string, body: (run: number) => unknown): Promise<Reply[]> => {
    // The two runs are independent servers: asked at the same time.
    const out = await Promise.all(runs.map((run, i) => run.s.call(method, path, body(i))));
    for (const r of out) if (r.status >= 500) fail(`a 5xx: ${r.text}`);
    if (code(out[0]!) !== code(out[1]!)) fail(`sqlite ${code(out[0]!)} vs postgres ${code(out[1]!)}: ${out[0]!.text.slice(0, 200)} / ${out[1]!.text.slice(0, 200)}`);
    codes.set(code(out[0]!), (codes.get(code(out[0]!)) ?? 0) + 1);
    trail.push(`#${op} ${what} → ${code(out[0]!)}`);
    return out;
  };
  const session = (): number => {
    const live = sessions.map((s, i) => (s.alive ? i : -1)).filter((i) => i >= 0);
    return live.length > 0 && rnd() < 0.9 ? pick(live) : Math.floor(rnd() * sessions.length);
  };
  const latest = (route: string): Grant | undefined => {
    const g = grants.get(route);
    if (!g || g.length === 0) return undefined;
    // Mostly the newest grant; sometimes an older one (a stale holder).
    return rnd() < 0.85 ? g[g.length - 1] : pick(g);
  };
  const granted = (route: string, s: number, rs: Reply[]) => {
    const list = grants.get(route) ?? [];
    list.push({ session: s, lease: rs.map((r) => ({ lease_id: r.body.lease.lease_id, fencing_token: r.body.lease.fencing_token })) });
    grants.set(route, list.slice(-4));
  };
  const noteSession = (s: number, rs: Reply[]) => {
    if (rs[0]!.body?.code === 'session_not_found') sessions[s]!.alive = false;
  };

  /** Wait for exactly the waiters each run's server took off a queue, and compare them. */
  const settleWaiters = async (): Promise<void> => {
    for (const route of new Set(waiters.map((w) => w.route))) {
      const mine = waiters.filter((w) => w.route === route);
      await Promise.all(runs.map(async (_, i) => {
        const r = await runs[i]!.s.call('GET', leasePath(route));
        const queued = r.status === 200 ? (r.body.lease.waiters as number) : 0;
        const gone = mine.length - queued;
        const deadline = Date.now() + 10_000;
        while (mine.filter((w) => w.settled[i] !== undefined).length < gone) {
          if (Date.now() > deadline) fail(`${runs[i]!.name}: ${gone} waiter(s) of ${route} left the queue but were not answered`);
          await new Promise((res) => setTimeout(res, 2));
        }
      }));
    }
    const done = waiters.filter((w) => w.settled.some((x) => x !== undefined));
    for (const w of done) {
      const [a, b] = w.settled;
      if (!a || !b) fail(`the waiter queued at op #${w.op} on ${w.route} was answered by ${a ? 'sqlite' : 'postgres'} only`);
      if (code(a!) !== code(b!)) fail(`the waiter queued at op #${w.op}: sqlite ${code(a!)} vs postgres ${code(b!)}`);
      if (a!.status === 200) {
        if (a!.body.lease.queued !== b!.body.lease.queued) fail(`queued flag differs for the waiter of op #${w.op}`);
        granted(w.route, w.session, [a!, b!]);
      }
      codes.set(`waiter ${code(a!)}`, (codes.get(`waiter ${code(a!)}`) ?? 0) + 1);
    }
    waiters = waiters.filter((w) => !done.includes(w));
  };

  /** Force a route free on both runs (the current holder, as each run's inspect names it). */
  const forceFree = async (route: string): Promise<void> => {
    const holders = await Promise.all(runs.map((r) => r.s.call('GET', leasePath(route))));
    if (holders[0]!.status !== holders[1]!.status) fail(`inspect ${route}: sqlite ${code(holders[0]!)} vs postgres ${code(holders[1]!)}`);
    if (holders[0]!.status !== 200) return;
    await both('POST', leasePath(route, 'force-release'), (i) => ({ request_id: rid('d'), reason: REASON, expected_fencing_token: holders[i]!.body.lease.fencing_token }));
  };

  for (op = 0; op < OPS; op++) {
    const old = waiters.find((w) => op - w.op > WAITER_MAX_AGE);
    const r = rnd();
    if (old) {
      what = `force-release ${old.route} for an old waiter`;
      await forceFree(old.route);
    } else if (sessions.length === 0 || r < 0.08) {
      const ttl = pick([2_000, 5_000, 20_000]);
      what = `open session ttl ${ttl}`;
      const rs = await both('POST', '/api/v1/sessions', () => ({ owner_id: `o${sessions.length % 6}`, ttl_ms: ttl }));
      sessions.push({ ids: rs.map((x) => x.body.session.session_id as string), alive: true });
    } else if (r < 0.16) {
      const s = session();
      what = `keepalive s${s}`;
      noteSession(s, await both('POST', '/api/v1/sessions/keepalive', (i) => ({ session_id: sessions[s]!.ids[i] })));
    } else if (r < 0.19) {
      const s = session();
      what = `close s${s}`;
      const rs = await both('POST', '/api/v1/sessions/close', (i) => ({ session_id: sessions[s]!.ids[i] }));
      if (rs[0]!.status === 200 && rs[0]!.body.released !== rs[1]!.body.released) fail(`released ${rs[0]!.body.released} vs ${rs[1]!.body.released}`);
      sessions[s]!.alive = false;
    } else if (r < 0.39) {
      const s = session();
      const route = pick(ROUTES);
      const ttl = pick([1_000, 3_000, 10_000]);
      what = `acquire ${route} by s${s} ttl ${ttl}`;
      const rs = await both('POST', leasePath(route, 'acquire'), (i) => ({ session_id: sessions[s]!.ids[i], request_id: rid('d'), ttl_ms: ttl }));
      noteSession(s, rs);
      if (rs[0]!.status === 200) granted(route, s, rs);
    } else if (r < 0.45) {
      const s = session();
      const route = pick(ROUTES);
      what = `acquire ${route} by s${s}, waiting`;
      const w: Waiter = { route, session: s, op, pending: [], settled: [undefined, undefined] };
      await Promise.all(runs.map(async (run, i) => {
        const before = await run.s.call('GET', leasePath(route));
        const n = before.status === 200 ? (before.body.lease.waiters as number) : 0;
        const p = run.s.call('POST', leasePath(route, 'acquire'), { session_id: sessions[s]!.ids[i], request_id: rid('d'), ttl_ms: 10_000, wait_ms: 30_000 });
        w.pending.push(p);
        void p.then((x) => (w.settled[i] = x));
        // Answered at once (granted or refused), or queued: wait until one of the two is visible.
        for (;;) {
          if (w.settled[i]) break;
          const now = await run.s.call('GET', leasePath(route));
          if (now.status === 200 && (now.body.lease.waiters as number) > n) break;
          await new Promise((res) => setTimeout(res, 2));
        }
      }));
      waiters.push(w);
      // A waiter answered at once on one run must be answered at once on the other.
      if ((w.settled[0] === undefined) !== (w.settled[1] === undefined)) fail(`queued on ${w.settled[0] ? 'postgres' : 'sqlite'} only`);
    } else if (r < 0.57) {
      const route = pick(ROUTES);
      const g = latest(route);
      if (!g) continue;
      const ttl = pick([1_000, 3_000, 10_000]);
      what = `renew ${route} by s${g.session} ttl ${ttl}`;
      // (Every random choice is made once, outside the per-run bodies, so both runs see the same workload.)
      noteSession(g.session, await both('POST', leasePath(route, 'renew'), (i) => ({ session_id: sessions[g.session]!.ids[i], request_id: rid('d'), ...g.lease[i], ttl_ms: ttl })));
    } else if (r < 0.65) {
      const route = pick(ROUTES);
      const g = latest(route);
      if (!g) continue;
      what = `release ${route} by s${g.session}`;
      noteSession(g.session, await both('POST', leasePath(route, 'release'), (i) => ({ session_id: sessions[g.session]!.ids[i], request_id: rid('d'), ...g.lease[i] })));
    } else if (r < 0.71) {
      const route = pick(ROUTES);
      const g = latest(route);
      if (!g) continue;
      const value = { step: op, note: pick(['x', 'y', 'z']) };
      what = `checkpoint ${route} by s${g.session}`;
      noteSession(g.session, await both('PUT', leasePath(route, 'checkpoint'), (i) => ({ session_id: sessions[g.session]!.ids[i], request_id: rid('d'), ...g.lease[i], value })));
    } else if (r < 0.74) {
      const route = pick(ROUTES);
      what = `read checkpoint ${route}`;
      const rs = await both('GET', leasePath(route, 'checkpoint'), () => undefined);
      if (rs[0]!.status === 200) assert.deepEqual([rs[0]!.body.value, rs[0]!.body.version], [rs[1]!.body.value, rs[1]!.body.version], `seed ${seed} op #${op}: checkpoint`);
    } else if (r < 0.77 || r < 0.8) {
      const route = pick(ROUTES);
      const g = latest(route);
      if (!g) continue;
      const revoke = r >= 0.77;
      const close = revoke && rnd() < 0.5;
      what = `${revoke ? `revoke${close ? ' and close' : ''}` : 'force-release'} ${route} (s${g.session})`;
      const rs = await both('POST', leasePath(route, revoke ? 'revoke' : 'force-release'), (i) => ({
        request_id: rid('d'),
        reason: REASON,
        expected_fencing_token: g.lease[i]!.fencing_token,
        ...(revoke ? { close_session: close } : {}),
      }));
      if (close && rs[0]!.status === 200) sessions[g.session]!.alive = false;
    } else if (r < 0.85) {
      const ms = pick([300, 800, 1_500, 2_500]);
      what = `tick ${ms} ms`;
      trail.push(`#${op} ${what}`);
      for (const run of runs) run.clock.advance(ms);
      continue;
    } else if (r < 0.88) {
      what = 'sweep';
      trail.push(`#${op} sweep`);
      // Either instance on PostgreSQL: expiry is the store's, whoever runs it.
      for (const run of runs) await run.s.apps[op % run.s.apps.length]!.engine.sweep();
    } else if (r < 0.93) {
      what = 'list leases';
      const rs = await both('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://dt/**')}&limit=100`, () => undefined);
      const routes = rs.map((x) => (x.body.items as Array<{ route: string; owner_id: string }>).map((l) => `${l.route} ${l.owner_id}`).join());
      if (routes[0] !== routes[1]) fail(`listed ${routes[0]} vs ${routes[1]}; ${JSON.stringify(rs.map((x) => x.body.items))}; now ${runs[0]!.clock.t}`);
      continue;
    } else if (r < 0.95) {
      what = 'list sessions';
      const rs = await both('GET', '/api/v1/sessions?limit=1000', () => undefined);
      if (rs[0]!.body.items.length !== rs[1]!.body.items.length) fail(`${rs[0]!.body.items.length} vs ${rs[1]!.body.items.length} sessions`);
      continue;
    } else if (r < 0.97) {
      what = 'audit read';
      await both('GET', `/api/v1/audit?limit=${pick([1, 10, 100])}`, () => undefined);
      continue;
    } else {
      const route = pick(ROUTES);
      what = `inspect ${route}`;
      await both('GET', leasePath(route), () => undefined);
    }
    if (waiters.length > 0) await settleWaiters();
  }

  // Let every waiter go, then compare what each store holds.
  what = 'draining the waiters';
  for (let guard = 0; waiters.length > 0 && guard < 200; guard++) {
    await forceFree(waiters[0]!.route);
    await settleWaiters();
  }
  if (waiters.length > 0) fail('waiters left after draining');
  what = 'final state';
  const state = await Promise.all(runs.map((run) => finalState(run)));
  assert.deepEqual(state[1], state[0], `seed ${seed}: final state differs (sqlite expected, postgres actual)`);
  return { ops: OPS, codes };
}

/** Everything a client can read back, without ids and fencing tokens (see the file comment). */
async function finalState(run: Run): Promise<unknown> {
  const leases = await run.s.call('GET', `/api/v1/leases?selector=${encodeURIComponent('lease://dt/**')}&limit=1000`);
  const sessions = await run.s.call('GET', '/api/v1/sessions?limit=1000');
  const checkpoints: unknown[] = [];
  for (const route of ROUTES) {
    const c = await run.s.call('GET', leasePath(route, 'checkpoint'));
    checkpoints.push(c.status === 200 ? [route, c.body.value, c.body.version] : [route, c.status]);
  }
  await run.s.flushAudit();
  const audit = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const page: Reply = await run.s.call('GET', `/api/v1/audit?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(page.status, 200, page.text);
    for (const e of page.body.items as Array<{ event_type: string; result: string; route: string | null }>) {
      const k = `${e.event_type} ${e.result} ${e.route ?? '-'}`;
      audit.set(k, (audit.get(k) ?? 0) + 1);
    }
    cursor = page.body.next_cursor as string | null;
  } while (cursor);
  return {
    leases: (leases.body.items as Array<Record<string, unknown>>).map((l) => [l.route, l.owner_id, l.expires_at, l.renewal_count, l.waiters]),
    sessions: (sessions.body.items as Array<Record<string, unknown>>).map((s) => [s.owner_id, s.expires_at, s.lease_count ?? s.leases]).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    checkpoints,
    audit: [...audit.entries()].sort(([a], [b]) => a.localeCompare(b)),
  };
}

/** The differential test of one seed (LEASEHOLD_DIFF_SEED replaces it, to replay another). */
export function differentialTest(defaultSeed: number): void {
  const seed = Number(process.env.LEASEHOLD_DIFF_SEED ?? defaultSeed);
  test(`seed ${seed}: ${OPS} random operations get the same answers and end in the same state on SQLite and on two PostgreSQL instances`, { timeout: 600_000 }, async (t) => {
    const sqlite = await startRun('sqlite');
    const postgres = await startRun('postgres');
    try {
      const { codes } = await runSeed(seed, sqlite, postgres);
      t.diagnostic(`seed ${seed}: ${[...codes.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([c, n]) => `${c} ×${n}`).join(', ')}`);
      // The workload must exercise what it claims to, or an equal trace says little.
      for (const want of ['200 lease_acquired', '200 lease_renewed', '200 lease_released', '200 checkpoint_written', '200 lease_force_released', '200 lease_revoked', '409 lease_lost', '404 session_not_found', 'waiter 200 lease_acquired']) {
        assert.ok((codes.get(want) ?? 0) > 0, `seed ${seed}: no "${want}" in the workload`);
      }
    } finally {
      await sqlite.s.close();
      await postgres.s.close();
    }
  });
}
