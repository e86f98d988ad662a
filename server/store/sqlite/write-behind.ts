/**
 * The SQLite step runner's unit of work (docs/design.md, "SQLite: group
 * commit"). One `BatchTx` serves every step of a batch, which shares one
 * `BEGIN IMMEDIATE` transaction:
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
 * twice: that cache lasts one batch.
 */

import type Database from 'better-sqlite3';
import { routeSegments } from '@/lib/selector';
import type {
  AuditScan,
  AuditScanResult,
  ChangeLogTx,
  ChangeRow,
  CheckpointRow,
  IdempotencyRow,
  LeaseRow,
  LeaseScan,
  LeaseScanResult,
  LoginRow,
  NewAuditRow,
  PolicyTx,
  SessionRow,
  TokenRow,
  Tx,
} from '../types';
import { RARE_AUDIT_TYPES } from '../types';
import { millis, type Millis } from '../millis';
import { MERGE_AT, type RecentIdempotency } from './recent-idempotency';
import { CHANGE_COLS, changeValues } from './change-log';

/** Rows per multi-row statement (SQLite allows 32,766 parameters; the widest table has 19 columns). */
const CHUNK = 128;
const SEP = '\u0000';
/** A kept cache holding more rows than this at the end of a batch is dropped (memory bound). */
const KEEP_ROWS = 50_000;

interface TableSpec<V> {
  name: string;
  keyCols: readonly string[];
  cols: readonly string[];
  key(row: V): string;
  values(row: V): unknown[];
}

/** Where a table's pending rows go instead of its own multi-row statements. */
interface Sink<V> {
  put(rows: V[]): void;
  delete(key: string): void;
}

/** Prepared multi-row statements, by table, kind and row count. */
class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(private readonly db: Database.Database) {}

  get(id: string, n: number, build: (n: number) => string): Database.Statement {
    const k = `${id}/${n}`;
    let s = this.cache.get(k);
    if (!s) {
      s = this.db.prepare(build(n));
      this.cache.set(k, s);
    }
    return s;
  }

  /** Run `build(n)` over `params` in chunks of at most CHUNK rows of `width` values. */
  runChunked(id: string, rows: readonly unknown[][], width: number, build: (n: number) => string): void {
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      const flat: unknown[] = new Array(part.length * width);
      let j = 0;
      for (const r of part) for (const v of r) flat[j++] = v;
      this.get(id, part.length, build).run(flat);
    }
  }
}

function tuples(n: number, width: number): string {
  const one = `(${new Array(width).fill('?').join(',')})`;
  return new Array(n).fill(one).join(',');
}

/** One table's rows as a batch sees them: read through, written behind. */
class CachedTable<V> {
  /** State known in this batch (read or written by a committed step): a row, or null when absent. */
  private readonly known = new Map<string, V | null>();
  /** Keys of `known` written by committed steps and not yet in the database. */
  private readonly dirty = new Set<string>();
  /** The current step's writes. */
  private readonly step = new Map<string, V | null>();

  constructor(
    private readonly spec: TableSpec<V>,
    private readonly sql: Statements,
    private readonly sink?: Sink<V>,
  ) {}

  read(key: string, load: () => V | undefined): V | undefined {
    let v = this.step.get(key);
    if (v === undefined) v = this.known.get(key);
    if (v === undefined) {
      v = load() ?? null;
      this.known.set(key, v);
    }
    return v ?? undefined;
  }

  write(key: string, v: V | null): void {
    this.step.set(key, v);
  }

  get stepWrites(): number {
    return this.step.size;
  }

  commitStep(): void {
    for (const [k, v] of this.step) {
      this.known.set(k, v);
      this.dirty.add(k);
    }
    this.step.clear();
  }

  abortStep(): void {
    this.step.clear();
  }

  /** Write the batch's pending rows; the cache stays valid. */
  flushBatch(): void {
    if (this.dirty.size === 0) return;
    this.flush([...this.dirty].map((k) => [k, this.known.get(k)!] as const));
    this.dirty.clear();
  }

  /** Write the step's rows (it continues writing through); the cache is dropped when the step ends. */
  flushStep(): void {
    if (this.step.size === 0) return;
    this.flush([...this.step]);
    this.step.clear();
  }

