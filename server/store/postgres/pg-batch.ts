/**
 * The PostgreSQL step runner's unit of work (docs/design.md, "PostgreSQL:
 * row locks, one batch per family"). One `PgBatchTx` serves every step of a batch: the
 * steps of one family that an instance runs together in one transaction,
 * after taking the family's row lock once.
 *
 * - The first round trip takes the lock and reads every step's hinted rows
 *   (`scope.prefetch`) into a per-batch cache.
 * - The hot rows (leases, sessions, idempotency records, checkpoints, the
 *   family's revision) are read through that cache and written behind: a
 *   step's writes are kept in its own overlay, merged into the batch when
 *   it returns and dropped when it throws (its all-or-nothing outcome,
 *   without a savepoint), and flushed with the COMMIT as one upsert and
 *   one delete per table, with the audit rows and the notifications, in one
 *   round trip: prepared statements taking their rows as one jsonb array
 *   each (pg-prepared.ts).
 * - Any other read (scans, due lists, counts) first writes what the batch
 *   holds, so it sees every earlier step. A step that also holds writes of
 *   its own, or writes anything uncached (waiter rows, policies, tokens,
 *   prunes), switches to writing through under a savepoint for the rest of
 *   its run, and the caches start afresh after it.
 *
 * The `Tx` method table and the cached tables are the one unit of work both
 * stores share (`server/store/unit-of-work.ts`); this file holds the
 * PostgreSQL parts: the lock and prefetch, the family revision, savepoints,
 * waiters, notifications and the flush SQL.
 * - A statement that fails outside a savepoint aborts PostgreSQL's
 *   transaction: the batch is then poisoned and every step of it fails
 *   with StoreUnavailableError (the runner decides `maybeCommitted`).
 *
 * Mutable state lives in one object (`st`, see `UnitOfWork`).
 */

import type { PoolClient, QueryResult } from 'pg';
import { millis, type Millis } from '../millis';
import type { ChangeLogTx, ChangeRow, CheckpointRow, IdempotencyRow, LeaseRow, NewAuditRow, PolicyTx, SessionRow, SharedWaiters, StepScope } from '../types';
import { CHECKPOINTS, CachedTable, changeValues, IDEMPOTENCY, LEASES, SEP, SESSIONS, UnitOfWork, auditValues, idemKey, leaseKey, type Entries } from '../unit-of-work';
import { quoteLiteral } from './pg-connection';
import { PgTx } from './pg-tx';
import type { SweepFloor } from '../plan/expiry';
import { execute, PREPARE_RESULTS, prepareSql, preparedOn } from './pg-prepared';

type Quote = (s: string) => string;
type Prefetch = NonNullable<StepScope['prefetch']>;

/** A cached table written by multi-row PostgreSQL statements sent with the batch's round trips. */
class PgTable<V> extends CachedTable<V> {
  /** The statements writing the batch's pending rows (the cache stays valid). */
  batchSql(): string {
    const entries = this.takeBatch();
    return entries ? this.sql(entries) : '';
  }

  /** The statements writing the step's rows (it writes through from here; the caches are dropped when it ends). */
  stepSql(): string {
    const entries = this.takeStep();
    return entries ? this.sql(entries) : '';
  }

  /** Deletes (their rows locked first), then upserts: prepared statements (pg-prepared.ts). */
  private sql(entries: Entries<V>): string {
    const name = this.spec.name;
    const upserts: unknown[][] = [];
    const deletes: string[][] = [];
    for (const [k, v] of entries) {
      if (v === null) deletes.push(k.split(SEP));
      else upserts.push(this.spec.values(v));
    }
    return execute(`lh_lock_${name}`, deletes) + execute(`lh_del_${name}`, deletes) + execute(`lh_put_${name}`, upserts);
  }
}

function auditSql(rows: readonly NewAuditRow[]): string {
  if (rows.length === 0) return '';
  const perFamily = new Map<string, number>();
  for (const r of rows) perFamily.set(r.family, (perFamily.get(r.family) ?? 0) + 1);
  // The per-family counts first, families in order (as PgTx.insertAudit): their row locks order
  // two instances' audit writes, so seqs commit in the order they were taken.
  const counts = [...perFamily.keys()].sort().map((f) => [f, perFamily.get(f)]);
  return execute('lh_audit_counts', counts) + execute('lh_audit', rows.map((r) => auditValues(r, true)));
}

