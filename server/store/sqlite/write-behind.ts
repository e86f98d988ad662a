/**
 * The SQLite step runner's unit of work (docs/design.md, "SQLite: group
 * commit"): the SQLite parts of the one unit of work
 * (`server/store/unit-of-work.ts`, which holds the `Tx` method table and
 * the cached tables). One `BatchTx` serves every step of a batch, which
 * shares one `BEGIN IMMEDIATE` transaction:
 *
 * - the hot rows (leases, sessions, idempotency records, checkpoints, family
 *   revisions) are read through a cache and written behind: a
 *   step's writes are kept in its own overlay, merged into the batch when it
 *   succeeds and dropped when it throws (its all-or-nothing outcome, without
 *   a savepoint), and flushed at commit as a few multi-row statements per
 *   table;
 * - audit rows are appended at commit in one multi-row insert;
 * - any other read (scans, due lists, counts) first writes what the batch
 *   holds, so it sees every earlier step; a step that also holds writes of
 *   its own, or writes anything uncached, switches to writing through under a
 *   savepoint for its remaining operations (the savepoint rule as before).
 *
 * This process is the database's only writer (exclusive locking mode), so
 * what a committed batch leaves in the caches of leases, sessions,
 * checkpoints and revisions is still true when the next batch begins: those
 * caches outlive the batch (a lease acquired in one batch is released in the
 * next without reading its row, session or revision again). They are
 * dropped whenever the database may differ from them: a batch that did not
 * commit, a step that wrote through, or a cache grown past `KEEP_ROWS`.
 * Idempotency records are keyed by request ids, which are rarely read
 * twice: that cache keeps only the records still pending, and is dropped
 * at every commit once they are written.
 */

import type Database from 'better-sqlite3';
import type { ChangeLogTx, ChangeRow, CheckpointRow, IdempotencyRow, LeaseRow, NewAuditRow, PolicyTx, SessionRow, Tx } from '../types';
import { millis, type Millis } from '../millis';
import { AUDIT_COLS, CHANGE_COLS, CHECKPOINTS, CachedTable, changeValues, differsOnlyIn, IDEMPOTENCY, LEASES, leaseKey, SEP, SESSIONS, UnitOfWork, auditValues, type Entries, type TableSpec } from '../unit-of-work';
import { MERGE_AT, type RecentIdempotency } from './recent-idempotency';
import type { WriteLog } from './journal';

/** Rows per multi-row statement (SQLite allows 32,766 parameters; the widest table has 19 columns). */
const CHUNK = 128;
/** A kept cache holding more rows than this at the end of a batch is dropped (memory bound). */
const KEEP_ROWS = 50_000;

/** A statement run and reported to the write log (`both`), only run (`run`: the journal has it), or only reported (`log`: run later). */
type WriteMode = 'both' | 'run' | 'log';

/** Where a table's pending rows go instead of its own multi-row statements. */
interface Sink<V> {
  put(rows: V[]): void;
  delete(key: string): void;
}

/** Prepared multi-row statements, by table, kind and row count. */
class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(
    private readonly db: Database.Database,
    private readonly log: WriteLog,
  ) {}

  get(id: string, n: number, build: (n: number) => string): Database.Statement {
    const k = `${id}/${n}`;
    let s = this.cache.get(k);
    if (!s) {
      s = this.db.prepare(build(n));
      this.cache.set(k, s);
    }
    return s;
  }

  /**
   * Run `build(n)` over `params` in chunks of at most CHUNK rows of `width`
   * values, and report each statement to the write log (`both`), or only run
   * it (`run`: rows the journal holds already), or only report it (`log`:
   * rows kept for the commit, see `SqliteTable.logBatch`).
   */
  runChunked(id: string, rows: readonly unknown[][], width: number, build: (n: number) => string, mode: WriteMode = 'both'): void {
    for (let i = 0; i < rows.length; i += CHUNK) {
      const n = Math.min(CHUNK, rows.length - i);
      const flat: unknown[] = new Array(n * width);
      let j = 0;
      for (let r = i; r < i + n; r++) for (const v of rows[r]!) flat[j++] = v;
      const stmt = this.get(id, n, build);
      // Rows only reported now are written at the commit, after the batch was
      // answered: a value SQLite would refuse must fail this batch, not that commit.
      if (mode === 'log') for (const v of flat) if (!bindable(v)) throw new TypeError(`SQLite3 can only bind numbers, strings, bigints, buffers, and null (${id})`);
      if (mode !== 'run') this.log.add(stmt, flat);
      if (mode !== 'log') stmt.run(flat);
    }
  }
}

