/**
 * The shared store: PostgreSQL (node-postgres), selected by
 * `LEASEHOLD_DATABASE_URL`, for several server instances on one lease
 * universe.
 *
 * Transactions are READ COMMITTED with row locks (docs/design.md says why
 * not SERIALIZABLE). Steps scoped to a family are run in batches, one
 * family's batch at a time on this instance (`server/store/postgres/pg-batch.ts`):
 * the batch locks that family's revision row once (held until commit),
 * reads every step's hinted rows and `clock_timestamp()` in the same round
 * trip, runs its steps one after another (each keeping its own
 * all-or-nothing outcome), and commits with one more round trip; the next
 * batch of the family starts as soon as that commit ends. So the steps of
 * a family are serialized across instances, their changes commit in
 * revision order, and backend time never goes back along that order.
 * Different families' batches run in parallel on the pool. Any other step
 * is one transaction of its own.
 *
 * Faults: the pool is bounded (`poolSize`); a step that cannot get a
 * connection, loses it, or runs past `stepTimeoutMs` has its connection
 * destroyed and fails with StoreUnavailableError, `maybeCommitted` when
 * the COMMIT had been sent; a failed batch fails every step in it. Nothing
 * waits longer than that, and the pool reconnects by itself on the next
 * step.
 */

import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { addMs, millis, systemClock, type Clock, type Millis } from '../millis';
import { StoreUnavailableError, type Bus, type StepScope, type Store, type Tx } from '../types';
import { PgBus } from './pg-bus';
import { connectionConfig, destroy, guard, LOCK_MIGRATE, quoteLiteral } from './pg-connection';
import { isUnavailable, toStoreError } from './pg-errors';
import { PgTx } from './pg-tx';
import { PgBatchTx } from './pg-batch';
import { MIGRATIONS } from './schema';
import { SweepFloor } from '../plan/expiry';

export interface PgStoreOptions {
  /** postgres://user@host:port/database */
  url: string;
  /** At most this many connections for steps (plus one for notifications). */
  poolSize?: number;
  /** A step that has not settled after this long fails (ms). */
  stepTimeoutMs?: number;
  /** Waiting for a pooled connection fails after this long (ms). */
  connectTimeoutMs?: number;
  /** Tests only: backend time from this clock (read at the same point, after the locks) instead of the database's. */
  clock?: Clock;
  /** Tests only: the clock of steps' queue ages and batches' durations (ms), instead of `performance.now()`. */
  monotonic?: () => number;
  /** This instance's id (in other instances' view, stream ids and log lines); else generated. */
  instanceId?: string;
}

/** A family's step waiting for its batch. */
interface Pending {
  fn: (tx: Tx) => Promise<unknown>;
  prefetch: StepScope['prefetch'];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** The step limit, counted from the `atomic` call: it fails the step if still queued, else its whole batch. */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Set while its batch runs: abort that batch. */
  abort: (() => void) | undefined;
  /** Runs in a batch of its own (`StepScope.alone`). */
  alone: boolean;
  /** When it was queued (`PgStoreOptions.monotonic`): `queueDelayMs`, `shed`. */
  at: number;
  /** Its share of a batch's work: `StepScope.work`, else a batched call's items, else 1 (`MAX_BATCH_WORK`). */
  work: number;
  /** Keeps granted leases alive (`StepScope.keeps`): queued ahead of the rest. */
  keeps: boolean;
}

/** At most this many steps in one batch (a bound on the lock's hold and the flush's size). */
const MAX_BATCH = 256;
const CLOCK = `SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now`;
/**
 * At most this much work in one batch, counted as a step's items (a batched
 * call of 1,000 renewals is 1,000; any other step 1); a step larger than
 * that alone still runs, in a batch of its own. Without it, a batch took
 * every step queued: under a fleet's load, dozens of sessions' batched
 * renewals of 1,000 leases each, tens of thousands of rows in one
 * transaction, which outlasted the oldest step's limit, so the whole batch
 * was cut short and every renewal in it failed at once (docs/design.md,
 * "PostgreSQL: row locks, one batch per family").
 */