/** What the runner learns from the first round trip. */
export interface Locked {
  revision: number;
  hasWaiters: boolean;
}

export class PgBatchTx extends UnitOfWork<PgTx> {
  now = millis(0);
  readonly policies: PolicyTx;
  readonly waiters: SharedWaiters;
  readonly changes: ChangeLogTx;
  protected readonly st: {
    direct: boolean;
    /** A statement failed outside a savepoint: the transaction is aborted, the batch cannot commit. */
    poisoned: unknown;
    revision: number;
    stepRevision: number | undefined;
    revisionDirty: boolean;
    audit: NewAuditRow[];
    stepAudit: NewAuditRow[];
    messages: string[];
    stepMessages: string[];
    /** Change-log rows (docs/design.md, "Change log"): kept in memory with the step, written with the batch. */
    changes: ChangeRow[];
    stepChanges: ChangeRow[];
    /** The revision last written to the database in this batch. */
    revisionWritten: number;
    statements: number;
  } = {
    direct: false,
    poisoned: undefined,
    revision: 0,
    stepRevision: undefined,
    revisionDirty: false,
    audit: [],
    stepAudit: [],
    messages: [],
    stepMessages: [],
    changes: [],
    stepChanges: [],
    revisionWritten: 0,
    statements: 0,
  };
  protected readonly base: PgTx;
  private readonly quote: Quote;
  protected readonly leases = new PgTable(LEASES);
  protected readonly sessions = new PgTable(SESSIONS);
  protected readonly idem = new PgTable(IDEMPOTENCY);
  protected readonly checkpoints = new PgTable(CHECKPOINTS);
  private readonly tables: ReadonlyArray<PgTable<never>>;
  /**
   * Lock-delay deadlines read in this batch (null: none). They are only
   * written through, after which the caches start afresh, so a cached one
   * is what the database holds.
   */
  private readonly delays = new Map<string, number | null>();

  constructor(
    private readonly client: PoolClient,
    readonly family: string,
    floor?: SweepFloor,
  ) {
    super();
    this.quote = quoteLiteral;
    // The per-step statements go through this wrapper, which notes a failure (see `failed`).
    const noted = {
      query: (...args: unknown[]) =>
        (client.query as (...a: unknown[]) => Promise<unknown>).apply(client, args).then(
          (r) => {
            this.st.statements++;
            return r;
          },
          (e: unknown) => {
            this.failed(e);
            throw e;
          },
        ),
      escapeLiteral: this.quote,
    } as unknown as PoolClient;
    this.base = new PgTx(noted, floor);
    this.tables = [this.leases, this.sessions, this.idem, this.checkpoints] as unknown as ReadonlyArray<PgTable<never>>;

    const w = this.base.waiters;
    const none = (f: string) => this.base.noWaiters(f);
    // Waiter rows are only ever written through (under the step's savepoint), so the database
    // always holds them: their reads need no flush. The first round trip said whether the
    // family has any at all; if not, the queue questions cost nothing.
    this.waiters = {
      enqueueWaiter: (r) => this.write(() => w.enqueueWaiter(r)),
      headWaiter: async (f, route, now) => (none(f) ? undefined : this.write(() => w.headWaiter(f, route, now))),
      deleteWaiter: async (f, route, requestId) => (none(f) ? false : this.write(() => w.deleteWaiter(f, route, requestId))),
      countWaiters: async (f, route, now) => (none(f) ? 0 : w.countWaiters(f, route, now)),
      countWaitersOf: async (f, routes, now) => (none(f) ? new Map() : w.countWaitersOf(f, routes, now)),
      findWaiter: async (f, route, requestId, now) => (none(f) ? undefined : w.findWaiter(f, route, requestId, now)),
      sessionWaiting: async (f, route, sessionHash, now) => (none(f) ? false : w.sessionWaiting(f, route, sessionHash, now)),
      // A session waits only in its own family, the one locked here.
      takeSessionWaiters: async (sessionHash) => (none(this.family) ? [] : this.write(() => w.takeSessionWaiters(sessionHash))),
      deleteInstanceWaiters: (instance) => this.write(() => w.deleteInstanceWaiters(instance)),
      parkWaiter: async (f, route, requestId, until) => (none(f) ? false : this.write(() => w.parkWaiter(f, route, requestId, until))),
      findPlace: async (f, route, place, now) => (none(f) ? undefined : w.findPlace(f, route, place, now)),
      resumePlace: async (r) => (none(r.family) ? false : this.write(() => w.resumePlace(r))),
      reparkPlace: async (f, route, place, until) => (none(f) ? false : this.write(() => w.reparkPlace(f, route, place, until))),
      deletePlace: async (f, route, place) => (none(f) ? false : this.write(() => w.deletePlace(f, route, place))),
      deleteSessionPlace: async (f, route, sessionHash) => (none(f) ? false : this.write(() => w.deleteSessionPlace(f, route, sessionHash))),
      dueParked: async (f, now, limit) => (none(f) ? [] : w.dueParked(f, now, limit)),
      dueParkedFamilies: (now, limit) => w.dueParkedFamilies(now, limit),
      lapseSessionPlaces: async (sessionHash, now) => (none(this.family) ? 0 : this.write(() => w.lapseSessionPlaces(sessionHash, now))),
    };
    // Policies and lock-delays are never cached: read directly, written through.
    const p = this.base.policies;
    this.policies = this.delegatePolicies(p, {
      getLockDelay: async (f, route) => {
        if (this.st.direct) return p.getLockDelay(f, route);
        const k = leaseKey(f, route);
        let until = this.delays.get(k);
        if (until === undefined) this.delays.set(k, (until = (await p.getLockDelay(f, route)) ?? null));
        return until ?? undefined;
      },
      setLockDelay: (row) => this.write(() => p.setLockDelay(row)),
    });
    // The change log: appends stay in memory with the step (also when it writes through) and are
    // written with the batch; a replay's read merges them with what the database holds.
    this.changes = this.delegateChanges(this.base.changes, async (rows) => {
      this.st.stepChanges.push(...rows);
    });
  }

