/**
 * PostgreSQL batches per family (docs/design.md "PostgreSQL: row locks, one batch per
 * family"), observed in the database itself: rows written by one
 * transaction share its `xmin`. Steps of one family that arrive together
 * commit in far fewer transactions than steps; each keeps its own
 * all-or-nothing outcome (also once it writes through under a savepoint);
 * a batch that cannot commit fails every step in it and commits nothing.
 * A batch's size is bounded by its work, and a step too close to its
 * limit is refused before it runs. These are PostgreSQL's alone: SQLite's
 * batches are no transaction of many steps cut short together.
 */

import { after, afterEach, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { millis } from '../millis';
import { KEEPING_SHARE, MAX_BATCH_WORK, PgStore } from './pg-store';
import { StoreUnavailableError, type LeaseRow, type SessionRow } from '../types';
import { createTestDatabase, type TestDatabase } from '../../testing/pg';
import { REARM_SQL } from '../plan/expiry';

let db: TestDatabase;
let store: PgStore;
let sql: pg.Client;

function lease(route: string, token: number): LeaseRow {
  return {
    family: 'f', route, leaseId: `ls_${route}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata: null,
  };
}

function session(idHash: string, incarnation: string): SessionRow {
  return { family: 'f', idHash, incarnation, ownerId: 'o', ttlMs: 5_000, createdAt: millis(1), expiresAt: millis(10_000) };
}

/** The transaction id that wrote each listed row of `table` (by its route, or session hash). */
async function writers(table: 'leases' | 'sessions' | 'waiters', keys: readonly string[]): Promise<Map<string, string>> {
  const col = table === 'sessions' ? 'id_hash' : table === 'waiters' ? 'request_id' : 'route';
  const r = await sql.query<{ k: string; x: string }>(`SELECT ${col} AS k, xmin::text AS x FROM ${table} WHERE ${col} = ANY($1::text[])`, [keys]);
  return new Map(r.rows.map((row) => [row.k, row.x]));
}

/** Which steps (by index) committed together: the groups of equal transaction ids, in order. */
function batchesOf(xids: ReadonlyArray<string | undefined>): number[][] {
  const groups = new Map<string | undefined, number[]>();
  xids.forEach((x, i) => groups.set(x, [...(groups.get(x) ?? []), i]));
  return [...groups.values()];
}

/** `holder` takes family f's lock in a step that keeps it until `release()` is called. */
async function holdLock(holder: PgStore): Promise<{ release(): void; done: Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const hasLock = new Promise<void>((r) => (locked = r));
  const done = holder.atomic(async (tx) => {
    await tx.bumpRevision('f');
    locked();
    await held;
  }, { family: 'f' });
  await hasLock;
  return { release, done };
}

/** Until a batch waits for a lock in the database (seen in pg_stat_activity, a bounded number of looks). */
async function someBatchWaitsForTheLock(): Promise<void> {
  for (let i = 0; ; i++) {
    const waiting = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (waiting.rows[0]!.n > 0) return;
    assert.ok(i < 2_000, 'the batch never waited for the lock');
  }
}

before(async () => {
  db = await createTestDatabase();
  sql = new pg.Client({ connectionString: db.url });
  await sql.connect();
});
after(async () => {
  await sql.end();
  await db.drop();
});
beforeEach(async () => {
  store = await PgStore.open({ url: db.url });
  await sql.query('TRUNCATE leases, sessions, waiters, families, idempotency');
});
afterEach(async () => {
  await store.close();
});

test('64 concurrent steps of one family commit in far fewer transactions than steps, with contiguous revisions', async () => {
  const before = { ...store.batchStats };
  const routes = Array.from({ length: 64 }, (_, i) => `lease://b/r/${i}`);
  const revs = await Promise.all(
    routes.map((route) =>
      store.atomic(async (tx) => {
        const rev = await tx.bumpRevision('f');
        await tx.insertLease(lease(route, rev));
        return rev;
        // The holder's session is hinted as the engine's acquire hints it (its lease count moves with the lease).
      }, { family: 'f', prefetch: { route, sessionHash: 'h1' } }),
    ),
  );
  assert.deepEqual([...revs].sort((a, b) => a - b), Array.from({ length: 64 }, (_, i) => i + 1));
  const xids = new Set((await writers('leases', routes)).values());
  assert.equal((await writers('leases', routes)).size, 64, 'every lease committed');
  assert.ok(xids.size <= 4, `64 steps committed in ${xids.size} transactions`);
  assert.equal(store.batchStats.steps - before.steps, 64);
  assert.equal(store.batchStats.batches - before.batches, xids.size, 'one transaction per batch');
  assert.equal(await store.atomic((tx) => tx.revision('f')), 64);
});

test('a step that throws inside a batch leaves the others\' effects and none of its own, also after writing through', async () => {
  const waiter = (requestId: string) => ({
    family: 'f', route: 'lease://b/w/x', requestId, instance: store.bus.instanceId, sessionHash: 'h1', digest: 'd', ttlMs: 1_000, maxLifetimeMs: 10_000, metadata: null, deadline: millis(9_000_000_000_000), place: requestId, parked: false,
  });
  const scope = { family: 'f' };
  const before = { ...store.batchStats };
  const outcomes = await Promise.allSettled([
    // Cached writes only, then a throw.
    store.atomic(async (tx) => {
      await tx.bumpRevision('f');
      await tx.insertLease(lease('lease://b/t/a', 1));
      throw new Error('a');
    }, scope),
    store.atomic(async (tx) => {
      const rev = await tx.bumpRevision('f');
      await tx.insertLease(lease('lease://b/t/b', rev));
      return rev;
    }, scope),
    // Writes through (a waiter row, under a savepoint), then throws.
    store.atomic(async (tx) => {
      await tx.bumpRevision('f');
      await tx.insertLease(lease('lease://b/t/c', 3));
      await tx.waiters!.enqueueWaiter(waiter('w-c'));
      throw new Error('c');
    }, scope),
    // Scans after its own writes (which sees them), then throws.
    store.atomic(async (tx) => {
      await tx.insertLease(lease('lease://b/t/d', 4));
      const seen = await tx.scanLeases({ family: 'f', triple: ['b', 't', null], after: null, want: 10, budget: 100, now: millis(0) });
      throw new Error(`d saw ${seen.rows.map((r) => r.route).join(',')}`);
    }, scope),
    // Writes through and returns.
    store.atomic(async (tx) => {
      await tx.waiters!.enqueueWaiter(waiter('w-e'));
      return 'e';
    }, scope),
    store.atomic(async (tx) => {
      const rev = await tx.bumpRevision('f');
      await tx.insertLease(lease('lease://b/t/f', rev));
      return rev;
    }, scope),
  ]);
  assert.deepEqual(
    outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message)),
    ['a', 1, 'c', 'd saw lease://b/t/b,lease://b/t/d', 'e', 2],
  );
  const leases = await writers('leases', ['lease://b/t/a', 'lease://b/t/b', 'lease://b/t/c', 'lease://b/t/d', 'lease://b/t/f']);
  assert.deepEqual([...leases.keys()].sort(), ['lease://b/t/b', 'lease://b/t/f']);
  const waiters = await writers('waiters', ['w-c', 'w-e']);
  assert.deepEqual([...waiters.keys()], ['w-e']);
  // (A row written under a savepoint carries its subtransaction's id, so the batch is counted by the store.)
  assert.equal(new Set(leases.values()).size, 1, 'b and f committed in one transaction');
  assert.deepEqual({ batches: store.batchStats.batches - before.batches, steps: store.batchStats.steps - before.steps }, { batches: 1, steps: 6 });
  assert.equal(await store.atomic((tx) => tx.revision('f')), 2, 'the thrown steps\' bumps were undone');
});