  /** The batch committed: what is known stays true (this process is the only writer); nothing is pending. */
  keep(): void {
    this.dirty.clear();
    this.step.clear();
    if (this.known.size > KEEP_ROWS) this.known.clear();
  }

  /** Forget everything (a batch that did not commit, or after a step wrote through). */
  reset(): void {
    this.known.clear();
    this.dirty.clear();
    this.step.clear();
  }

  private flush(entries: ReadonlyArray<readonly [string, V | null]>): void {
    if (this.sink) {
      const puts: V[] = [];
      for (const [k, v] of entries) {
        if (v === null) this.sink.delete(k);
        else puts.push(v);
      }
      if (puts.length > 0) this.sink.put(puts);
      return;
    }
    const { name, keyCols, cols } = this.spec;
    const upserts: unknown[][] = [];
    const deletes: unknown[][] = [];
    for (const [k, v] of entries) {
      if (v === null) deletes.push(k.split(SEP));
      else upserts.push(this.spec.values(v));
    }
    if (deletes.length > 0) {
      this.sql.runChunked(`${name}-del`, deletes, keyCols.length, (n) => `DELETE FROM ${name} WHERE (${keyCols.join(',')}) IN (VALUES ${tuples(n, keyCols.length)})`);
    }
    if (upserts.length > 0) {
      this.sql.runChunked(`${name}-put`, upserts, cols.length, (n) => `INSERT OR REPLACE INTO ${name} (${cols.join(',')}) VALUES ${tuples(n, cols.length)}`);
    }
  }
}

const leaseKey = (family: string, route: string) => family + SEP + route;
const idemKey = (family: string, op: string, route: string, requestId: string) => [family, op, route, requestId].join(SEP);

const LEASES: TableSpec<LeaseRow> = {
  name: 'leases',
  keyCols: ['family', 'route'],
  cols: [
    'family', 'route', 'realm', 'area', 'resource', 'lease_id', 'fencing_token', 'session_hash', 'owner_id', 'incarnation',
    'acquired_at', 'renewed_at', 'expires_at', 'max_expires_at', 'ttl_ms', 'renewal_count', 'revision', 'metadata',
    'release_request',
  ],
  key: (r) => leaseKey(r.family, r.route),
  values: (r) => {
    const [realm, area, resource] = routeSegments(r.route);
    return [
      r.family, r.route, realm, area, resource, r.leaseId, r.fencingToken, r.sessionHash, r.ownerId, r.incarnation,
      r.acquiredAt, r.renewedAt, r.expiresAt, r.maxExpiresAt, r.ttlMs, r.renewalCount, r.revision, r.metadata,
      r.releaseRequest ?? null,
    ];
  },
};

const SESSIONS: TableSpec<SessionRow> = {
  name: 'sessions',
  keyCols: ['id_hash'],
  cols: ['id_hash', 'family', 'incarnation', 'owner_id', 'ttl_ms', 'created_at', 'expires_at'],
  key: (r) => r.idHash,
  values: (r) => [r.idHash, r.family, r.incarnation, r.ownerId, r.ttlMs, r.createdAt, r.expiresAt],
};

const IDEMPOTENCY: TableSpec<IdempotencyRow> = {
  name: 'idempotency',
  keyCols: ['family', 'op', 'route', 'request_id'],
  cols: ['family', 'op', 'route', 'request_id', 'digest', 'status', 'answer', 'expires_at'],
  key: (r) => idemKey(r.family, r.op, r.route, r.requestId),
  values: (r) => [r.family, r.op, r.route, r.requestId, r.digest, r.status, r.answer, r.expiresAt],
};

const CHECKPOINTS: TableSpec<CheckpointRow> = {
  name: 'checkpoints',
  keyCols: ['family', 'route'],
  cols: ['family', 'route', 'value', 'fencing_token', 'lease_id', 'written_at', 'version'],
  key: (r) => leaseKey(r.family, r.route),
  values: (r) => [r.family, r.route, r.value, r.fencingToken, r.leaseId, r.writtenAt, r.version],
};

interface RevisionRow {
  family: string;
  revision: number;
}

const REVISIONS: TableSpec<RevisionRow> = {
  name: 'families',
  keyCols: ['family'],
  cols: ['family', 'revision'],
  key: (r) => r.family,
  values: (r) => [r.family, r.revision],
};