export const MAX_BATCH_WORK = 2_000;

/**
 * Batches in a row that may begin with the keeping lane while the other
 * lane waits; the next then begins with the other lane. Under an overload
 * that keeps renewals queued, the rest (releases, listings, acquisitions
 * admitted before it) still get one batch in KEEPING_SHARE + 1, as
 * Kubernetes' priority levels each keep a share (docs/design.md "Admission").
 */
export const KEEPING_SHARE = 3;

/**
 * A family's queued steps in two lanes, each in arrival order: the steps
 * that keep granted leases alive (`StepScope.keeps`) go into batches ahead
 * of the others (docs/design.md "Admission"), but never more than
 * KEEPING_SHARE batches in a row while the others wait. A batch is bounded
 * by work, so under a fleet's load a burst of acquisitions queued first
 * would otherwise delay the renewals behind it, and what the family cannot
 * carry in time is refused (`shed`) from the head of each lane.
 */
class StepQueue {
  private readonly keeping: Pending[] = [];
  private readonly others: Pending[] = [];
  /** New batches in a row that took none of the other lane's queued steps. */
  private passedOver = 0;

  get length(): number {
    return this.keeping.length + this.others.length;
  }

  push(p: Pending): void {
    (p.keeps ? this.keeping : this.others).push(p);
  }

  /** Remove `p` if it is still queued. */
  remove(p: Pending): boolean {
    const lane = p.keeps ? this.keeping : this.others;
    const i = lane.indexOf(p);
    if (i < 0) return false;
    lane.splice(i, 1);
    return true;
  }

  /** Take every step queued before `arrivedBy` (each lane's head). */
  takeOlder(arrivedBy: number): Pending[] {
    const out: Pending[] = [];
    for (const lane of [this.keeping, this.others]) {
      let n = 0;
      while (n < lane.length && lane[n]!.at < arrivedBy) n++;
      for (const p of lane.splice(0, n)) out.push(p);
    }
    return out;
  }

  /**
   * The next steps for a batch that already holds `held` steps of `work`
   * (none for a new batch), the keeping lane first (a new batch the other
   * lane's first once the keeping lane has passed it over KEEPING_SHARE
   * times in a row): at most MAX_BATCH steps and MAX_BATCH_WORK (a batch's
   * first step whatever its work), and a step that runs alone
   * (`StepScope.alone`) only as its batch's one step.
   */
  take(held = 0, work = 0): Pending[] {
    const out: Pending[] = [];
    const waiting = this.others.length;
    const othersFirst = held === 0 && waiting > 0 && this.passedOver >= KEEPING_SHARE;
    for (const lane of othersFirst ? [this.others, this.keeping] : [this.keeping, this.others]) {
      let n = 0;
      let full = false;
      while (n < lane.length) {
        const p = lane[n]!;
        const at = held + out.length + n;
        if (at >= MAX_BATCH || (at > 0 && (p.alone || work + p.work > MAX_BATCH_WORK))) {
          full = true;
          break;
        }
        work += p.work;
        n++;
        if (p.alone) {
          full = true;
          break;
        }
      }
      for (const p of lane.splice(0, n)) out.push(p);
      if (full) break;
    }
    // Passed over: a new batch that took none of the others waiting (a late join that takes some serves them too).
    if (this.others.length < waiting || waiting === 0) this.passedOver = 0;
    else if (held === 0) this.passedOver++;
    return out;
  }
}

/** Committed batches and the steps they held (tests and the benchmark observe batching with it). */
interface BatchStats {
  batches: number;
  steps: number;
  /** Round trips of the committed batches, their first and last included. */
  roundTrips: number;
  /** Steps refused before they ran, too close to their limit (`shed`). */
  shed: number;
}