/** What better-sqlite3 binds: anything else throws when the statement runs. */
function bindable(v: unknown): boolean {
  const t = typeof v;
  return v === null || t === 'string' || t === 'number' || t === 'bigint' || Buffer.isBuffer(v);
}

function tuples(n: number, width: number): string {
  const one = `(${new Array(width).fill('?').join(',')})`;
  return new Array(n).fill(one).join(',');
}

/** How a cached SQLite table keeps and writes its rows. */
interface TableOptions<V> {
  /** Where its rows go instead of its own multi-row statements. */
  sink?: Sink<V>;
  /** Rows its cache may keep once nothing is pending (default KEEP_ROWS; 0: dropped at every commit). */
  keepRows?: number;
  /** Upserts are written in key order (a table whose keys arrive scattered: each index page is touched once per statement). */
  sorted?: boolean;
  /** Runs before any of its rows are written or reported. */
  beforeWrite?: () => void;
  /**
   * The table keeps a sweep horizon (`sweep_at`, docs/design.md "The sweep
   * horizon"), a lower bound of this value of its rows: a new row gets the
   * value, a row written again only ever lowers it, and a narrow update,
   * which leaves the column (and its index) alone, is used only when the
   * value did not fall.
   */
  horizon?: (row: V) => number;
}

/** A cached table written by multi-row SQLite statements (or handed to a sink). */
class SqliteTable<V> extends CachedTable<V> {
  private readonly sink: Sink<V> | undefined;
  private readonly keepRows: number;

  constructor(
    spec: TableSpec<V>,
    private readonly sql: Statements,
    private readonly opts: TableOptions<V> = {},
  ) {
    super(spec);
    this.sink = opts.sink;
    this.keepRows = opts.keepRows ?? KEEP_ROWS;
  }

  /** Keys the current batch wrote: its journal line (`logBatch`). */
  private readonly batchKeys = new Set<string>();
  /**
   * A pending row's value in the database (the known row when a step first
   * wrote its key): against it a row is written narrowly (`TableSpec.narrow`).
   */
  private readonly stored = new Map<string, V>();

  override commitStep(): void {
    for (const k of this.step.keys()) {
      this.batchKeys.add(k);
      if (this.spec.narrow && !this.dirty.has(k)) {
        const before = this.known.get(k);
        if (before) this.stored.set(k, before);
      }
    }
    super.commitStep();
  }

  /**
   * Write every pending row (of this batch and of journaled batches before
   * it) into the open transaction; the cache stays valid. Rows of a table
   * with a sink are reported to the write log as the sink writes them; the
   * others are not (the journal has them from `logBatch`, or the batch
   * commits).
   */
  flushBatch(): void {
    const entries = this.takeBatch();
    if (entries) this.flush(entries, 'run');
  }

  /**
   * Report the batch's rows (each key's last value) to the write log without
   * writing them: a journaled batch's rows wait in the cache, pending, for
   * the commit (or a read that needs the database), so a lease acquired and
   * released between two commits never touches the table. A table with a
   * sink writes its rows at once instead (`flushBatch`).
   */
  logBatch(): void {
    if (this.sink) {
      this.flushBatch();
      return;
    }
    if (this.batchKeys.size === 0) return;
    const entries = [...this.batchKeys].map((k) => [k, this.known.get(k) ?? null] as const);
    this.batchKeys.clear();
    this.flush(entries, 'log');
  }

  /** Write the step's rows (it continues writing through); the cache is dropped when the step ends. */
  flushStep(): void {
    const entries = this.takeStep();
    if (entries) this.flush(entries, 'both');
  }

  /**
   * The batch is durable: what is known stays true (this process is the
   * only writer); rows still pending stay pending. The cache is dropped past
   * KEEP_ROWS only when nothing is pending (right after a commit).
   */
  keep(): void {
    this.step.clear();
    this.batchKeys.clear();
    if (this.dirty.size === 0 && this.known.size > this.keepRows) this.known.clear();
  }

  override reset(): void {
    this.batchKeys.clear();
    this.stored.clear();
    super.reset();
  }