  // ---- the runner's side ----------------------------------------------------

  /** The connection's PREPAREs were sent and whether they ran is not known yet (see `prepareSql`). */
  private preparing = false;

  /**
   * What the first round trip sends before its `BEGIN`: the prepared
   * statements this connection does not hold yet (pg-prepared.ts), and how
   * many results they yield. `prepared` is called once that round trip
   * succeeded; until then `mustDiscard` says the connection may hold some of
   * them, and must not be reused.
   */
  prepareSql(): { sql: string; results: number } {
    const sql = prepareSql(this.client);
    this.preparing = sql !== '';
    return { sql, results: sql === '' ? 0 : PREPARE_RESULTS };
  }

  prepared(): void {
    if (this.preparing) preparedOn(this.client);
    this.preparing = false;
  }

  get mustDiscard(): boolean {
    return this.preparing;
  }

  /**
   * The first round trip's statements after `BEGIN`: the family's row lock,
   * then (statements of their own, so they read after the lock is granted)
   * whether it has waiters and every step's hinted rows (`prefetchSql`).
   * `locked` takes their results, in the same order.
   */
  lockSql(prefetches: ReadonlyArray<Prefetch | undefined>): string {
    const f = this.quote(this.family);
    let sql = `INSERT INTO families (family, revision) VALUES (${f}, 0) ON CONFLICT (family) DO NOTHING; `;
    sql += `SELECT revision FROM families WHERE family = ${f} FOR UPDATE; `;
    sql += `SELECT EXISTS (SELECT 1 FROM waiters WHERE family = ${f}) AS waiters; `;
    return sql + this.prefetchSql(prefetches);
  }

  /** How many results `lockSql` yields. */
  static readonly LOCK_RESULTS = 7;

  locked(prefetches: ReadonlyArray<Prefetch | undefined>, results: readonly QueryResult[]): Locked {
    const revision = Number((results[1]!.rows[0] as { revision: number }).revision);
    const hasWaiters = (results[2]!.rows[0] as { waiters: boolean }).waiters;
    this.st.revision = revision;
    this.base.lockFamily(this.family, revision, hasWaiters);
    this.prefetched(prefetches, results.slice(3));
    return { revision, hasWaiters };
  }

