/**
 * The shared store: PostgreSQL (node-postgres), selected by
 * `LEASEHOLD_DATABASE_URL`, for several server instances on one lease
 * universe.
 *
 * Every atomic step is one transaction on one pooled connection, READ
 * COMMITTED with row locks (docs/design.md says why not SERIALIZABLE). A
 * step scoped to a family first locks that family's revision row (held
 * until commit), then reads `clock_timestamp()` as `tx.now`: the steps of
 * a family are serialized across instances, their changes commit in
 * revision order, and backend time never goes back along that order.
 *
 * Faults: the pool is bounded (`poolSize`); a step that cannot get a
 * connection, loses it, or runs past `stepTimeoutMs` has its connection
 * destroyed and fails with StoreUnavailableError, `maybeCommitted` when
 * the COMMIT had been sent. Nothing waits longer than that, and the pool
 * reconnects by itself on the next step.
 */

import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { addMs, millis, systemClock, type Clock, type Millis } from '../millis';
import { StoreUnavailableError, type Bus, type StepScope, type Store, type Tx } from '../types';
import { PgBus } from './pg-bus';
import { connectionConfig, destroy, guard, LOCK_MIGRATE } from './pg-connection';
import { toStoreError } from './pg-errors';
import { PgTx } from './pg-tx';
import { MIGRATIONS } from './schema';

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
  /** This instance's id (in other instances' view, stream ids and log lines); else generated. */
  instanceId?: string;
}

export class PgStore implements Store {
  readonly kind = 'postgres' as const;
  readonly bus: Bus;
  private readonly pool: pg.Pool;
  private readonly stepTimeoutMs: number;
  private epochValue = '';
  /** Database clock minus local clock in whole milliseconds, refreshed by every step. */
  private offset = 0;
  private closed = false;

  private constructor(private readonly opts: PgStoreOptions) {
    this.stepTimeoutMs = opts.stepTimeoutMs ?? 4_000;
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

  async atomic<T>(fn: (tx: Tx) => Promise<T>, scope?: StepScope): Promise<T> {
    if (this.closed) throw new StoreUnavailableError('store is closed', false);
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
    const tx = new PgTx(client);
    try {
      // BEGIN, the family's lock (its revision, and whether it has waiters),
      // then the clock: one round trip.
      const clock = `SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now`;
      let sql = `BEGIN; `;
      const family = scope?.family;
      if (family !== undefined) {
        const f = client.escapeLiteral(family);
        sql += `INSERT INTO families (family, revision) VALUES (${f}, 0) ON CONFLICT (family) DO NOTHING; `;
        sql += `SELECT revision FROM families WHERE family = ${f} FOR UPDATE; `;
        // A statement of its own, so it reads after the lock is granted (a
        // select list is computed before its rows are locked).
        sql += `SELECT EXISTS (SELECT 1 FROM waiters WHERE family = ${f}) AS waiters; `;
        if (scope?.prefetch) for (const st of PgTx.prefetchStatements(family, scope.prefetch, (s) => client.escapeLiteral(s))) sql += `${st}; `;
      }
      sql += clock;
      const sent = Date.now();
      const results = (await client.query(sql)) as unknown as pg.QueryResult[];
      if (family !== undefined) {
        const revision = Number((results[2]!.rows[0] as { revision: number }).revision);
        tx.lockFamily(family, revision, (results[3]!.rows[0] as { waiters: boolean }).waiters);
        if (scope?.prefetch) tx.prefetched(family, scope.prefetch, results.slice(4, -1));
      }
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
      const before = tx.commitStatements((s) => client.escapeLiteral(s));
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
    await (this.bus as PgBus).close();
    await this.pool.end().catch(() => undefined);
  }
}