const AUDIT_COLS = [
  'time', 'family', 'event_type', 'route', 'token_id', 'subject_token_id', 'owner_id', 'incarnation',
  'result', 'fencing_token', 'reason', 'correlation_id', 'latency_ms', 'rare',
] as const;

function auditValues(r: NewAuditRow): unknown[] {
  return [
    r.time, r.family, r.eventType, r.route, r.tokenId, r.subjectTokenId, r.ownerId, r.incarnation,
    r.result, r.fencingToken, r.reason, r.correlationId, r.latencyMs, RARE_AUDIT_TYPES.has(r.eventType) ? 1 : null,
  ];
}

/** Savepoint control for a step that writes through. */
export interface StepControl {
  savepoint: Database.Statement;
  release: Database.Statement;
  rollbackTo: Database.Statement;
}

/** The direct statements: every `Tx` method answered by SQL at once, and the cached rows' loaders. */
export interface DirectTx extends Tx {
  now: Millis;
  revisionRow(family: string): number;
  sessionRow(idHash: string): SessionRow | undefined;
  leaseRow(family: string, route: string): LeaseRow | undefined;
  checkpointRow(family: string, route: string): CheckpointRow | undefined;
  idempotencyRow(family: string, op: string, route: string, requestId: string): IdempotencyRow | undefined;
  /** Idempotency records appended apart from the keyed table; follows the transaction's savepoints and end. */
  readonly recentIdempotency: RecentIdempotency;
}