test('a batch whose flush fails fails every step in it (not committed), and the next batch commits', async () => {
  const steps = Array.from({ length: 8 }, (_, i) =>
    store.atomic(async (tx) => {
      await tx.bumpRevision('f');
      // Steps 3 and 6 insert sessions with one incarnation: the flush breaks its unique index.
      await tx.insertSession(session(`s${i}`, i === 3 || i === 6 ? 'hi_same' : `hi_${i}`));
      return i;
    }, { family: 'f' }),
  );
  const outcomes = await Promise.allSettled(steps);
  for (const o of outcomes) {
    assert.equal(o.status, 'rejected');
    const e = (o as PromiseRejectedResult).reason;
    assert.ok(e instanceof StoreUnavailableError, String(e));
    assert.equal(e.maybeCommitted, false);
  }
  assert.equal((await writers('sessions', Array.from({ length: 8 }, (_, i) => `s${i}`))).size, 0, 'nothing committed');
  assert.equal(await store.atomic((tx) => tx.revision('f')), 0);
  await store.atomic(async (tx) => {
    await tx.bumpRevision('f');
    await tx.insertSession(session('s9', 'hi_9'));
  }, { family: 'f' });
  assert.equal(await store.atomic((tx) => tx.revision('f')), 1);
});

test('two stores batching one family: revisions stay contiguous and each batch sees the other\'s commits', async () => {
  const other = await PgStore.open({ url: db.url });
  try {
    const routes = Array.from({ length: 96 }, (_, i) => `lease://b/two/${i % 8}`);
    // Every step replaces its route's lease with one whose token is the new revision, checking the old token is lower.
    const results = await Promise.all(
      routes.map((route, i) =>
        (i % 2 ? store : other).atomic(async (tx) => {
          const held = await tx.getLease('f', route);
          const rev = await tx.bumpRevision('f');
          if (held) {
            assert.ok(held.fencingToken < rev, `token ${held.fencingToken} is not below ${rev}`);
            assert.ok(await tx.deleteLease('f', route, held.leaseId, held.fencingToken));
          }
          await tx.insertLease({ ...lease(route, rev), leaseId: `ls_${rev}` });
          return { route, rev, before: held?.fencingToken ?? 0 };
        }, { family: 'f', prefetch: { route } }),
      ),
    );
    assert.deepEqual(results.map((r) => r.rev).sort((a, b) => a - b), Array.from({ length: 96 }, (_, i) => i + 1));
    // Per route, each step replaced exactly the lease of the step before it: a chain with no fork.
    for (let k = 0; k < 8; k++) {
      const chain = results.filter((r) => r.route === `lease://b/two/${k}`).sort((a, b) => a.rev - b.rev);
      chain.forEach((r, i) => assert.equal(r.before, i === 0 ? 0 : chain[i - 1]!.rev));
    }
    assert.ok(store.batchStats.batches + other.batchStats.batches < 96, 'batched');
  } finally {
    await other.close();
  }
});