export class PgStore implements Store {
  readonly kind = 'postgres' as const;
  readonly bus: Bus;
  private readonly pool: pg.Pool;
  private readonly stepTimeoutMs: number;
  /** Where this store's walks of the sweep horizon start (plan/expiry.ts). */
  private readonly floor = new SweepFloor();
  private epochValue = '';
  /** Database clock minus local clock in whole milliseconds, refreshed by every step. */
  private offset = 0;
  private closed = false;
  /** Steps waiting for their family's next batch. */
  private readonly queued = new Map<string, StepQueue>();
  /** Each family's steps not yet answered, in arrival order (`queueDelayMs`). */
  private readonly unanswered = new Map<string, Set<Pending>>();
  /** Families with a batch running (or about to), and the loop that runs them. */
  private readonly running = new Map<string, Promise<void>>();
  /** Each family's last batch begun, until it has answered its steps (the next one answers after it). */
  private readonly lastBatch = new Map<string, Promise<void>>();
  readonly batchStats: BatchStats = { batches: 0, steps: 0, roundTrips: 0, shed: 0 };
  /** How long this instance's recent batches took, the lock's wait included, failed ones too (a decaying maximum, ms): `shed`. */
  private batchMs = 0;
  private readonly monotonic: () => number;

  private constructor(private readonly opts: PgStoreOptions) {
    this.stepTimeoutMs = opts.stepTimeoutMs ?? 4_000;
    this.monotonic = opts.monotonic ?? (() => performance.now());
    const instanceId = opts.instanceId ?? `i_${randomBytes(9).toString('base64url')}`;
    this.pool = new pg.Pool({
      ...connectionConfig(opts.url, opts.connectTimeoutMs ?? 2_000, 'leasehold'),
      max: opts.poolSize ?? 10,
      idleTimeoutMillis: 30_000,
    });
    // An idle connection that dies is dropped by the pool; nothing to do.
    this.pool.on('error', () => undefined);
    this.bus = new PgBus(opts.url, instanceId, this.pool);
  }

  /** Connect, apply the schema migrations (once, whoever starts first) and read the epoch. */
  static async open(opts: PgStoreOptions): Promise<PgStore> {
    const store = new PgStore(opts);
    try {
      await store.migrate();
    } catch (e) {
      await store.pool.end().catch(() => undefined);
      throw e;
    }
    return store;
  }