  private flush(entries: Entries<V>, mode: 'both' | 'run' | 'log'): void {
    this.opts.beforeWrite?.();
    if (this.sink) {
      const puts: V[] = [];
      for (const [k, v] of entries) {
        if (v === null) this.sink.delete(k);
        else puts.push(v);
      }
      if (puts.length > 0) this.sink.put(puts);
      return;
    }
    const { name, keyCols, cols, narrow } = this.spec;
    const horizon = this.opts.horizon;
    const upserts: unknown[][] = [];
    const deletes: unknown[][] = [];
    const updates: unknown[][] = [];
    // Keys joined with SEP (U+0000) order as their column tuples do.
    if (this.opts.sorted) entries = [...entries].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [k, v] of entries) {
      const before = this.stored.get(k);
      // Rows only reported (`log`) stay pending: the database still holds `before`.
      if (mode !== 'log') this.stored.delete(k);
      if (v === null) deletes.push(k.split(SEP));
      else if (narrow && before !== undefined && (!horizon || horizon(v) >= horizon(before)) && (narrow.only ? narrow.only(before, v) : differsOnlyIn(before, v, narrow.fields))) updates.push(narrow.params(v));
      else if (horizon) upserts.push([...this.spec.values(v), horizon(v)]);
      else upserts.push(this.spec.values(v));
    }
    if (deletes.length > 0) {
      this.sql.runChunked(`${name}-del`, deletes, keyCols.length, (n) => `DELETE FROM ${name} WHERE (${keyCols.join(',')}) IN (VALUES ${tuples(n, keyCols.length)})`, mode);
    }
    if (upserts.length > 0 && horizon) {
      const set = [...cols.filter((c) => !keyCols.includes(c)).map((c) => `${c} = excluded.${c}`), `sweep_at = min(${name}.sweep_at, excluded.sweep_at)`];
      const width = cols.length + 1;
      const sql = (n: number) => `INSERT INTO ${name} (${cols.join(',')},sweep_at) VALUES ${tuples(n, width)} ON CONFLICT (${keyCols.join(',')}) DO UPDATE SET ${set.join(', ')}`;
      this.sql.runChunked(`${name}-put`, upserts, width, sql, mode);
    } else if (upserts.length > 0) {
      this.sql.runChunked(`${name}-put`, upserts, cols.length, (n) => `INSERT OR REPLACE INTO ${name} (${cols.join(',')}) VALUES ${tuples(n, cols.length)}`, mode);
    }
    if (narrow && updates.length > 0) {
      const width = keyCols.length + narrow.cols.length;
      const set = narrow.cols.map((c, i) => `${c} = v.column${keyCols.length + i + 1}`).join(', ');
      const match = keyCols.map((c, i) => `${name}.${c} = v.column${i + 1}`).join(' AND ');
      this.sql.runChunked(`${name}-narrow`, updates, width, (n) => `UPDATE ${name} SET ${set} FROM (VALUES ${tuples(n, width)}) AS v WHERE ${match}`, mode);
    }
  }
}

interface RevisionRow {
  family: string;
  revision: number;
}

const REVISIONS: TableSpec<RevisionRow> = {
  name: 'families',
  keyCols: ['family'],
  cols: ['family', 'revision'],
  values: (r) => [r.family, r.revision],
};

/** Savepoint control for a step that writes through. */
interface StepControl {
  savepoint: Database.Statement;
  release: Database.Statement;
  rollbackTo: Database.Statement;
  /** `SELECT total_changes()`, plucked: rows changed on this connection so far. */
  totalChanges: Database.Statement;
}

/** The direct statements: every `Tx` method answered by SQL at once, and the cached rows' loaders. */
export interface DirectTx extends Tx {
  now: Millis;
  revisionRow(family: string): number;
  sessionRow(idHash: string): SessionRow | undefined;
  leaseRow(family: string, route: string): LeaseRow | undefined;
  /** The lease rows of these routes that exist (in no particular order): `readAhead`'s few statements. */
  leaseRows(family: string, routes: readonly string[]): LeaseRow[];
  checkpointRow(family: string, route: string): CheckpointRow | undefined;
  idempotencyRow(family: string, op: string, route: string, requestId: string): IdempotencyRow | undefined;
  /** Whether a lease of the session holds a release request in the database (`mayHaveReleaseRequests`). */
  hasReleaseRequests(idHash: string): boolean;
  rearmLeases(now: Millis, limit: number): Promise<number>;
  /** Idempotency records appended apart from the keyed table; follows the transaction's savepoints and end. */
  readonly recentIdempotency: RecentIdempotency;
}