test("a batch's notifications arrive once each, in step order, also when two steps send the same payload; a thrown step's never", { timeout: 20_000 }, async () => {
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  const got: string[] = [];
  listener.on('notification', (m) => got.push(m.payload!));
  await listener.query('LISTEN leasehold');
  try {
    const before = { ...store.batchStats };
    await Promise.allSettled(
      Array.from({ length: 32 }, (_, i) =>
        store.atomic(async (tx) => {
          await tx.broadcast!(JSON.stringify({ step: i }));
          // Steps 10 and 11 send an identical payload too.
          if (i === 10 || i === 11) await tx.broadcast!('{"same":true}');
          if (i === 20) throw new Error('dropped');
        }, { family: 'f' }),
      ),
    );
    assert.equal(store.batchStats.batches - before.batches, 1);
    // Notifications arrive on the listening connection after the commit: wait for them (the test's timeout bounds it).
    await new Promise<void>((resolve) => {
      const check = () => (got.length >= 33 ? resolve() : listener.once('notification', () => setImmediate(check)));
      check();
    });
    const want = Array.from({ length: 32 }, (_, i) => i)
      .filter((i) => i !== 20)
      .flatMap((i) => [{ step: i }, ...(i === 10 || i === 11 ? [{ same: true }] : [])]);
    assert.deepEqual(got.map((p) => JSON.parse(p)), want);
  } finally {
    await listener.end();
  }
});