  /** The statements reading the steps' hinted rows, one per table (4 results, for `prefetched`). */
  prefetchSql(prefetches: ReadonlyArray<Prefetch | undefined>): string {
    const f = this.quote(this.family);
    const { idem, sessions, routes } = this.hinted(prefetches);
    const none = 'SELECT 1 WHERE false; ';
    const keys = [...idem.values()].map((k) => [k.op, k.route, k.requestId]);
    // An acquire asks whether its route is in lock-delay: read with the lease.
    return (
      (execute('lh_pf_idempotency', keys, f) || none) +
      (execute('lh_pf_sessions', [...sessions]) || none) +
      (execute('lh_pf_leases', [...routes], f) || none) +
      (execute('lh_pf_delays', [...routes], f) || none)
    );
  }

  /** The hinted rows, read under the lock before any step ran (a key already known stays as it is). */
  prefetched(prefetches: ReadonlyArray<Prefetch | undefined>, results: readonly QueryResult[]): void {
    const { idem, sessions, routes } = this.hinted(prefetches);
    const found = <V>(rows: unknown[], key: (r: V) => string) => new Map((rows as V[]).map((r) => [key(r), r]));
    const idemRows = found<IdempotencyRow>(results[0]!.rows, (r) => idemKey(r.family, r.op, r.route, r.requestId));
    for (const k of idem.keys()) this.idem.learn(k, idemRows.get(k) ?? null);
    const sessionRows = found<SessionRow>(results[1]!.rows, (r) => r.idHash);
    for (const h of sessions) this.sessions.learn(h, sessionRows.get(h) ?? null);
    const leaseRows = found<LeaseRow>(results[2]!.rows, (r) => r.route);
    for (const route of routes) this.leases.learn(leaseKey(this.family, route), leaseRows.get(route) ?? null);
    const delays = new Map((results[3]!.rows as Array<{ route: string; until: number }>).map((r) => [r.route, Number(r.until)]));
    for (const route of routes) {
      const k = leaseKey(this.family, route);
      if (!this.delays.has(k)) this.delays.set(k, delays.get(route) ?? null);
    }
  }

  private hinted(prefetches: ReadonlyArray<Prefetch | undefined>) {
    const idem = new Map<string, { op: string; route: string; requestId: string }>();
    const sessions = new Set<string>();
    const routes = new Set<string>();
    for (const p of prefetches) {
      if (!p) continue;
      if (p.idempotency) idem.set(idemKey(this.family, p.idempotency.op, p.idempotency.route, p.idempotency.requestId), p.idempotency);
      if (p.sessionHash !== undefined) sessions.add(p.sessionHash);
      if (p.route !== undefined) routes.add(p.route);
      if (p.routes !== undefined) for (const r of p.routes) routes.add(r);
    }
    return { idem, sessions, routes };
  }

  beginStep(now: Millis): void {
    this.now = now;
    this.base.now = now;
  }

  /** The batch cannot commit (a statement failed outside a savepoint), or undefined. */
  get poisoned(): unknown {
    return this.st.poisoned;
  }

  /** Round trips made by the steps (beyond the batch's first and last). */
  get statements(): number {
    return Math.max(0, this.st.statements - 2);
  }

  /** End the current step: keep its writes (ok) or drop them. Throws if the batch cannot go on. */
  async endStep(ok: boolean): Promise<void> {
    const st = this.st;
    if (ok) {
      if (st.stepRevision !== undefined) {
        st.revision = st.stepRevision;
        st.revisionDirty = true;
      }
      if (st.stepMessages.length > 0) st.messages.push(...st.stepMessages);
      if (st.stepChanges.length > 0) st.changes.push(...st.stepChanges);
    }
    st.stepRevision = undefined;
    st.stepMessages = [];
    st.stepChanges = [];
    if (st.direct) {
      st.direct = false;
      // The database moved under the caches: start them afresh.
      for (const t of this.tables) t.reset();
      this.delays.clear();
      st.stepAudit = [];
      await this.exec(ok ? 'RELEASE SAVEPOINT step' : 'ROLLBACK TO SAVEPOINT step; RELEASE SAVEPOINT step');
      return;
    }
    if (ok) {
      for (const t of this.tables) t.commitStep();
      if (st.stepAudit.length > 0) st.audit.push(...st.stepAudit);
    } else {
      for (const t of this.tables) t.abortStep();
    }
    st.stepAudit = [];
  }