/** One batch's `Tx`: see the file comment. */
export class BatchTx extends UnitOfWork<DirectTx> {
  now = millis(0);
  /** Mutable state lives in one object (see `UnitOfWork`). */
  protected readonly st: {
    direct: boolean;
    /** The writing-through step wrote a cached table's rows past its cache: drop the caches when it ends. */
    stale: boolean;
    /** A flush failed mid-batch: the batch cannot commit. */
    poisoned: unknown;
    /**
     * The lock_delays table is known to be empty (true) or not (false);
     * undefined: unknown, counted at the next lock-delay read. Only a count
     * sets it true; a delay written sets it false; a step or batch undone
     * makes it unknown again (it may have deleted the rows the count missed).
     */
    noDelays: boolean | undefined;
    audit: NewAuditRow[];
    stepAudit: NewAuditRow[];
    /** Change-log rows, kept like audit rows: per step, then per batch, appended at commit in one multi-row insert. */
    changes: ChangeRow[];
    stepChanges: ChangeRow[];
    /**
     * Audit and change-log rows of journaled batches: in their journal lines
     * already, written to the transaction at the commit (or before a read
     * or a step writing through needs the database to hold them), after
     * which `audit` and `changes` (this batch's, not journaled yet) follow.
     */
    loggedAudit: NewAuditRow[];
    loggedChanges: ChangeRow[];
    /** A step of this batch changed rows writing through: those statements were not reported to the write log. */
    through: boolean;
    /** `total_changes()` once the writing-through step's own written-behind rows were flushed (logged). */
    changesAtThrough: number;
    /** `total_changes()` at the writing-through step's savepoint: what it changed since is its own (`stepWrote`). */
    changesAtSavepoint: number;
    /**
     * Sessions given a release request by a row still waiting in the caches
     * (this batch's, or a journaled batch's): emptied once a flush has
     * written every pending row, so it holds at most the requests made
     * between two commits. A step that threw may leave one here: that only
     * costs its session a read.
     */
    asked: Set<string>;
  } = { direct: false, stale: false, poisoned: undefined, noDelays: undefined, audit: [], stepAudit: [], changes: [], stepChanges: [], loggedAudit: [], loggedChanges: [], through: false, changesAtThrough: 0, changesAtSavepoint: 0, asked: new Set() };
  private readonly sql: Statements;
  protected readonly leases: SqliteTable<LeaseRow>;
  protected readonly sessions: SqliteTable<SessionRow>;
  protected readonly idem: SqliteTable<IdempotencyRow>;
  protected readonly checkpoints: SqliteTable<CheckpointRow>;
  private readonly revisions: SqliteTable<RevisionRow>;
  private readonly tables: ReadonlyArray<SqliteTable<never>>;
  /**
   * Policies and lock-delays are never cached: their reads go straight to
   * SQL (no cached table holds them), their writes make the step write
   * through under its savepoint, so a step that throws undoes them too.
   */
  readonly policies: PolicyTx;
  /** Appends are written behind with the batch; reads see every earlier write; a prune writes through. */
  readonly changes: ChangeLogTx;

  constructor(
    db: Database.Database,
    protected readonly base: DirectTx,
    private readonly ctl: StepControl,
    log: WriteLog,
  ) {
    super();
    this.sql = new Statements(db, log);
    this.leases = new SqliteTable(LEASES, this.sql, { horizon: (l) => l.expiresAt });
    this.sessions = new SqliteTable(SESSIONS, this.sql);
    // Idempotency records wait in the cache like the other keyed rows (in
    // the journal lines of their batches) and are written in key order at the
    // commit, a few hundred to a few thousand at once. Records a step wrote
    // through (the recent tier, see recent-idempotency.ts) are moved into the
    // keyed table first, so no older record there shadows a newer one here.
    const recent = base.recentIdempotency;
    this.idem = new SqliteTable(IDEMPOTENCY, this.sql, {
      keepRows: 0,
      sorted: true,
      beforeWrite: () => {
        if (recent.size > 0) recent.merge();
      },
    });
    this.checkpoints = new SqliteTable(CHECKPOINTS, this.sql);
    this.revisions = new SqliteTable(REVISIONS, this.sql);
    this.tables = [this.leases, this.sessions, this.idem, this.checkpoints, this.revisions] as unknown as ReadonlyArray<SqliteTable<never>>;
    const p = base.policies;
    this.policies = this.delegatePolicies(p, {
      getLockDelay: async (family, route) => {
        // Most stores hold no lock-delay at all: then every acquire of a free route skips this read.
        this.st.noDelays ??= (await p.countLockDelays(millis(0))) === 0;
        return this.st.noDelays ? undefined : p.getLockDelay(family, route);
      },
      setLockDelay: (row) => {
        this.st.noDelays = false;
        return this.write(() => p.setLockDelay(row));
      },
    });
    const c = base.changes;
    this.changes = this.delegateChanges(c, async (rows) => {
      if (this.st.direct) return c.append(rows);
      this.st.stepChanges.push(...rows);
    });
  }