test('steps that arrive while a batch waits for the lock join it, with their rows read in one more round trip', async () => {
  const other = await PgStore.open({ url: db.url });
  try {
    // The other instance holds the family's lock (a batch that waits before it commits).
    const holder = await holdLock(other);
    const before = { ...store.batchStats };
    const first = store.atomic(async (tx) => tx.bumpRevision('f'), { family: 'f' });
    // Let that batch start and block on the lock, then six more steps arrive.
    await someBatchWaitsForTheLock();
    const routes = Array.from({ length: 6 }, (_, i) => `lease://b/late/${i}`);
    const late = routes.map((route) =>
      store.atomic(async (tx) => {
        const rev = await tx.bumpRevision('f');
        await tx.insertLease(lease(route, rev));
        return rev;
        // The holder's session is hinted as the engine's acquire hints it (its lease count moves with the lease).
      }, { family: 'f', prefetch: { route, sessionHash: 'h1' } }),
    );
    holder.release();
    await holder.done;
    const revs = [await first, ...(await Promise.all(late))];
    assert.deepEqual(revs, [2, 3, 4, 5, 6, 7, 8], 'after the holder, in arrival order');
    assert.deepEqual(
      { batches: store.batchStats.batches - before.batches, steps: store.batchStats.steps - before.steps, roundTrips: store.batchStats.roundTrips - before.roundTrips },
      { batches: 1, steps: 7, roundTrips: 3 },
    );
    assert.equal(new Set((await writers('leases', routes)).values()).size, 1, 'one transaction');
  } finally {
    await other.close();
  }
});