  /**
   * The statements that go with the COMMIT, in order: the family's
   * revision, the batch's rows (a few multi-row statements per table), its
   * audit rows, then its notifications (delivered iff it commits, in
   * commit order). Throws if the batch cannot commit.
   */
  commitSql(): string {
    const st = this.st;
    if (st.poisoned !== undefined) throw st.poisoned;
    const sql = this.batchSql();
    let notify = '';
    // PostgreSQL delivers identical payloads sent in one transaction once: a repeated one gets
    // trailing blanks (the payload is JSON, which ignores them), so each step's message arrives.
    // One statement for all of them (one result to parse, not one per message), in order.
    const sent = new Set<string>();
    for (let m of st.messages) {
      while (sent.has(m)) m += ' ';
      sent.add(m);
    }
    if (sent.size > 0) notify = execute('lh_notify', [...sent]);
    st.messages = [];
    return sql + notify;
  }

  /** Run statements (simple protocol), noting a failure. */
  async exec(sql: string): Promise<QueryResult[]> {
    try {
      const r = (await this.client.query(sql)) as unknown as QueryResult | QueryResult[];
      this.st.statements++;
      return Array.isArray(r) ? r : [r];
    } catch (e) {
      this.failed(e);
      throw e;
    }
  }

  /** A statement failed: outside a savepoint, PostgreSQL aborted the whole transaction. */
  private failed(e: unknown): void {
    if (!this.st.direct && this.st.poisoned === undefined) this.st.poisoned = e;
  }

  /** The statements writing what the batch's returned steps hold: the family's revision, their rows, audit rows and changes. */
  private batchSql(): string {
    const st = this.st;
    let sql = '';
    if (st.revisionDirty && st.revision !== st.revisionWritten) {
      sql += `UPDATE families SET revision = ${st.revision} WHERE family = ${this.quote(this.family)}; `;
      st.revisionWritten = st.revision;
    }
    for (const t of this.tables) sql += t.batchSql();
    sql += auditSql(st.audit);
    st.audit = [];
    sql += execute('lh_changes', st.changes.map(changeValues));
    st.changes = [];
    return sql;
  }

  private stepHasWrites(): boolean {
    return this.st.stepAudit.length > 0 || this.tables.some((t) => t.stepWrites > 0);
  }

  /** Before a read the caches cannot answer: the database must hold every write so far, this step's included. */
  private async sync(): Promise<void> {
    if (this.st.poisoned !== undefined) throw this.st.poisoned;
    if (this.st.direct) return;
    if (this.stepHasWrites()) return this.writeThrough();
    const sql = this.batchSql();
    if (sql) await this.exec(sql);
  }

  /** From here on this step writes through SQL, under a savepoint (one round trip with the batch's pending rows). */
  private async writeThrough(): Promise<void> {
    if (this.st.direct) return;
    if (this.st.poisoned !== undefined) throw this.st.poisoned;
    let sql = `${this.batchSql()}SAVEPOINT step; `;
    for (const t of this.tables) sql += t.stepSql();
    sql += auditSql(this.st.stepAudit);
    this.st.stepAudit = [];
    await this.exec(sql);
    this.st.direct = true;
  }

  protected async read<T>(f: () => Promise<T>): Promise<T> {
    await this.sync();
    return f();
  }

  protected async write<T>(f: () => Promise<T>): Promise<T> {
    await this.writeThrough();
    return f();
  }

  /** Nothing to note: a step that wrote through drops the caches when it ends. */
  protected wroteThrough(): void {}

  protected sessionRow(idHash: string): Promise<SessionRow | undefined> {
    return this.base.getSession(idHash);
  }
  protected leaseRow(family: string, route: string): Promise<LeaseRow | undefined> {
    return this.base.getLease(family, route);
  }
  protected checkpointRow(family: string, route: string): Promise<CheckpointRow | undefined> {
    return this.base.getCheckpoint(family, route);
  }
  protected idempotencyRow(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined> {
    return this.base.getIdempotency(family, op, route, requestId);
  }

  // ---- cached rows ------------------------------------------------------------

  async revision(family: string): Promise<number> {
    if (family === this.family) return this.st.stepRevision ?? this.st.revision;
    return this.base.revision(family);
  }
  async bumpRevision(family: string): Promise<number> {
    if (family !== this.family) return this.write(() => this.base.bumpRevision(family));
    this.st.stepRevision = (this.st.stepRevision ?? this.st.revision) + 1;
    return this.st.stepRevision;
  }

  /** Kept with the step and sent with the COMMIT (dropped if the step throws). */
  async broadcast(message: string): Promise<void> {
    this.st.stepMessages.push(message);
  }
}