  // ---- the runner's side ----------------------------------------------------

  beginStep(now: Millis): void {
    this.now = now;
    this.base.now = now;
  }

  /**
   * The current step changed something: rows waiting in its overlay, audit
   * or change-log rows, or (writing through) rows changed since its
   * savepoint. A step that wrote through without changing a row (a sweep
   * with nothing to prune) did not. The store asks before keeping a step
   * while it refuses writes (a full disk).
   */
  stepWrote(): boolean {
    if (this.st.stepAudit.length > 0 || this.st.stepChanges.length > 0 || this.tables.some((t) => t.stepWrites > 0)) return true;
    return this.st.direct && (this.ctl.totalChanges.get() as number) !== this.st.changesAtSavepoint;
  }

  /** End the current step: keep its writes (ok) or drop them. */
  endStep(ok: boolean): void {
    if (this.st.direct) {
      this.st.direct = false;
      // A step that wrote through but changed no row past what it flushed
      // (a sweep with nothing to prune) leaves the batch journaled; one that
      // changed rows, or threw (its flushed rows were rolled back), does not.
      if (!ok || (this.ctl.totalChanges.get() as number) !== this.st.changesAtThrough) this.st.through = true;
      try {
        if (!ok) {
          this.st.noDelays = undefined;
          this.ctl.rollbackTo.run();
          this.base.recentIdempotency.rollbackToSavepoint();
        }
        this.ctl.release.run();
        this.base.recentIdempotency.releaseSavepoint();
      } finally {
        // If the step wrote cached rows through, the database moved under
        // the caches: start them afresh. Otherwise it only wrote tables no
        // cache holds (tokens, logins, policies, audit pruning: the periodic
        // sweep) and pruned idempotency records, whose cache lasts a batch.
        if (this.st.stale) for (const t of this.tables) t.reset();
        else this.idem.reset();
        this.st.stale = false;
        this.st.stepAudit = [];
        this.st.stepChanges = [];
      }
      return;
    }
    if (ok) {
      for (const t of this.tables) t.commitStep();
      if (this.st.stepAudit.length > 0) this.st.audit.push(...this.st.stepAudit);
      if (this.st.stepChanges.length > 0) this.st.changes.push(...this.st.stepChanges);
    } else {
      for (const t of this.tables) t.abortStep();
    }
    this.st.stepAudit = [];
    this.st.stepChanges = [];
  }

  /**
   * The end of a batch made durable by the batch journal: report its rows to
   * the write log and write its idempotency records (a table with a sink).
   * The keyed tables' rows, and the audit and change-log rows, stay pending
   * (in the caches and in `loggedAudit` / `loggedChanges`) until the commit
   * or a read that needs the database to hold them. Throws if the batch
   * cannot be kept.
   */
  journalBatch(): void {
    this.guarded(() => {
      for (const t of this.tables) t.logBatch();
      this.mergeIdempotencyIfDue();
      const { audit, changes } = this.st;
      this.st.audit = [];
      this.st.changes = [];
      this.insertAuditRows(audit, 'log');
      this.insertChangeRows(changes, 'log');
      for (const r of audit) this.st.loggedAudit.push(r);
      for (const r of changes) this.st.loggedChanges.push(r);
    });
  }