/** One batch's `Tx`: see the file comment. */
export class BatchTx implements Tx {
  now = millis(0);
  /**
   * Mutable state lives in one object, so a wrapper made with
   * `Object.create(tx)` (tests inject faults that way) changes the batch's
   * state, not a shadow of it.
   */
  private readonly st: {
    /** The current step writes through SQL under a savepoint. */
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
  } = { direct: false, stale: false, poisoned: undefined, noDelays: undefined, audit: [], stepAudit: [], changes: [], stepChanges: [] };
  private readonly sql: Statements;
  private readonly leases: CachedTable<LeaseRow>;
  private readonly sessions: CachedTable<SessionRow>;
  private readonly idem: CachedTable<IdempotencyRow>;
  private readonly checkpoints: CachedTable<CheckpointRow>;
  private readonly revisions: CachedTable<RevisionRow>;
  private readonly tables: ReadonlyArray<CachedTable<never>>;
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
    private readonly base: DirectTx,
    private readonly ctl: StepControl,
  ) {
    this.sql = new Statements(db);
    this.leases = new CachedTable(LEASES, this.sql);
    this.sessions = new CachedTable(SESSIONS, this.sql);
    const recent = base.recentIdempotency;
    this.idem = new CachedTable(IDEMPOTENCY, this.sql, {
      put: (rows) => recent.put(rows),
      delete: (key) => {
        const [family, op, route, requestId] = key.split(SEP) as [string, string, string, string];
        void base.deleteIdempotency(family, op, route, requestId);
      },
    });
    this.checkpoints = new CachedTable(CHECKPOINTS, this.sql);
    this.revisions = new CachedTable(REVISIONS, this.sql);
    this.tables = [this.leases, this.sessions, this.idem, this.checkpoints, this.revisions] as unknown as ReadonlyArray<CachedTable<never>>;
    const p = base.policies;
    this.policies = {
      listPolicies: (family) => p.listPolicies(family),
      countPolicies: (family) => p.countPolicies(family),
      putPolicy: (row) => this.write(() => p.putPolicy(row)),
      deletePolicy: (family, selector) => this.write(() => p.deletePolicy(family, selector)),
      getLockDelay: async (family, route) => {
        // Most stores hold no lock-delay at all: then every acquire of a free route skips this read.
        this.st.noDelays ??= (await p.countLockDelays(millis(0))) === 0;
        return this.st.noDelays ? undefined : p.getLockDelay(family, route);
      },
      setLockDelay: (row) => {
        this.st.noDelays = false;
        return this.write(() => p.setLockDelay(row));
      },
      deleteLockDelay: (family, route, until) => this.write(() => p.deleteLockDelay(family, route, until)),
      dueLockDelays: (family, now, limit) => p.dueLockDelays(family, now, limit),
      dueDelayFamilies: (now, limit) => p.dueDelayFamilies(now, limit),
      countLockDelays: (now) => p.countLockDelays(now),
    };
    const c = base.changes;
    this.changes = {
      append: async (rows) => {
        if (this.st.direct) return c.append(rows);
        this.st.stepChanges.push(...rows);
      },
      // A replay's pages read the batch's own rows from memory, so a herd of
      // resuming streams does not flush the batch at every page.
      read: async (family, after, upTo, limit) => {
        const inRange = (r: ChangeRow) => r.family === family && r.revision > after && r.revision <= upTo;
        const held = [...this.st.changes, ...this.st.stepChanges].filter(inRange);
        const stored = await c.read(family, after, upTo, limit);
        return held.length === 0 ? stored : [...stored, ...held].sort((a, b) => a.revision - b.revision).slice(0, limit);
      },
      // Only a prune (which writes through) moves a horizon.
      horizon: (family) => c.horizon(family),
      prune: (keepChanges, olderThan, limit) => this.write(() => c.prune(keepChanges, olderThan, limit)),
      stats: () => this.read(() => c.stats()),
    };
  }

  // ---- the runner's side ----------------------------------------------------

  beginStep(now: Millis): void {
    this.now = now;
    this.base.now = now;
  }

  /** End the current step: keep its writes (ok) or drop them. */
  endStep(ok: boolean): void {
    if (this.st.direct) {
      this.st.direct = false;
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

  /** Write everything the batch's steps wrote; throws if the batch cannot commit. */
  flushBatch(): void {
    if (this.st.poisoned !== undefined) throw this.st.poisoned;
    try {
      for (const t of this.tables) t.flushBatch();
      if (this.base.recentIdempotency.size >= MERGE_AT) this.base.recentIdempotency.merge();
      if (this.st.audit.length > 0) {
        this.insertAuditRows(this.st.audit);
        this.st.audit = [];
      }
      if (this.st.changes.length > 0) {
        this.insertChangeRows(this.st.changes);
        this.st.changes = [];
      }
    } catch (e) {
      this.st.poisoned = e;
      throw e;
    }
  }

  /**
   * The batch ended. Committed: the kept caches stay (see the file comment),
   * the per-batch ones are dropped. Rolled back: everything is forgotten.
   */
  endBatch(committed = false): void {
    for (const t of this.tables) {
      if (committed && this.st.poisoned === undefined && (t as unknown) !== this.idem) t.keep();
      else t.reset();
    }
    if (committed && this.st.poisoned === undefined) this.base.recentIdempotency.committed();
    else {
      this.base.recentIdempotency.rolledBack();
      this.st.noDelays = undefined;
    }
    this.st.audit = [];
    this.st.stepAudit = [];
    this.st.changes = [];
    this.st.stepChanges = [];
    this.st.direct = false;
    this.st.stale = false;
    this.st.poisoned = undefined;
  }

  private insertChangeRows(rows: readonly ChangeRow[]): void {
    this.sql.runChunked('change-add', rows.map(changeValues), CHANGE_COLS.length, (n) => `INSERT INTO change_log (${CHANGE_COLS.join(',')}) VALUES ${tuples(n, CHANGE_COLS.length)}`);
  }

  private insertAuditRows(rows: readonly NewAuditRow[]): void {
    this.sql.runChunked('audit-add', rows.map(auditValues), AUDIT_COLS.length, (n) => `INSERT INTO audit (${AUDIT_COLS.join(',')}) VALUES ${tuples(n, AUDIT_COLS.length)}`);
    // The per-family row counts the audit quotas read (docs/operations.md "Threat model") move with the rows.
    const perFamily = new Map<string, number>();
    for (const r of rows) perFamily.set(r.family, (perFamily.get(r.family) ?? 0) + 1);
    this.sql.runChunked(
      'audit-count-add',
      [...perFamily].map(([family, n]) => [family, n]),
      2,
      (n) => `INSERT INTO audit_counts (family, rows) VALUES ${tuples(n, 2)} ON CONFLICT (family) DO UPDATE SET rows = rows + excluded.rows`,
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
    this.flushBatch();
    this.ctl.savepoint.run();
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
  }

  /** A cached table's write in a step that writes through: the caches are stale once it ends. */
  private through<T>(f: () => Promise<T>): Promise<T> {
    this.st.stale = true;
    return f();
  }

  private async read<T>(f: () => Promise<T>): Promise<T> {
    this.sync();
    return f();
  }

  private async write<T>(f: () => Promise<T>): Promise<T> {
    this.writeThrough();
    return f();
  }

  // ---- cached rows ------------------------------------------------------------

  async revision(family: string): Promise<number> {
    if (this.st.direct) return this.base.revision(family);
    return this.revisions.read(family, () => ({ family, revision: this.base.revisionRow(family) }))?.revision ?? 0;
  }
  async bumpRevision(family: string): Promise<number> {
    if (this.st.direct) return this.through(() => this.base.bumpRevision(family));
    const next = (await this.revision(family)) + 1;
    this.revisions.write(family, { family, revision: next });
    return next;
  }

  async getSession(idHash: string): Promise<SessionRow | undefined> {
    if (this.st.direct) return this.base.getSession(idHash);
    return this.sessions.read(idHash, () => this.base.sessionRow(idHash));
  }
  async insertSession(row: SessionRow): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.insertSession(row));
    this.sessions.write(row.idHash, row);
  }
  async setSessionExpiry(idHash: string, expiresAt: Millis): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.setSessionExpiry(idHash, expiresAt));
    const s = await this.getSession(idHash);
    if (s) this.sessions.write(idHash, { ...s, expiresAt });
  }
  async deleteSession(idHash: string): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.deleteSession(idHash));
    this.sessions.write(idHash, null);
  }

  async getLease(family: string, route: string): Promise<LeaseRow | undefined> {
    if (this.st.direct) return this.base.getLease(family, route);
    return this.leases.read(leaseKey(family, route), () => this.base.leaseRow(family, route));
  }
  async insertLease(row: LeaseRow): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.insertLease(row));
    this.leases.write(LEASES.key(row), row);
  }
  async updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: Millis, expiresAt: Millis, ttlMs: number, renewalCount: number): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.updateLeaseRenewal(family, route, leaseId, renewedAt, expiresAt, ttlMs, renewalCount));
    const l = await this.getLease(family, route);
    if (l && l.leaseId === leaseId) this.leases.write(leaseKey(family, route), { ...l, renewedAt, expiresAt, ttlMs, renewalCount });
  }
  async setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean> {
    if (this.st.direct) return this.through(() => this.base.setReleaseRequest(family, route, leaseId, fencingToken, request));
    const l = await this.getLease(family, route);
    if (!l || l.leaseId !== leaseId || l.fencingToken !== fencingToken) return false;
    this.leases.write(leaseKey(family, route), { ...l, releaseRequest: request });
    return true;
  }
  async deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean> {
    if (this.st.direct) return this.through(() => this.base.deleteLease(family, route, leaseId, fencingToken));
    const l = await this.getLease(family, route);
    if (!l || l.leaseId !== leaseId || l.fencingToken !== fencingToken) return false;
    this.leases.write(leaseKey(family, route), null);
    return true;
  }

  async getCheckpoint(family: string, route: string): Promise<CheckpointRow | undefined> {
    if (this.st.direct) return this.base.getCheckpoint(family, route);
    return this.checkpoints.read(leaseKey(family, route), () => this.base.checkpointRow(family, route));
  }
  async putCheckpoint(row: CheckpointRow): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.putCheckpoint(row));
    this.checkpoints.write(CHECKPOINTS.key(row), row);
  }

  async getIdempotency(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined> {
    if (this.st.direct) return this.base.getIdempotency(family, op, route, requestId);
    return this.idem.read(idemKey(family, op, route, requestId), () => this.base.idempotencyRow(family, op, route, requestId));
  }
  async putIdempotency(row: IdempotencyRow): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.putIdempotency(row));
    this.idem.write(IDEMPOTENCY.key(row), row);
  }
  async deleteIdempotency(family: string, op: string, route: string, requestId: string): Promise<void> {
    if (this.st.direct) return this.through(() => this.base.deleteIdempotency(family, op, route, requestId));
    this.idem.write(idemKey(family, op, route, requestId), null);
  }

  async insertAudit(rows: readonly NewAuditRow[]): Promise<void> {
    if (this.st.direct) return this.base.insertAudit(rows);
    this.st.stepAudit.push(...rows);
  }

  // ---- reads the caches cannot answer ------------------------------------------

  dueSessions(now: Millis, limit: number, family?: string): Promise<SessionRow[]> {
    return this.read(() => this.base.dueSessions(now, limit, family));
  }
  dueFamilies(now: Millis, limit: number): Promise<string[]> {
    return this.read(() => this.base.dueFamilies(now, limit));
  }
  listSessions(family: string, ownerId: string | undefined, after: [number, string] | null, limit: number): Promise<SessionRow[]> {
    return this.read(() => this.base.listSessions(family, ownerId, after, limit));
  }
  countSessionLeases(idHash: string): Promise<number> {
    return this.read(() => this.base.countSessionLeases(idHash));
  }
  sessionLeases(idHash: string): Promise<LeaseRow[]> {
    return this.read(() => this.base.sessionLeases(idHash));
  }
  dueLeases(now: Millis, limit: number, family?: string): Promise<LeaseRow[]> {
    return this.read(() => this.base.dueLeases(now, limit, family));
  }
  scanLeases(scan: LeaseScan): Promise<LeaseScanResult> {
    return this.read(() => this.base.scanLeases(scan));
  }
  countLeases(family: string | null): Promise<number> {
    return this.read(() => this.base.countLeases(family));
  }
  familyCounts(): Promise<Array<{ family: string; leases: number; sessions: number }>> {
    return this.read(() => this.base.familyCounts());
  }
  scanAudit(scan: AuditScan): Promise<AuditScanResult> {
    return this.read(() => this.base.scanAudit(scan));
  }
  auditCounts(): Promise<Map<string, number>> {
    return this.read(() => this.base.auditCounts());
  }

  // Tokens, logins and meta are never cached: read them directly.
  getTokenByHash(secretHash: string): Promise<TokenRow | undefined> {
    return this.base.getTokenByHash(secretHash);
  }
  getToken(id: string): Promise<TokenRow | undefined> {
    return this.base.getToken(id);
  }
  listTokens(family: string | null): Promise<TokenRow[]> {
    return this.base.listTokens(family);
  }
  countTokens(): Promise<number> {
    return this.base.countTokens();
  }
  countLiveRootTokens(now: Millis): Promise<number> {
    return this.base.countLiveRootTokens(now);
  }
  countLiveEmbedTokens(createdBy: string, now: Millis): Promise<number> {
    return this.base.countLiveEmbedTokens(createdBy, now);
  }
  tokenLineage(id: string): Promise<TokenRow[]> {
    return this.base.tokenLineage(id);
  }
  getLogin(idHash: string): Promise<LoginRow | undefined> {
    return this.base.getLogin(idHash);
  }
  getMeta(key: string): Promise<string | undefined> {
    return this.base.getMeta(key);
  }
  schemaCurrent(): Promise<boolean> {
    return this.base.schemaCurrent();
  }

  // ---- uncached writes: the step writes through from here -----------------------

  pruneIdempotency(now: Millis, limit: number): Promise<number> {
    return this.write(() => this.base.pruneIdempotency(now, limit));
  }
  insertToken(row: TokenRow): Promise<void> {
    return this.write(() => this.base.insertToken(row));
  }
  revokeToken(id: string, at: Millis): Promise<void> {
    return this.write(() => this.base.revokeToken(id, at));
  }
  insertLogin(row: LoginRow): Promise<void> {
    return this.write(() => this.base.insertLogin(row));
  }
  deleteLogin(idHash: string): Promise<void> {
    return this.write(() => this.base.deleteLogin(idHash));
  }
  pruneLogins(now: Millis): Promise<number> {
    return this.write(() => this.base.pruneLogins(now));
  }
  pruneEmbedTokens(now: Millis, limit: number): Promise<number> {
    return this.write(() => this.base.pruneEmbedTokens(now, limit));
  }
  pruneAudit(olderThan: Millis, maxRows: number, limit: number): Promise<number> {
    return this.write(() => this.base.pruneAudit(olderThan, maxRows, limit));
  }
  pruneAuditFamily(family: string, keepNewest: number, limit: number): Promise<number> {
    return this.write(() => this.base.pruneAuditFamily(family, keepNewest, limit));
  }
  initMeta(key: string, value: string): Promise<string> {
    return this.write(() => this.base.initMeta(key, value));
  }
}