test('the next batch of a family begins while the one before commits, and answers after it', async () => {
  // A commit made slow on purpose: a deferred trigger sleeps at COMMIT when the revision reaches 2.
  await sql.query(`CREATE OR REPLACE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.4); RETURN NULL; END $$`);
  await sql.query(`DROP TRIGGER IF EXISTS slow_commit ON families`);
  await sql.query(
    `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT OR UPDATE ON families DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.revision = 2) EXECUTE FUNCTION slow_commit()`,
  );
  try {
    assert.equal(await store.atomic((tx) => tx.bumpRevision('f'), { family: 'f' }), 1);
    const answered: number[] = [];
    const first = store.atomic((tx) => tx.bumpRevision('f'), { family: 'f' }).then((rev) => (answered.push(rev), rev));
    const look = (where: string) =>
      sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND ${where}`).then((r) => r.rows[0]!.n);
    // Its COMMIT is in flight (sleeping in the trigger; a bounded number of looks) ...
    for (let i = 0; (await look(`wait_event = 'PgSleep'`)) === 0; i++) assert.ok(i < 2_000, 'the first batch never reached its commit');
    const second = store.atomic((tx) => tx.bumpRevision('f'), { family: 'f' }).then((rev) => (answered.push(rev), rev));
    // ... and the next batch has begun: its lock waits in the database for that commit.
    let overlapped = false;
    for (let i = 0; i < 2_000 && !overlapped; i++) {
      const r = await sql.query<{ sleeping: number; waiting: number }>(
        `SELECT count(*) FILTER (WHERE wait_event = 'PgSleep')::int AS sleeping, count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS waiting FROM pg_stat_activity WHERE datname = current_database()`,
      );
      if (r.rows[0]!.sleeping === 0) break;
      overlapped = r.rows[0]!.waiting > 0;
    }
    assert.ok(overlapped, 'the second batch waited for the lock while the first one committed');
    assert.deepEqual([await first, await second], [2, 3]);
    assert.deepEqual(answered, [2, 3], 'answered in batch order');
    assert.equal(await store.atomic((tx) => tx.revision('f'), { family: 'f' }), 3);
  } finally {
    await sql.query(`DROP TRIGGER IF EXISTS slow_commit ON families`);
  }
});

/** A step of family f that writes one lease on `route` (its transaction is the row's xmin), with more scope. */
function put(s: PgStore, route: string, scope: { prefetch?: { routes: string[] }; alone?: boolean; work?: number; keeps?: boolean } = {}): Promise<number> {
  return s.atomic(async (tx) => {
    const rev = await tx.bumpRevision('f');
    await tx.insertLease(lease(route, rev));
    return rev;
  }, { family: 'f', ...scope });
}

test('a batch holds at most MAX_BATCH_WORK items (a batched call counts as its items); a larger step runs in a batch of its own', async () => {
  const works = [900, 900, 900, 900, MAX_BATCH_WORK + 500, 1, 1];
  const routes = works.map((_, i) => `lease://b/work/${i}`);
  // All queued in one turn of the event loop, before the family's first batch begins.
  await Promise.all(works.map((w, i) => put(store, routes[i]!, { prefetch: { routes: Array.from({ length: w }, (_, k) => `lease://b/hint${i}/${k}`) } })));
  const xids = await writers('leases', routes);
  assert.deepEqual(batchesOf(routes.map((r) => xids.get(r))), [[0, 1], [2, 3], [4], [5, 6]]);
});

test('a step that names its work (a page of a listing) counts it, not its hinted routes', async () => {
  const works = [1, 1_500, 1, 1_200, 900];
  const routes = works.map((_, i) => `lease://b/named-work/${i}`);
  await Promise.all(works.map((w, i) => put(store, routes[i]!, { work: w })));
  const xids = await writers('leases', routes);
  assert.deepEqual(batchesOf(routes.map((r) => xids.get(r))), [[0, 1, 2], [3], [4]]);
});

test('a step that runs alone is never joined by the steps queued after it', async () => {
  const routes = ['lease://b/alone/0', 'lease://b/alone/1', 'lease://b/alone/2', 'lease://b/alone/3'];
  await Promise.all(routes.map((r, i) => put(store, r, { alone: i === 1 })));
  const xids = await writers('leases', routes);
  // (The first batch's lock round trip sees three steps queued: they used to join it, the lone one with them.)
  assert.deepEqual(batchesOf(routes.map((r) => xids.get(r))), [[0], [1], [2, 3]]);
});

test('a queued step too close to its limit for the next batch is refused before it runs, so the batch beside it commits', async () => {
  // A step limit of 20 s, and queue ages on a clock the test moves (the real limit never passes here).
  let now = 0;
  const shedding = await PgStore.open({ url: db.url, stepTimeoutMs: 20_000, monotonic: () => now });
  const other = await PgStore.open({ url: db.url });
  try {
    // Round 1: a batch that waited 12 s for the lock held by another instance. The recent batches'
    // time (12 s) makes the margin half the limit: a step with less than 10 s left when a batch is
    // formed would likely not finish in it.
    let holder = await holdLock(other);
    const warm = put(shedding, 'lease://b/shed/warm');
    await someBatchWaitsForTheLock();
    now += 12_000;
    holder.release();
    await Promise.all([warm, holder.done]);
    assert.equal(shedding.batchStats.shed, 0);

    // Round 2: two steps wait for the lock in a batch; a third queues behind them and waits with them.
    holder = await holdLock(other);
    const running = [put(shedding, 'lease://b/shed/a1'), put(shedding, 'lease://b/shed/a2')];
    await someBatchWaitsForTheLock();
    const late = put(shedding, 'lease://b/shed/late').then(() => 'ran', (e: unknown) => e);
    // Once they have used 12 s of their 20 s (the margin is 10 s), the lock is released: the two in
    // the batch run, the third is refused, nothing of it written.
    now += 12_000;
    holder.release();
    await holder.done;
    const [a1, a2] = await Promise.all(running);
    assert.equal(a2, a1! + 1, 'the two in the batch committed');
    const e = await late;
    assert.ok(e instanceof StoreUnavailableError, String(e));
    assert.equal(e.maybeCommitted, false);
    assert.match(e.message, /waited too long to finish within 20000 ms/);
    assert.equal(shedding.batchStats.shed, 1);
    const rows = await writers('leases', ['lease://b/shed/a1', 'lease://b/shed/a2', 'lease://b/shed/late']);
    assert.deepEqual([...rows.keys()].sort(), ['lease://b/shed/a1', 'lease://b/shed/a2']);
    // A step queued now runs.
    assert.ok((await put(shedding, 'lease://b/shed/next')) > 0);
  } finally {
    await other.close();
    await shedding.close();
  }
});

test("a batch's delete of a lease row removes it also when the sweep's re-arm moves the row while the delete waits", async () => {
  // The re-arm (expiry.ts REARM_SQL) takes no family lock: it updates any lease whose horizon has passed
  // but that is not due. A delete matched on the row's old version must still remove the new one.
  const route = 'lease://b/rearm/x';
  const rev = await put(store, route);
  await sql.query(`UPDATE leases SET sweep_at = 5 WHERE route = $1`, [route]);
  const rearm = new pg.Client({ connectionString: db.url });
  await rearm.connect();
  try {
    await rearm.query('BEGIN');
    const moved = await rearm.query<{ n: string }>(REARM_SQL, [6, 512, 0]);
    assert.equal(Number(moved.rows[0]!.n), 1, 'the re-arm moved the row (uncommitted)');
    const released = store.atomic((tx) => tx.deleteLease('f', route, `ls_${route}`, rev), { family: 'f' });
    await someBatchWaitsForTheLock();
    await rearm.query('COMMIT');
    assert.equal(await released, true, 'the release was answered');
  } finally {
    await rearm.end();
  }
  assert.deepEqual([...(await writers('leases', [route])).keys()], [], 'the answered release left no row');
  assert.equal(await store.atomic((tx) => tx.getLease('f', route), { family: 'f' }), undefined);
});

test('steps that keep granted leases alive go into batches ahead of the steps queued before them', async () => {
  // SQLite takes every queued step into its next batch, so there is no order to choose there.
  const holder = await holdLock(store);
  // Queued behind the held batch, in this order: an acquisition's work of 1,500, then two renewals.
  const acquisition = put(store, 'lease://b/keep/acquired', { work: 1_500, keeps: false });
  const renewal = put(store, 'lease://b/keep/renewed', { work: 1_500, keeps: true });
  const small = put(store, 'lease://b/keep/small', { work: 1, keeps: true });
  holder.release();
  await holder.done;
  // The renewals run first, together (1,501 of MAX_BATCH_WORK); the acquisition does not fit beside them.
  assert.deepEqual(await Promise.all([renewal, small, acquisition]), [2, 3, 4]);
  const xids = await writers('leases', ['lease://b/keep/acquired', 'lease://b/keep/renewed', 'lease://b/keep/small']);
  assert.equal(xids.get('lease://b/keep/renewed'), xids.get('lease://b/keep/small'));
  assert.notEqual(xids.get('lease://b/keep/acquired'), xids.get('lease://b/keep/renewed'));
});

test(`the other steps still get a batch after ${KEEPING_SHARE} batches in a row of renewals passed them over`, async () => {
  const holder = await holdLock(store);
  // A release (work 1,000: it fits beside no renewal below), then more renewals than the share, each a batch of its own.
  const other = put(store, 'lease://b/share/other', { work: 1_000, keeps: false });
  const renewals = Array.from({ length: KEEPING_SHARE + 2 }, (_, i) => put(store, `lease://b/share/renewed-${i}`, { work: 1_500, keeps: true }));
  holder.release();
  await holder.done;
  // Revisions in commit order (the held batch took 1): KEEPING_SHARE renewals, then the release, then the rest.
  const first = Array.from({ length: KEEPING_SHARE }, (_, i) => 2 + i);
  assert.deepEqual(await Promise.all(renewals), [...first, 3 + KEEPING_SHARE, 4 + KEEPING_SHARE]);
  assert.equal(await other, 2 + KEEPING_SHARE);
});