  /** Write everything pending (this batch's steps, and journaled batches' rows); throws if the batch cannot commit. */
  flushBatch(): void {
    this.guarded(() => {
      for (const t of this.tables) t.flushBatch();
      this.st.asked.clear();
      this.mergeIdempotencyIfDue();
      const { loggedAudit, audit, loggedChanges, changes } = this.st;
      this.st.loggedAudit = [];
      this.st.audit = [];
      this.st.loggedChanges = [];
      this.st.changes = [];
      // Journaled batches' rows first (their journal lines have them), then this batch's.
      this.insertAuditRows(loggedAudit, 'run');
      this.insertAuditRows(audit);
      this.insertChangeRows(loggedChanges, 'run');
      this.insertChangeRows(changes);
    });
  }

  /** Run a batch-end write; a failure poisons the batch (it cannot commit) and is thrown. */
  private guarded(write: () => void): void {
    if (this.st.poisoned !== undefined) throw this.st.poisoned;
    try {
      write();
    } catch (e) {
      this.st.poisoned = e;
      throw e;
    }
  }

  private mergeIdempotencyIfDue(): void {
    if (this.base.recentIdempotency.size >= MERGE_AT) this.base.recentIdempotency.merge();
  }

  /**
   * The batch ended. Committed: the kept caches stay (see the file comment),
   * the per-batch ones are dropped. Rolled back: everything is forgotten.
   */
  endBatch(committed = false): void {
    for (const t of this.tables) {
      if (committed && this.st.poisoned === undefined) t.keep();
      else t.reset();
    }
    if (committed && this.st.poisoned === undefined) this.base.recentIdempotency.committed();
    else {
      this.base.recentIdempotency.rolledBack();
      this.st.noDelays = undefined;
      // The rollback undid the journaled batches too; recovery applies their lines again.
      this.st.loggedAudit = [];
      this.st.loggedChanges = [];
    }
    this.st.audit = [];
    this.st.stepAudit = [];
    this.st.changes = [];
    this.st.stepChanges = [];
    this.st.direct = false;
    this.st.stale = false;
    this.st.poisoned = undefined;
    this.st.through = false;
  }

  /**
   * Every statement of the batch that changed rows was reported to the write
   * log, so the batch can be made durable by the batch journal alone
   * (server/store/sqlite/journal.ts). False once a step changed rows writing
   * through (or threw after writing through): the batch must commit.
   */
  get journaled(): boolean {
    return !this.st.through;
  }

  protected override heldChanges(): ChangeRow[] {
    return [...this.st.loggedChanges, ...this.st.changes, ...this.st.stepChanges];
  }

  private insertChangeRows(rows: readonly ChangeRow[], mode: WriteMode = 'both'): void {
    if (rows.length === 0) return;
    this.sql.runChunked('change-add', rows.map(changeValues), CHANGE_COLS.length, (n) => `INSERT INTO change_log (${CHANGE_COLS.join(',')}) VALUES ${tuples(n, CHANGE_COLS.length)}`, mode);
  }

  private insertAuditRows(rows: readonly NewAuditRow[], mode: WriteMode = 'both'): void {
    if (rows.length === 0) return;
    this.sql.runChunked('audit-add', rows.map((r) => auditValues(r, 1)), AUDIT_COLS.length, (n) => `INSERT INTO audit (${AUDIT_COLS.join(',')}) VALUES ${tuples(n, AUDIT_COLS.length)}`, mode);
    // The per-family row counts the audit quotas read (docs/operations.md "Threat model") move with the rows.
    const perFamily = new Map<string, number>();
    for (const r of rows) perFamily.set(r.family, (perFamily.get(r.family) ?? 0) + 1);
    this.sql.runChunked(
      'audit-count-add',
      [...perFamily].map(([family, n]) => [family, n]),
      2,
      (n) => `INSERT INTO audit_counts (family, rows) VALUES ${tuples(n, 2)} ON CONFLICT (family) DO UPDATE SET rows = rows + excluded.rows`,
      mode,
    );
  }

  /** Before a read the caches cannot answer: the database must hold every write so far, this step's included. */
  private sync(): void {
    this.flushBatch();
    if (!this.st.direct && (this.st.stepAudit.length > 0 || this.st.stepChanges.length > 0 || this.tables.some((t) => t.stepWrites > 0))) this.writeThrough();
  }