  private async migrate(): Promise<void> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock($1)', [LOCK_MIGRATE]);
      await c.query('CREATE TABLE IF NOT EXISTS leasehold_schema (version integer NOT NULL)');
      const r = await c.query<{ version: number }>('SELECT version FROM leasehold_schema');
      const version = r.rows[0]?.version ?? 0;
      if (version > MIGRATIONS.length) throw new Error(`the database was written by a newer Leasehold (schema ${version})`);
      for (let v = version; v < MIGRATIONS.length; v++) await c.query(MIGRATIONS[v]!);
      if (r.rows.length === 0) await c.query('INSERT INTO leasehold_schema (version) VALUES ($1)', [MIGRATIONS.length]);
      else await c.query('UPDATE leasehold_schema SET version = $1', [MIGRATIONS.length]);
      const epoch = `ep_${randomBytes(12).toString('base64url')}`;
      await c.query(`INSERT INTO meta (key, value) VALUES ('epoch', $1) ON CONFLICT (key) DO NOTHING`, [epoch]);
      this.epochValue = (await c.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'epoch'`)).rows[0]!.value;
      const t = await c.query<{ now: number }>(`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now`);
      this.offset = Math.round(Number(t.rows[0]!.now) - Date.now());
      await c.query('COMMIT');
      c.release();
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      c.release(true);
      throw e;
    }
  }

  now(): Millis {
    return this.opts.clock ? this.opts.clock() : addMs(systemClock(), this.offset);
  }

  epoch(): string {
    return this.epochValue;
  }

  /**
   * The family's oldest step not yet answered: queued, or in a batch that
   * waits for the family's lock or for the steps ahead of it.
   */
  queueDelayMs(family: string): number {
    const first = this.unanswered.get(family)?.values().next().value;
    return first ? this.monotonic() - first.at : 0;
  }

  atomic<T>(fn: (tx: Tx) => Promise<T>, scope?: StepScope): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed', false));
    const family = scope?.family;
    if (family === undefined) return this.single(fn);
    return new Promise<T>((resolve, reject) => {
      let q = this.queued.get(family);
      if (!q) this.queued.set(family, (q = new StepQueue()));
      let open = this.unanswered.get(family);
      if (!open) this.unanswered.set(family, (open = new Set()));
      const unanswered = open;
      const answered = () => {
        unanswered.delete(p);
        if (unanswered.size === 0 && this.unanswered.get(family) === unanswered) this.unanswered.delete(family);
      };
      const p: Pending = {
        fn,
        prefetch: scope?.prefetch,
        resolve: (v) => (answered(), resolve(v as T)),
        reject: (e) => (answered(), reject(e)),
        timer: undefined,
        abort: undefined,
        alone: scope?.alone === true,
        at: this.monotonic(),
        work: Math.max(1, scope?.work ?? scope?.prefetch?.routes?.length ?? 0),
        keeps: scope?.keeps === true,
      };
      unanswered.add(p);
      p.timer = setTimeout(() => this.expire(family, p), this.stepTimeoutMs);
      q.push(p);
      if (!this.running.has(family)) {
        // The first batch starts once the event loop has taken in what arrived
        // with this step (no timer); later ones as soon as the previous commit ends.
        this.running.set(
          family,
          new Promise<void>((r) => setImmediate(r)).then(() => this.drain(family)),
        );
      }
    });
  }

  /** A step reached the step limit: refused if it is still queued (nothing ran), else its batch is cut short. */
  private expire(family: string, p: Pending): void {
    if (p.abort) return p.abort();
    if (!this.queued.get(family)?.remove(p)) return;
    p.reject(new StoreUnavailableError(`postgres: the step waited longer than ${this.stepTimeoutMs} ms`, false));
  }

  /**
   * Run a family's batches while steps are waiting, the next one begun as
   * soon as the one before has sent its COMMIT (docs/design.md,
   * "PostgreSQL: row locks, one batch per family"): its lock waits in the
   * database for that commit, so the commit's round trip and the next
   * batch's first one overlap. Answers still go out batch by batch, in order.
   */
  private async drain(family: string): Promise<void> {
    let previous = this.lastBatch.get(family) ?? Promise.resolve();
    try {
      for (;;) {
        const q = this.queued.get(family);
        if (q) this.shed(q);
        if (!q || q.length === 0) {
          this.queued.delete(family);
          return;
        }
        const batch = q.take();
        if (this.closed) {
          for (const p of batch) {
            clearTimeout(p.timer);
            p.reject(new StoreUnavailableError('store is closed', false));
          }
          continue;
        }
        let committing!: () => void;
        const sent = new Promise<void>((r) => (committing = r));
        const done = this.runBatch(family, batch, previous, committing).catch(() => undefined);
        previous = done;
        this.lastBatch.set(family, done);
        void done.finally(() => {
          if (this.lastBatch.get(family) === done) this.lastBatch.delete(family);
        });
        await sent;
      }
    } finally {
      this.running.delete(family);
    }
  }

  /**
   * Refuse, before it runs, each step queued in `q` whose limit would
   * likely pass within the batch about to start: less than twice the recent
   * batches' time left (at least 50 ms, at most half the limit). Run, it
   * would cut that whole batch short when its limit passed, failing every
   * step beside it; refused now, nothing of it ran (`backend_unavailable`,
   * safe to retry) and the steps behind it run in time.
   */
  private shed(q: StepQueue): void {
    const margin = Math.min(this.stepTimeoutMs / 2, Math.max(50, 2 * this.batchMs));
    const refused = q.takeOlder(this.monotonic() + margin - this.stepTimeoutMs);
    if (refused.length === 0) return;
    this.batchStats.shed += refused.length;
    for (const p of refused) {
      clearTimeout(p.timer);
      p.reject(new StoreUnavailableError(`postgres: the step waited too long to finish within ${this.stepTimeoutMs} ms`, false));
    }
  }

  /**
   * One batch of a family's steps in one transaction: BEGIN + the family's
   * lock + every step's hinted rows + the clock in one round trip, the steps
   * one after another (a cache miss, a scan or a write-through costs its own
   * round trip), then the rows, the revision, the notifications and COMMIT
   * in one more. No step is answered before the COMMIT returns, nor before
   * the batch before it (`previous`) has answered its own; if the batch
   * cannot commit, every step in it fails with StoreUnavailableError.
   * `committing` is called once the COMMIT is sent, or once the batch ended
   * without one: the next batch may begin.
   */
  private async runBatch(family: string, steps: Pending[], previous: Promise<void>, committing: () => void): Promise<void> {
    try {
      await this.runSteps(family, steps, previous, committing);
    } finally {
      committing();
    }
  }

  private async runSteps(family: string, steps: Pending[], previous: Promise<void>, committing: () => void): Promise<void> {
    const started = this.monotonic();
    let client: pg.PoolClient | undefined;
    let commitSent = false;
    let timedOut = false;
    let fail!: (e: unknown) => void;
    const deadline = new Promise<never>((_, reject) => (fail = reject));
    deadline.catch(() => undefined);
    // The first step to reach its limit cuts the whole batch short: its connection is destroyed.
    const abort = () => {
      if (timedOut) return;
      timedOut = true;
      if (client) destroy(client);
      fail(new Error('timed out'));
    };
    for (const p of steps) p.abort = abort;
    const settle = (p: Pending) => {
      clearTimeout(p.timer);
      p.abort = undefined;
    };
    const connecting = this.pool.connect();
    try {
      client = await Promise.race([connecting, deadline]);
    } catch (e) {
      // A connection that arrives after the deadline goes back to the pool unused.
      if (timedOut) connecting.then((c) => c.release(), () => undefined);
      const err = timedOut
        ? new StoreUnavailableError(`postgres: the step took longer than ${this.stepTimeoutMs} ms`, false)
        : new StoreUnavailableError(`postgres: cannot get a connection: ${(e as Error).message}`, false);
      await previous;
      for (const p of steps) {
        settle(p);
        p.reject(err);
      }
      return;
    }
    guard(client);
    const tx = new PgBatchTx(client, family, this.floor);
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    let failure: StoreUnavailableError | undefined;
    try {
      const prefetches = steps.map((p) => p.prefetch);
      const prepare = tx.prepareSql();
      const results = (await Promise.race([tx.exec(`${prepare.sql}BEGIN; ${tx.lockSql(prefetches)}${CLOCK}`), deadline])).slice(prepare.results);
      tx.prepared();
      tx.locked(prefetches, results.slice(1, 1 + PgBatchTx.LOCK_RESULTS));
      const dbNow = Number(results[results.length - 1]!.rows[0].now);
      const received = performance.now();
      // The lock may have waited for another instance's batch, while this family's steps kept
      // arriving here: if at least as many came as the batch holds, they join it (their rows read
      // in one more round trip, under the lock) rather than wait for the next batch and its lock.
      const late = this.queued.get(family);
      if (late) this.shed(late);
      // (Not into a step that runs alone, and within the batch's bounds.)
      const joined = late && late.length >= steps.length && !steps[0]!.alone ? late.take(steps.length, steps.reduce((w, p) => w + p.work, 0)) : [];
      if (joined.length > 0) {
        for (const p of joined) p.abort = abort;
        steps.push(...joined);
        const more = joined.map((p) => p.prefetch);
        tx.prefetched(more, await Promise.race([tx.exec(tx.prefetchSql(more)), deadline]));
      }
      // The clock was read after the lock, which may have waited for another instance's batch:
      // it belongs to the end of the round trip, not its midpoint (which would put this
      // instance's now() ahead by half the wait, and its audit times after other instances' later ones).
      this.offset = dbNow - Date.now();
      for (const p of steps) {
        // Each step's time: the database clock read after the lock, plus the time elapsed here
        // since its answer arrived (never ahead of the database's clock, so never ahead of the
        // time the next holder of the lock reads after this batch commits).
        tx.beginStep(this.opts.clock ? this.opts.clock() : millis(dbNow + Math.floor(performance.now() - received)));
        try {
          const value = await Promise.race([p.fn(tx), deadline]);
          await tx.endStep(true);
          outcomes.push({ ok: true, value });
        } catch (e) {
          if (timedOut) throw e;
          await tx.endStep(false);
          outcomes.push({ ok: false, value: e });
        }
        if (tx.poisoned !== undefined) throw tx.poisoned;
      }
      const sql = tx.commitSql();
      commitSent = true;
      const commit = tx.exec(`${sql}COMMIT`);
      committing();
      await Promise.race([commit, deadline]);
      this.batchStats.batches++;
      this.batchStats.steps += steps.length;
      this.batchStats.roundTrips += 2 + tx.statements;
    } catch (e) {
      if (timedOut) failure = new StoreUnavailableError(`postgres: the step took longer than ${this.stepTimeoutMs} ms`, commitSent);
      else {
        // The server answered with an error: the transaction was aborted, nothing committed;
        // any other failure after the COMMIT was sent leaves the outcome unknown.
        const answered = e instanceof pg.DatabaseError && !isUnavailable(e);
        failure = new StoreUnavailableError(`postgres: the batch failed: ${(e as Error)?.message ?? String(e)}`, commitSent && !answered);
      }
    }
    // Its time counts whether it committed or not: one cut short at a step's limit took longest.
    this.batchMs = Math.max(this.monotonic() - started, this.batchMs * 0.9);
    let broken = timedOut;
    if (failure && !timedOut) await Promise.race([client.query('ROLLBACK'), deadline]).catch(() => (broken = true));
    // A connection that failed or timed out is discarded, never reused; so is one that may hold some of the prepared statements.
    client.release(broken || timedOut || tx.mustDiscard ? true : undefined);
    await previous;
    for (let i = 0; i < steps.length; i++) {
      const p = steps[i]!;
      settle(p);
      const o = outcomes[i];
      if (failure) p.reject(failure);
      else if (o!.ok) p.resolve(o!.value);
      else p.reject(o!.value);
    }
  }

  /** A step without a family: one transaction of its own. */
  private async single<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const started = Date.now();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw new StoreUnavailableError(`postgres: cannot get a connection: ${(e as Error).message}`, false);
    }
    guard(client);
    let commitSent = false;
    let timedOut = false;
    let broken = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        destroy(client);
      },
      Math.max(250, this.stepTimeoutMs - (Date.now() - started)),
    );
    const tx = new PgTx(client, this.floor);
    try {
      const sent = Date.now();
      const results = (await client.query(`BEGIN; ${CLOCK}`)) as unknown as pg.QueryResult[];
      const now = millis(Number(results[results.length - 1]!.rows[0].now));
      tx.now = this.opts.clock ? this.opts.clock() : now;
      // The midpoint of the round trip is half a millisecond when it is odd: round, so now() stays whole.
      this.offset = Math.round(tx.now - (sent + Date.now()) / 2);
      let value: T;
      try {
        value = await fn(tx);
      } catch (e) {
        if (!timedOut) await client.query('ROLLBACK').catch(() => (broken = true));
        throw e;
      }
      // The step's notifications and its COMMIT in one round trip (simple
      // protocol, so the payloads are quoted literals): delivered iff it commits.
      const before = tx.commitStatements(quoteLiteral);
      commitSent = true;
      await client.query(`${before}COMMIT`);
      return value;
    } catch (e) {
      if (timedOut) throw new StoreUnavailableError(`postgres: the step took longer than ${this.stepTimeoutMs} ms`, commitSent);
      const err = toStoreError(e, commitSent);
      if (err instanceof StoreUnavailableError) broken = true;
      throw err;
    } finally {
      clearTimeout(timer);
      // A connection that failed or timed out is discarded, never reused.
      client.release(broken || timedOut ? true : undefined);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Batches already running end first (each within the step limit); queued steps are refused.
    await Promise.all([...this.running.values()]);
    await Promise.all([...this.lastBatch.values()]);
    await (this.bus as PgBus).close();
    await this.pool.end().catch(() => undefined);
  }
}