  /** From here on this step writes through SQL, under a savepoint. */
  private writeThrough(): void {
    if (this.st.direct) return;
    // The batch's rows so far go into its journal line now: a step that
    // writes through may drop the caches they are read from.
    for (const t of this.tables) t.logBatch();
    this.flushBatch();
    this.ctl.savepoint.run();
    this.st.changesAtSavepoint = this.ctl.totalChanges.get() as number;
    this.base.recentIdempotency.savepoint();
    this.st.direct = true;
    if (this.tables.some((t) => t.stepWrites > 0)) this.st.stale = true;
    for (const t of this.tables) t.flushStep();
    if (this.st.stepAudit.length > 0) {
      this.insertAuditRows(this.st.stepAudit);
      this.st.stepAudit = [];
    }
    if (this.st.stepChanges.length > 0) {
      this.insertChangeRows(this.st.stepChanges);
      this.st.stepChanges = [];
    }
    this.st.changesAtThrough = this.ctl.totalChanges.get() as number;
  }

  protected wroteThrough(): void {
    this.st.stale = true;
  }

  /**
   * Only `setReleaseRequest` gives a lease a request, and no other write
   * moves one to another session: a session none of whose rows in the
   * database has one (the partial index, in this connection's open
   * transaction), and that no pending row gave one (`asked`), has none, and
   * the batch is not flushed to find that out.
   */
  protected override mayHaveReleaseRequests(idHash: string): boolean {
    return this.st.asked.has(idHash) || this.base.hasReleaseRequests(idHash);
  }

  protected override releaseRequestWritten(sessionHash: string): void {
    this.st.asked.add(sessionHash);
  }

  protected async read<T>(f: () => Promise<T>): Promise<T> {
    this.sync();
    return f();
  }

  protected async write<T>(f: () => Promise<T>): Promise<T> {
    this.writeThrough();
    return f();
  }

  /**
   * The sweep horizon moved on (docs/design.md "The sweep horizon"),
   * written through the open transaction. No cached row changes (a lease
   * row holds no horizon), so the caches stay; and the batch stays
   * journaled: a horizon is only a lower bound, so a re-arm that a crash or
   * a rollback loses costs a later sweep one more re-arm, nothing else. For
   * the same reason it is no write of the step's (`stepWrote`).
   */
  async rearmLeases(now: Millis, limit: number): Promise<number> {
    return this.write(async () => {
      const before = this.ctl.totalChanges.get() as number;
      const n = await this.base.rearmLeases(now, limit);
      const moved = (this.ctl.totalChanges.get() as number) - before;
      this.st.changesAtThrough += moved;
      this.st.changesAtSavepoint += moved;
      return n;
    });
  }

  protected sessionRow(idHash: string): SessionRow | undefined {
    return this.base.sessionRow(idHash);
  }
  protected leaseRow(family: string, route: string): LeaseRow | undefined {
    return this.base.leaseRow(family, route);
  }

  /**
   * Before a batched call's step: the lease rows of `routes` that the cache
   * does not know, read in a few statements and remembered (absent ones as
   * absent), so the step's reads are answered from the cache. A key the
   * cache knows (pending rows among them) is left as it is; the database
   * holds the truth for every other key (the cache is dropped only when
   * nothing is pending).
   */
  readAhead(family: string, routes: readonly string[]): void {
    if (this.st.direct) return;
    const missing: string[] = [];
    for (const route of routes) if (!this.leases.knows(leaseKey(family, route))) missing.push(route);
    if (missing.length === 0) return;
    const found = new Set<string>();
    for (const row of this.base.leaseRows(family, missing)) {
      found.add(row.route);
      this.leases.learn(leaseKey(family, row.route), row);
    }
    for (const route of missing) if (!found.has(route)) this.leases.learn(leaseKey(family, route), null);
  }
  protected checkpointRow(family: string, route: string): CheckpointRow | undefined {
    return this.base.checkpointRow(family, route);
  }
  protected idempotencyRow(family: string, op: string, route: string, requestId: string): IdempotencyRow | undefined {
    return this.base.idempotencyRow(family, op, route, requestId);
  }

  // ---- cached rows ------------------------------------------------------------

  async revision(family: string): Promise<number> {
    if (this.st.direct) return this.base.revision(family);
    // The loader is synchronous, so is the read.
    return (this.revisions.read(family, () => ({ family, revision: this.base.revisionRow(family) })) as RevisionRow | undefined)?.revision ?? 0;
  }
  async bumpRevision(family: string): Promise<number> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.bumpRevision(family);
    }
    const next = (await this.revision(family)) + 1;
    this.revisions.write(family, { family, revision: next });
    return next;
  }
}
