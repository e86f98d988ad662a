/**
 * The embedded store: SQLite (better-sqlite3) in WAL mode in a data directory.
 *
 * Group commit: atomic steps that arrive in the same turn of the event loop
 * run one after another inside one SQLite transaction, each in its own
 * savepoint (a step that throws rolls back only itself), and the transaction
 * commits before any of them resolves. So no answer (not even a read's) is
 * given before the state it reports is durable, and a burst of 64 requests
 * costs one commit instead of 64.
 *
 * Durability: a batch is answered once it is durable, either committed or,
 * for a batch written behind entirely (the hot path), appended to the batch
 * journal (server/store/sqlite/journal.ts), the transaction then committing
 * every `COMMIT_EVERY_MS`. `synchronous=NORMAL` in WAL survives a process
 * crash (SIGKILL) with every answered step; `synchronous=FULL` also survives
 * power loss, at the cost of an fsync per batch (docs/benchmarks.md has the
 * figures).
 *
 * One process per data directory: the database is opened through SQLite's
 * `unix-excl` VFS (open.ts), so a second process fails at open instead of
 * sharing it. WAL checkpoints run in a worker thread (open.ts, Checkpointer).
 */

import { millis, systemClock, type Clock, type Millis } from '../millis';
import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { routeSegments } from '@/lib/selector';
import { MIGRATIONS } from './schema';
import { Checkpointer, openDatabase, WAL_BOUND_PAGES } from './open';
import { SqlitePolicies } from './policies';
import { SqliteChangeLog } from './change-log';
import { BatchTx, type DirectTx } from './write-behind';
import { BatchJournal, JournalWriteError, readJournalFile, type WriteLog } from './journal';
import { RetryGate, writeFaultOf } from './write-fault';
import { idempotencyKey, RecentIdempotency } from './recent-idempotency';
import { CHECKPOINT_FIELDS, columns, LEASE_FIELDS, named, SESSION_FIELDS, sqlite, TOKEN_FIELDS } from '../plan/dialect';
import { planLeaseScan, renderLeaseChunk, runLeaseScan } from '../plan/lease-scan';
import { planAuditScan, renderAuditScan } from '../plan/audit-scan';
import { auditPruneSql, backlogSql, dueFamiliesSql, dueSql, familyExcess, SQLITE_REARM_SQL } from '../plan/expiry';
import {
  RARE_AUDIT_TYPES,
  prunePrefix,
  tally,
  type OldAuditRow,
  StoreUnavailableError,
  type AuditRow,
  type AuditScan,
  type AuditScanResult,
  type CheckpointRow,
  type IdempotencyRow,
  type LeaseRow,
  type LoginRow,
  type LeaseScan,
  type NewAuditRow,
  type LeaseScanResult,
  type SessionRow,
  type StepScope,
  type Store,
  type StoreNotice,
  type TokenRow,
  type Tx,
  type WriteFault,
} from '../types';

/** A transaction holding journaled batches commits after at most this long (docs/design.md, "SQLite: the batch journal"). */
export const COMMIT_EVERY_MS = 200;
/**
 * A step hinted with at least this many routes (a batched call's) has the
 * lease rows its cache lacks read ahead, up to 128 a statement, instead of
 * one statement a row as its step reads them (docs/design.md "SQLite: group
 * commit"; docs/benchmarks.md "Wave 3, fifteenth session").
 */
const READ_AHEAD_MIN = 8;
/** While writes are refused, how often the store asks whether to try its commit again (write-fault.ts, RetryGate). */
const RETRY_CHECK_MS = 250;

export interface SqliteStoreOptions {
  dataDir: string;
  /** `full` adds an fsync per commit (power-loss durable). */
  synchronous?: 'normal' | 'full';
  /** Backend time; injected so tests move time instead of sleeping. */
  clock?: Clock;
  /** How long journaled batches may wait for their commit (default `COMMIT_EVERY_MS`; tests set it high to keep them in the journal). */
  commitEveryMs?: number;
}

interface Pending {
  fn: (tx: Tx) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** When it was queued (performance.now()): `queueDelayMs`. */
  at: number;
  /** A batched call's routes, read ahead in a few statements before its step runs (`BatchTx.readAhead`). */
  readAhead?: { family: string; routes: readonly string[] };
}

const prune = auditPruneSql(sqlite);

/** One column map per table (server/store/plan/dialect.ts), rendered for SQLite. */
const LEASE_COLS = columns(sqlite, LEASE_FIELDS);
/**
 * A lease row read as an array (`LEASE_COLS`' order, which is LEASE_FIELDS')
 * made into a `LeaseRow`, field by field in the order `renewedRow` builds
 * it: better-sqlite3 builds a row object property by property through V8's
 * API, about 40 % of a read's cost, and the rows it made had a shape of
 * their own beside the engine's (docs/benchmarks.md "Wave 3, fifteenth
 * session").
 */
function leaseOf(a: unknown[] | undefined): LeaseRow | undefined {
  if (a === undefined) return undefined;
  return {
    family: a[0] as string,
    route: a[1] as string,
    leaseId: a[2] as string,
    fencingToken: a[3] as number,
    sessionHash: a[4] as string,
    ownerId: a[5] as string,
    incarnation: a[6] as string,
    acquiredAt: a[7] as Millis,
    renewedAt: a[8] as Millis,
    expiresAt: a[9] as Millis,
    maxExpiresAt: a[10] as Millis,
    ttlMs: a[11] as number,
    renewalCount: a[12] as number,
    revision: a[13] as number,
    metadata: a[14] as string | null,
    releaseRequest: a[15] as string | null,
  };
}

/** Routes one `leaseRows` statement reads at most. */
const LEASE_ROWS_CHUNK = 128;
const SESSION_COLS = columns(sqlite, SESSION_FIELDS);
const TOKEN_COLS = columns(sqlite, TOKEN_FIELDS);
const CHECKPOINT_COLS = columns(sqlite, CHECKPOINT_FIELDS);

type RawToken = Omit<TokenRow, 'grants' | 'root'> & { grants: string; root: number };

function tokenFromRaw(raw: RawToken | undefined): TokenRow | undefined {
  if (!raw) return undefined;
  return { ...raw, grants: JSON.parse(raw.grants) as string[], root: raw.root === 1 };
}

/** The database files open in this process: `unix-excl` shares a file between a process's connections, so a second store on one is refused here. */
const OPEN_FILES = new Set<string>();

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly file: string;
  private readonly checkpointer: Checkpointer;
  private readonly clock: Clock;
  private tx!: BatchTx;
  private readonly journal: BatchJournal;
  /** When the open transaction last committed (performance.now()), and the timer that commits an idle one. */
  private lastCommit = performance.now();
  private commitTimer: NodeJS.Timeout | undefined;
  private readonly commitEveryMs: number;
  private putJournalSeq: Database.Statement | undefined;
  /** Journal lines applied at open: batches answered before a crash that had not committed. */
  readonly replayed: number;
  /**
   * Set while writes are refused (CONTRACT §19, docs/operations.md "Disk
   * full"): a write to the journal or the database failed for the disk's
   * sake. The open transaction then holds exactly what is durable (the
   * committed database plus the journal's lines), reads are answered from
   * it, a step that changes anything is undone and refused, and the commit
   * is tried again when `retryGate` says so. `held` is false when not even
   * that transaction could be opened: every step is refused then.
   */
  private fault: { kind: WriteFault; held: boolean; error: unknown } | undefined;
  private readonly retryGate: RetryGate;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(notice: StoreNotice) => void>();

  /** Batches answered since the last commit (durable by their journal line alone). */
  get uncommittedBatches(): number {
    return this.journal.backlog;
  }
  private queue: Pending[] = [];
  /** Steps not yet answered, in arrival order (`queueDelayMs`). */
  private readonly unanswered = new Set<Pending>();
  private scheduled = false;
  private flushing = false;
  private closed = false;
  private readonly epochValue: string;
  /** Transaction control, prepared once (exec would recompile it every batch and step). */
  private readonly ctl: Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo' | 'totalChanges', Database.Statement>;

  /**
   * Open (creating if needed) the store in `dataDir`. Throws if another
   * process holds it. On a full disk an existing store opens read-only
   * (writes refused until there is room again); a new one does not open.
   */
  constructor(opts: SqliteStoreOptions) {
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    this.clock = opts.clock ?? systemClock;
    const file = join(opts.dataDir, 'leasehold.sqlite');
    if (OPEN_FILES.has(file)) throw new Error(`the data directory ${opts.dataDir} is in use by another store of this process`);
    this.db = openDatabase(file);
    try {
      // unix-excl (open.ts): the WAL index lives in this process's memory,
      // never in a `-shm` file, which a full disk could not create.
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('busy_timeout = 0');
      // Savepoint journals in memory and a 64 MiB page cache: with the
      // checkpoints moved off this connection, about a third less CPU per
      // step (docs/benchmarks.md). This connection's own autocheckpoint is
      // only the WAL's bound (open.ts says when it fires).
      this.db.pragma('temp_store = MEMORY');
      this.db.pragma('cache_size = -65536');
      this.db.pragma(`wal_autocheckpoint = ${WAL_BOUND_PAGES}`);
      this.migrate();
    } catch (e) {
      this.db.close();
      if (e instanceof Error && /locked|busy/i.test(e.message)) {
        throw new Error(`the data directory ${opts.dataDir} is in use by another Leasehold process`);
      }
      throw e;
    }
    const p = (sql: string) => this.db.prepare(sql);
    this.ctl = {
      begin: p('BEGIN IMMEDIATE'),
      commit: p('COMMIT'),
      rollback: p('ROLLBACK'),
      savepoint: p('SAVEPOINT step'),
      release: p('RELEASE step'),
      rollbackTo: p('ROLLBACK TO step'),
      totalChanges: p('SELECT total_changes()').pluck(),
    };
    this.commitEveryMs = opts.commitEveryMs ?? COMMIT_EVERY_MS;
    this.retryGate = new RetryGate(opts.dataDir);
    const before = this.journalSeq();
    this.journal = new BatchJournal(join(opts.dataDir, 'leasehold.journal'), before, opts.synchronous === 'full');
    const fail: (e: unknown) => never = (e) => {
      this.closed = true;
      clearInterval(this.retryTimer);
      this.rollbackQuietly();
      this.journal.close();
      this.db.close();
      throw e;
    };
    // The lines a crash kept from their commit are applied again, then committed.
    let last = before;
    try {
      last = this.hold();
    } catch (e) {
      fail(e);
    }
    this.replayed = last - before;
    try {
      this.commit();
    } catch (e) {
      const kind = writeFaultOf(e);
      if (kind === undefined) fail(e);
      // A full (or failing) disk: serve what is durable, read-only, until a commit goes through.
      else this.enterFault(e, kind);
    }
    const existing = this.db.prepare(`SELECT value FROM meta WHERE key = 'epoch'`).get() as { value: string } | undefined;
    if (existing) {
      this.epochValue = existing.value;
    } else if (this.fault) {
      fail(new Error(`cannot create a store in ${opts.dataDir}: ${(this.fault.error as Error).message}`));
    } else {
      this.epochValue = `ep_${randomBytes(12).toString('base64url')}`;
      this.db.prepare(`INSERT INTO meta (key, value) VALUES ('epoch', ?)`).run(this.epochValue);
    }
    this.file = file;
    OPEN_FILES.add(file);
    this.checkpointer = new Checkpointer(file, opts.synchronous === 'full' ? 'FULL' : 'NORMAL');
  }

  /** The checkpointer's last report (tests, docs/design.md "SQLite: checkpoints in a worker"). */
  checkpoints(): { last: Checkpointer['last'] } {
    return { last: this.checkpointer.last };
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new Error(`the data directory was written by a newer Leasehold (schema ${version})`);
    }
    // BEGIN IMMEDIATE takes the exclusive lock even when nothing migrates.
    this.db.exec('BEGIN IMMEDIATE');
    try {
      for (let v = version; v < MIGRATIONS.length; v++) this.db.exec(MIGRATIONS[v]!);
      // Written only when it moves: a store with nothing to migrate opens on a full disk.
      if (version < MIGRATIONS.length) this.db.pragma(`user_version = ${MIGRATIONS.length}`);
      this.db.exec('COMMIT');
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  private newTx(): BatchTx {
    const direct = new SqliteTx(this.db, this.journal);
    return new BatchTx(this.db, direct, this.ctl, this.journal);
  }

  /** The sequence number of the last journal line the committed database holds. */
  private journalSeq(): number {
    const seq = this.db.prepare(`SELECT value FROM meta WHERE key = 'journal_seq'`).pluck().get() as string | undefined;
    return seq === undefined ? 0 : Number(seq);
  }

  private setJournalSeq(seq: number): void {
    this.putJournalSeq ??= this.db.prepare(`INSERT INTO meta (key, value) VALUES ('journal_seq', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
    this.putJournalSeq.run(String(seq));
  }

  /**
   * Roll back, then open a transaction holding exactly what is durable: the
   * committed database plus the journal's lines after it (a failed commit,
   * or a crash, took them out of the database), read from the file, which is
   * the truth. Starts the caches afresh and returns the last line's sequence
   * number. A line past the last one answered (a batch whose line could not
   * be taken back, answered `outcome_unknown`) is applied too, and the
   * listeners are told (`unpublished`). Throws, rolled back, if the file or
   * the database refuses.
   */
  private hold(): number {
    this.rollbackQuietly();
    const answered = this.journal.lastSeq;
    const committed = this.journalSeq();
    const { lines, end } = readJournalFile(this.journal.path, committed);
    this.ctl.begin.run();
    try {
      const prepared = new Map<string, Database.Statement>();
      for (const line of lines) {
        for (const [sql, params] of line.statements) {
          let st = prepared.get(sql);
          if (!st) prepared.set(sql, (st = this.db.prepare(sql)));
          st.run(params);
        }
      }
    } catch (e) {
      this.rollbackQuietly();
      throw e;
    }
    const last = lines.at(-1)?.seq ?? committed;
    this.journal.reread(committed, last, end);
    this.tx = this.newTx();
    if (last > answered) this.notify({ type: 'unpublished' });
    return last;
  }

  /** Commit the open transaction (with the journal's position when it holds journaled batches), then empty the journal. */
  private commit(): void {
    // Rows of journaled batches wait in the caches until now.
    this.tx.flushBatch();
    if (this.journal.uncommitted) this.setJournalSeq(this.journal.lastSeq);
    this.ctl.commit.run();
    this.committed();
  }

  private committed(): void {
    this.lastCommit = performance.now();
    this.journal.committed();
  }

  private rollbackQuietly(): void {
    if (!this.db.inTransaction) return;
    try {
      this.ctl.rollback.run();
    } catch {
      // The transaction is already gone; nothing more to undo.
    }
  }

  /**
   * After a failed write, whose rollback took the journaled batches out of
   * the database too: a fault of the disk holds them in an open transaction
   * and refuses writes until a retry commits (`enterFault`); any other
   * failure (one batch's: a value SQLite refuses) applies them again and
   * commits at once.
   */
  private recoverFrom(failure: unknown): void {
    const kind = writeFaultOf(failure);
    if (kind !== undefined) return this.enterFault(failure, kind);
    try {
      this.hold();
      this.commit();
    } catch (e) {
      this.enterFault(e, writeFaultOf(e) ?? 'io_error');
    }
  }

  /** Refuse writes (read-only mode, see `fault`) until a retry commits. */
  private enterFault(error: unknown, kind: WriteFault): void {
    const was = this.fault;
    let held = true;
    try {
      this.hold();
    } catch {
      held = false;
    }
    this.fault = { kind, held, error };
    this.retryGate.failed(performance.now());
    if (!this.retryTimer) {
      this.retryTimer = setInterval(() => this.retry(), RETRY_CHECK_MS);
      this.retryTimer.unref();
    }
    if (!was) this.notify({ type: 'writes_refused', fault: kind, message: error instanceof Error ? error.message : String(error) });
  }

  /** Try the refused commit again, when the gate says it is worth it; writes are taken again once it goes through. */
  private retry(): void {
    if (!this.fault || this.flushing || this.closed || !this.retryGate.due(performance.now())) return;
    try {
      if (!this.fault.held || !this.db.inTransaction) this.hold();
      // Always a page to write, so a commit that goes through proves there is room.
      this.setJournalSeq(this.journal.lastSeq);
      this.commit();
    } catch (e) {
      this.enterFault(e, writeFaultOf(e) ?? this.fault.kind);
      return;
    }
    this.fault = undefined;
    clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.notify({ type: 'writes_accepted' });
  }

  private notify(notice: StoreNotice): void {
    for (const l of this.listeners) {
      try {
        l(notice);
      } catch {
        // A listener's failure is its own: the store's state is already settled.
      }
    }
  }

  subscribe(listener: (notice: StoreNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  writeFault(): WriteFault | undefined {
    return this.fault?.kind;
  }

  /** An idle transaction holding journaled batches commits after `COMMIT_EVERY_MS`. */
  private armCommitTimer(): void {
    if (this.commitTimer) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      if (this.flushing || this.closed || this.fault) return;
      if (!this.db.inTransaction) return;
      try {
        this.commit();
      } catch (e) {
        // Every batch it held was answered, durable by its line: they are held again.
        this.recoverFrom(e);
      }
    }, Math.min(this.commitEveryMs, 2 ** 31 - 1));
    this.commitTimer.unref();
  }

  now(): Millis {
    return this.clock();
  }

  epoch(): string {
    return this.epochValue;
  }

  /** One queue for every family: its oldest step not yet answered, queued or in the batch running now. */
  queueDelayMs(_family: string): number {
    const first = this.unanswered.values().next().value;
    return first ? performance.now() - first.at : 0;
  }

  /** Steps are strictly serial here (one writer), so a scope needs no lock. */
  atomic<T>(fn: (tx: Tx) => Promise<T>, scope?: StepScope): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed', false));
    return new Promise<T>((resolve, reject) => {
      const p: Pending = {
        fn,
        resolve: (v) => (this.unanswered.delete(p), resolve(v as T)),
        reject: (e) => (this.unanswered.delete(p), reject(e)),
        at: performance.now(),
      };
      const routes = scope?.prefetch?.routes;
      if (scope?.family !== undefined && routes !== undefined && routes.length >= READ_AHEAD_MIN) p.readAhead = { family: scope.family, routes };
      this.unanswered.add(p);
      this.queue.push(p);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // The next batch starts as soon as the event loop has taken in what
    // arrived meanwhile (the check phase follows the poll phase): no timer,
    // so the store is never idle while steps wait. Steps that arrive while a
    // batch commits share the next one.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  /**
   * Run one batch. What each step is answered agrees with what the disk
   * holds (CONTRACT §19 "A failure answer is the truth"): a batch whose
   * journal line was written, or whose commit went through, is answered by
   * its steps' outcomes, whatever happens after; one that failed before is
   * refused (`backend_unavailable`: nothing of it was applied), except that
   * a step that wrote is answered `outcome_unknown` when its line may be in
   * the file after all or its COMMIT may have reached the disk, and that the
   * steps before its first write, which read only what was durable, keep
   * their answers.
   */
  private async flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const batch = this.queue;
    this.queue = [];
    const fault = this.fault;
    try {
      if (fault && !fault.held) throw fault.error;
      // The transaction may be open already, holding journaled batches.
      if (!this.db.inTransaction) this.ctl.begin.run();
    } catch (e) {
      this.settle(batch, batch.map(() => ({ ok: false, wrote: false, value: unavailable('cannot begin', e, false) })));
      return;
    }
    const outcomes: Outcome[] = [];
    /** The transaction ended under a step (SQLite rolls it back on some I/O errors): the batch is lost. */
    let lost: unknown;
    for (const p of batch) {
      if (lost !== undefined) {
        outcomes.push({ ok: false, wrote: false, value: unavailable('transaction lost', lost, false) });
        continue;
      }
      this.tx.beginStep(this.clock());
      let o: Outcome;
      let thrown: unknown;
      try {
        if (p.readAhead) this.tx.readAhead(p.readAhead.family, p.readAhead.routes);
        const value = await p.fn(this.tx);
        o = { ok: true, wrote: this.tx.stepWrote(), value };
      } catch (e) {
        thrown = e;
        o = { ok: false, wrote: false, value: writeFaultOf(e) === undefined ? e : unavailable('step failed', e, false) };
      }
      // Read-only: a step that changed anything is undone and refused; its reads alone would have been answered.
      if (fault && o.wrote) o = { ok: false, wrote: false, value: unavailable('writes are refused', fault.error, false) };
      try {
        this.tx.endStep(o.ok);
        // The step's own I/O error may have taken the transaction with it.
        if (!this.db.inTransaction) throw thrown ?? new Error('the transaction ended');
      } catch (e) {
        lost = e;
      }
      outcomes.push(o);
    }
    if (lost !== undefined) {
      // Nothing of this batch is durable, and the reads may have seen its writes.
      this.tx.endBatch(false);
      this.recoverFrom(lost);
      this.settle(batch, outcomes.map(() => ({ ok: false, wrote: false, value: unavailable('transaction lost', lost, false) })));
      return;
    }
    if (fault) {
      // Nothing changed (the steps that would have were undone): nothing to journal or commit.
      this.journal.discard();
      this.tx.endBatch(true);
      this.settle(batch, outcomes);
      return;
    }
    let durable = false;
    let committing = false;
    try {
      if (this.tx.journaled) {
        this.tx.journalBatch();
        this.journal.write();
        durable = true;
        if (performance.now() - this.lastCommit >= this.commitEveryMs) this.commit();
        else this.armCommitTimer();
      } else {
        this.tx.flushBatch();
        this.journal.discard();
        if (this.journal.uncommitted) this.setJournalSeq(this.journal.lastSeq);
        committing = true;
        this.ctl.commit.run();
        durable = true;
        this.committed();
      }
      this.tx.endBatch(true);
    } catch (e) {
      // A COMMIT refused for space wrote no commit record; one failing otherwise (an fsync) may have.
      const unknown = !durable && ((e instanceof JournalWriteError && e.maybeWritten) || (committing && writeFaultOf(e) !== 'no_space'));
      this.journal.discard();
      this.tx.endBatch(false);
      // Rebuilds the open transaction from the journal file (which holds this batch if it is durable, or if its line could not be taken back).
      this.recoverFrom(e);
      if (unknown && committing) this.notify({ type: 'unpublished' });
      // A step that wrote is refused; so is any step after it, which may have read its writes. A step
      // before the first that wrote read only what is durable: its answer stands.
      let after = false;
      if (!durable) {
        for (const [i, o] of outcomes.entries()) {
          after ||= o.wrote;
          if (o.ok && after) outcomes[i] = { ok: false, wrote: o.wrote, value: unavailable('commit failed', e, unknown && o.wrote) };
        }
      }
    }
    this.settle(batch, outcomes);
  }

  /** Answer a batch's steps, then start the next batch if steps arrived meanwhile. */
  private settle(batch: Pending[], outcomes: readonly Outcome[]): void {
    this.flushing = false;
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i]!;
      if (o.ok) batch[i]!.resolve(o.value);
      else batch[i]!.reject(o.value);
    }
    if (this.queue.length > 0) this.schedule();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Let steps already queued finish and commit first.
    while (this.queue.length > 0 || this.flushing || this.scheduled) {
      await new Promise((r) => setImmediate(r));
      if (!this.flushing && !this.scheduled && this.queue.length > 0) await this.flush();
    }
    this.closed = true;
    clearTimeout(this.commitTimer);
    clearInterval(this.retryTimer);
    try {
      if (this.db.inTransaction) this.commit();
    } catch {
      // A full disk: every answered batch is in the journal, which the next start applies.
      this.rollbackQuietly();
    }
    this.journal.close();
    // Its connection closes first, so this one, the last, can empty the WAL.
    await this.checkpointer.stop();
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // A full disk: the WAL stays as it is, whole; the next start reads it.
    }
    this.db.close();
    OPEN_FILES.delete(this.file);
  }
}

/** A step's outcome in its batch; `wrote`: it changed something (BatchTx.stepWrote). */
interface Outcome {
  ok: boolean;
  wrote: boolean;
  value: unknown;
}

/** The store cannot answer a step safely; `maybeCommitted`: its write's fate is unknown (`outcome_unknown`). */
function unavailable(what: string, cause: unknown, maybeCommitted: boolean): StoreUnavailableError {
  return new StoreUnavailableError(`${what}: ${cause instanceof Error ? cause.message : String(cause)}`, maybeCommitted);
}

/** The `Tx` over one connection: prepared statements, answered synchronously but typed async. */
/**
 * Where the walks of the sweep horizon start on SQLite: its low end. No dead
 * index entries gather there (`SQLITE_REARM_SQL`), so no floor is kept.
 */
const NO_FLOOR = 0;

class SqliteTx implements DirectTx {
  now = millis(0);
  readonly policies: SqlitePolicies;
  readonly recentIdempotency: RecentIdempotency;
  readonly changes: SqliteChangeLog;
  private readonly s;
  /** Statements rendered from the shared plans (server/store/plan/), by text, prepared on first use. */
  private readonly rendered = new Map<string, Database.Statement>();
  /** `leaseRows`' statements, by how many routes they take. */
  private readonly leaseRowsBy = new Map<number, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    private readonly log: WriteLog,
  ) {
    this.policies = new SqlitePolicies(db);
    this.recentIdempotency = new RecentIdempotency(db);
    this.recentIdempotency.log = log;
    this.changes = new SqliteChangeLog(db);
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      revision: p(`SELECT revision FROM families WHERE family = ?`).pluck(),
      bumpRevision: p(
        `INSERT INTO families (family, revision) VALUES (?, 1)
         ON CONFLICT (family) DO UPDATE SET revision = revision + 1 RETURNING revision`,
      ).pluck(),
      getSession: p(`SELECT ${SESSION_COLS} FROM sessions WHERE id_hash = ?`),
      insertSession: p(
        `INSERT INTO sessions (id_hash, family, incarnation, owner_id, ttl_ms, created_at, expires_at)
         VALUES (@idHash, @family, @incarnation, @ownerId, @ttlMs, @createdAt, @expiresAt)`,
      ),
      setSessionExpiry: p(`UPDATE sessions SET expires_at = ? WHERE id_hash = ?`),
      setSessionEnding: p(`UPDATE sessions SET ending = ?, expires_at = ? WHERE id_hash = ?`),
      setSessionBatches: p(`UPDATE sessions SET batches = ? WHERE id_hash = ?`),
      deleteSession: p(`DELETE FROM sessions WHERE id_hash = ?`),
      // Due work through the expiry indexes only (server/store/plan/expiry.ts).
      dueSessions: p(dueSql(sqlite, 'sessions', false)),
      dueSessionsFamily: p(dueSql(sqlite, 'sessions', true)),
      dueFamilies: p(dueFamiliesSql(sqlite)).pluck(),
      listSessionsFirst: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE family = ? AND ending IS NULL ORDER BY created_at, incarnation LIMIT ?`,
      ),
      listSessionsAfter: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE family = ? AND ending IS NULL AND (created_at, incarnation) > (?, ?)
         ORDER BY created_at, incarnation LIMIT ?`,
      ),
      countSessionLeases: p(`SELECT count(*) FROM leases WHERE session_hash = ?`).pluck(),
      countBacklog: p(backlogSql(sqlite)).pluck(),
      // Rows as arrays, made into objects by `leaseOf` (see there).
      getLease: p(`SELECT ${LEASE_COLS} FROM leases WHERE family = ? AND route = ?`).raw(),
      insertLease: p(
        `INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash,
           owner_id, incarnation, acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms,
           renewal_count, revision, metadata, sweep_at)
         VALUES (@family, @route, @realm, @area, @resource, @leaseId, @fencingToken, @sessionHash,
           @ownerId, @incarnation, @acquiredAt, @renewedAt, @expiresAt, @maxExpiresAt, @ttlMs,
           @renewalCount, @revision, @metadata, @expiresAt)`,
      ),
      // The sweep horizon only ever falls here (a shorter TTL); it rises by the re-arm.
      renewLease: p(
        `UPDATE leases SET renewed_at = ?, expires_at = ?, sweep_at = min(sweep_at, ?), ttl_ms = ?, renewal_count = ?
         WHERE family = ? AND route = ? AND lease_id = ?`,
      ),
      rearmLeases: p(SQLITE_REARM_SQL),
      deleteLease: p(`DELETE FROM leases WHERE family = ? AND route = ? AND lease_id = ? AND fencing_token = ? RETURNING session_hash`).pluck(),
      countLease: p(`UPDATE sessions SET lease_count = max(0, lease_count + ?) WHERE id_hash = ?`),
      setReleaseRequest: p(`UPDATE leases SET release_request = ? WHERE family = ? AND route = ? AND lease_id = ? AND fencing_token = ?`),
      sessionLeases: p(`SELECT ${LEASE_COLS} FROM leases WHERE session_hash = ? ORDER BY route`),
      sessionLeasesFirst: p(`SELECT ${LEASE_COLS} FROM leases WHERE session_hash = ? ORDER BY route LIMIT ?`),
      // The partial index holds only leases with a pending request (named: the planner would as soon take leases_session and read them all).
      sessionReleaseRequests: p(
        `SELECT ${LEASE_COLS} FROM leases INDEXED BY leases_release_requests WHERE session_hash = ? AND release_request IS NOT NULL ORDER BY route LIMIT ?`,
      ),
      hasReleaseRequests: p(`SELECT 1 FROM leases INDEXED BY leases_release_requests WHERE session_hash = ? AND release_request IS NOT NULL LIMIT 1`).pluck(),
      dueLeases: p(dueSql(sqlite, 'leases', false)),
      dueLeasesFamily: p(dueSql(sqlite, 'leases', true)),
      countLeasesAll: p(`SELECT count(*) FROM leases`).pluck(),
      countLeasesFamily: p(`SELECT count(*) FROM leases WHERE family = ?`).pluck(),
      leasesByFamily: p(`SELECT family, count(*) AS n FROM leases GROUP BY family`),
      sessionsByFamily: p(`SELECT family, count(*) AS n FROM sessions GROUP BY family`),
      getCheckpoint: p(
        `SELECT ${CHECKPOINT_COLS} FROM checkpoints WHERE family = ? AND route = ?`,
      ),
      putCheckpoint: p(
        `INSERT INTO checkpoints (family, route, value, fencing_token, lease_id, written_at, version)
         VALUES (@family, @route, @value, @fencingToken, @leaseId, @writtenAt, @version)
         ON CONFLICT (family, route) DO UPDATE SET value = excluded.value,
           fencing_token = excluded.fencing_token, lease_id = excluded.lease_id,
           written_at = excluded.written_at, version = excluded.version`,
      ),
      getIdem: p(
        `SELECT family, op, route, request_id AS requestId, digest, status, answer, expires_at AS expiresAt
         FROM idempotency WHERE family = ? AND op = ? AND route = ? AND request_id = ?`,
      ),
      deleteIdem: p(`DELETE FROM idempotency WHERE family = ? AND op = ? AND route = ? AND request_id = ?`),
      pruneIdem: p(`DELETE FROM idempotency WHERE id IN (SELECT id FROM idempotency WHERE expires_at <= ? LIMIT ?)`),
      tokenByHash: p(`SELECT ${TOKEN_COLS} FROM tokens WHERE secret_hash = ?`),
      tokenById: p(`SELECT ${TOKEN_COLS} FROM tokens WHERE id = ?`),
      insertToken: p(
        `INSERT INTO tokens (id, secret_hash, name, family, grants, root, kind, created_at, expires_at, revoked_at, created_by)
         VALUES (@id, @secretHash, @name, @family, @grants, @root, @kind, @createdAt, @expiresAt, @revokedAt, @createdBy)`,
      ),
      revokeToken: p(`UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
      listTokensAll: p(`SELECT ${TOKEN_COLS} FROM tokens ORDER BY created_at, id`),
      listTokensFamily: p(`SELECT ${TOKEN_COLS} FROM tokens WHERE family = ? ORDER BY created_at, id`),
      countTokens: p(`SELECT count(*) FROM tokens`).pluck(),
      countLiveRoots: p(
        `SELECT count(*) FROM tokens WHERE root = 1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
      ).pluck(),
      insertLogin: p(`INSERT INTO logins (id_hash, token_id, created_at, expires_at) VALUES (@idHash, @tokenId, @createdAt, @expiresAt)`),
      getLogin: p(`SELECT id_hash AS idHash, token_id AS tokenId, created_at AS createdAt, expires_at AS expiresAt FROM logins WHERE id_hash = ?`),
      deleteLogin: p(`DELETE FROM logins WHERE id_hash = ?`),
      pruneLogins: p(`DELETE FROM logins WHERE expires_at <= ?`),
      pruneEmbedTokens: p(
        `DELETE FROM tokens WHERE id IN
           (SELECT id FROM tokens INDEXED BY tokens_embed_expiry WHERE kind = 'embed' AND expires_at <= ? LIMIT ?)`,
      ),
      insertAudit: p(
        `INSERT INTO audit (time, family, event_type, route, token_id, subject_token_id, owner_id, incarnation,
           result, fencing_token, reason, correlation_id, latency_ms, rare, details)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      auditOldest: p(prune.oldest),
      auditMaxSeq: p(prune.maxSeq).pluck(),
      auditDeleteThrough: p(prune.deleteThrough),
      auditCounts: p(`SELECT family, rows FROM audit_counts WHERE rows > 0`),
      auditCountAdd: p(`INSERT INTO audit_counts (family, rows) VALUES (?, ?) ON CONFLICT (family) DO UPDATE SET rows = rows + excluded.rows`),
      auditDeleteFamilyOldest: p(prune.deleteFamilyOldest),
      tokenLineage: p(
        `WITH RECURSIVE tree(id) AS (SELECT id FROM tokens WHERE id = ? UNION SELECT t.id FROM tokens t JOIN tree ON t.created_by = tree.id WHERE t.root = 0)
         SELECT ${TOKEN_COLS} FROM tokens WHERE id IN (SELECT id FROM tree) ORDER BY created_at, id`,
      ),
      tokenChain: p(
        `WITH RECURSIVE chain(cid, parent, anchor, depth) AS (
           SELECT id, created_by, root, 1 FROM tokens WHERE id = ?
           UNION ALL
           SELECT t.id, t.created_by, t.root, c.depth + 1 FROM tokens t JOIN chain c ON t.id = c.parent WHERE c.anchor = 0 AND c.depth < ?)
         SELECT ${TOKEN_COLS} FROM tokens JOIN chain ON tokens.id = chain.cid ORDER BY chain.depth DESC`,
      ),
      countLiveEmbed: p(`SELECT count(*) FROM tokens WHERE created_by = ? AND kind = 'embed' AND revoked_at IS NULL AND expires_at > ?`).pluck(),
      getMeta: p(`SELECT value FROM meta WHERE key = ?`).pluck(),
      initMeta: p(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`),
    };
  }

  async schemaCurrent(): Promise<boolean> {
    return this.db.pragma('user_version', { simple: true }) === MIGRATIONS.length;
  }

  revisionRow(family: string): number {
    return (this.s.revision.get(family) as number | undefined) ?? 0;
  }
  sessionRow(idHash: string): SessionRow | undefined {
    return this.s.getSession.get(idHash) as SessionRow | undefined;
  }
  leaseRow(family: string, route: string): LeaseRow | undefined {
    return leaseOf(this.s.getLease.get(family, route) as unknown[] | undefined);
  }
  leaseRows(family: string, routes: readonly string[]): LeaseRow[] {
    const rows: LeaseRow[] = [];
    for (let i = 0; i < routes.length; i += LEASE_ROWS_CHUNK) {
      const part = routes.slice(i, i + LEASE_ROWS_CHUNK);
      // Statements for 8, 16, … 128 routes only: a shorter list repeats its last route (IN ignores repeats).
      let n = 8;
      while (n < part.length) n *= 2;
      const args: string[] = [family, ...part];
      while (args.length <= n) args.push(part[part.length - 1]!);
      let stmt = this.leaseRowsBy.get(n);
      if (!stmt) this.leaseRowsBy.set(n, (stmt = this.db.prepare(`SELECT ${LEASE_COLS} FROM leases WHERE family = ? AND route IN (${new Array(n).fill('?').join(',')})`).raw()));
      for (const r of stmt.all(args) as unknown[][]) rows.push(leaseOf(r)!);
    }
    return rows;
  }
  checkpointRow(family: string, route: string): CheckpointRow | undefined {
    return this.s.getCheckpoint.get(family, route) as CheckpointRow | undefined;
  }
  idempotencyRow(family: string, op: string, route: string, requestId: string): IdempotencyRow | undefined {
    const recent = this.recentIdempotency.get(idempotencyKey(family, op, route, requestId));
    if (recent !== undefined) return recent ?? undefined;
    return this.s.getIdem.get(family, op, route, requestId) as IdempotencyRow | undefined;
  }

  async revision(family: string): Promise<number> {
    return this.revisionRow(family);
  }
  async bumpRevision(family: string): Promise<number> {
    return this.s.bumpRevision.get(family) as number;
  }

  async getSession(idHash: string): Promise<SessionRow | undefined> {
    return this.s.getSession.get(idHash) as SessionRow | undefined;
  }
  async insertSession(row: SessionRow): Promise<void> {
    this.s.insertSession.run(row);
  }
  async setSessionExpiry(idHash: string, expiresAt: number): Promise<void> {
    this.s.setSessionExpiry.run(expiresAt, idHash);
  }
  async setSessionEnding(idHash: string, ending: string, expiresAt: number): Promise<void> {
    this.s.setSessionEnding.run(ending, expiresAt, idHash);
  }
  async setSessionBatches(idHash: string, batches: string): Promise<void> {
    this.s.setSessionBatches.run(batches, idHash);
  }
  async deleteSession(idHash: string): Promise<void> {
    this.s.deleteSession.run(idHash);
  }
  async dueSessions(now: number, limit: number, family?: string): Promise<SessionRow[]> {
    return (family === undefined ? this.s.dueSessions.all(now, limit) : this.s.dueSessionsFamily.all(now, family, limit)) as SessionRow[];
  }
  async dueFamilies(now: number, limit: number): Promise<string[]> {
    return this.s.dueFamilies.all(named([now, now, limit, NO_FLOOR])) as string[];
  }
  async listSessions(family: string, ownerId: string | undefined, after: [number, string] | null, limit: number): Promise<SessionRow[]> {
    // The owner filter is applied while reading so that a page is still `limit` long.
    const out: SessionRow[] = [];
    const it = (
      after ? this.s.listSessionsAfter.iterate(family, after[0], after[1], -1) : this.s.listSessionsFirst.iterate(family, -1)
    ) as IterableIterator<SessionRow>;
    for (const row of it) {
      if (ownerId !== undefined && row.ownerId !== ownerId) continue;
      out.push(row);
      if (out.length >= limit) {
        it.return?.();
        break;
      }
    }
    return out;
  }
  async countBacklog(family: string, now: number, cap: number): Promise<number> {
    return this.s.countBacklog.get(named([now, family, cap, family, cap, NO_FLOOR])) as number;
  }
  async countSessionLeases(idHash: string): Promise<number> {
    return this.s.countSessionLeases.get(idHash) as number;
  }

  async getLease(family: string, route: string): Promise<LeaseRow | undefined> {
    return leaseOf(this.s.getLease.get(family, route) as unknown[] | undefined);
  }
  async insertLease(row: LeaseRow): Promise<void> {
    const [realm, area, resource] = routeSegments(row.route);
    this.s.insertLease.run({ ...row, realm, area, resource });
    this.s.countLease.run(1, row.sessionHash);
  }
  async updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: number, expiresAt: number, ttlMs: number, renewalCount: number): Promise<void> {
    this.s.renewLease.run(renewedAt, expiresAt, expiresAt, ttlMs, renewalCount, family, route, leaseId);
  }
  async deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean> {
    const sessionHash = this.s.deleteLease.get(family, route, leaseId, fencingToken) as string | undefined;
    if (sessionHash === undefined) return false;
    this.s.countLease.run(-1, sessionHash);
    return true;
  }
  async setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean> {
    return this.s.setReleaseRequest.run(request, family, route, leaseId, fencingToken).changes === 1;
  }
  async sessionLeases(idHash: string, limit?: number): Promise<LeaseRow[]> {
    return (limit === undefined ? this.s.sessionLeases.all(idHash) : this.s.sessionLeasesFirst.all(idHash, limit)) as LeaseRow[];
  }
  async sessionReleaseRequests(idHash: string, limit: number): Promise<LeaseRow[]> {
    return this.s.sessionReleaseRequests.all(idHash, limit) as LeaseRow[];
  }
  /** Whether a lease of the session holds a release request, as the database has it now (write-behind.ts, `mayHaveReleaseRequests`). */
  hasReleaseRequests(idHash: string): boolean {
    return this.s.hasReleaseRequests.get(idHash) !== undefined;
  }
  async dueLeases(now: number, limit: number, family?: string): Promise<LeaseRow[]> {
    return (family === undefined ? this.s.dueLeases.all(named([now, limit, NO_FLOOR])) : this.s.dueLeasesFamily.all(named([now, family, limit, NO_FLOOR]))) as LeaseRow[];
  }
  async rearmLeases(now: number, limit: number): Promise<number> {
    return this.s.rearmLeases.run(now, limit, now).changes;
  }
  async countLeases(family: string | null): Promise<number> {
    return (family === null ? this.s.countLeasesAll.get() : this.s.countLeasesFamily.get(family)) as number;
  }
  async familyCounts(): Promise<Array<{ family: string; leases: number; sessions: number }>> {
    const out = new Map<string, { family: string; leases: number; sessions: number }>();
    const entry = (family: string) => out.get(family) ?? out.set(family, { family, leases: 0, sessions: 0 }).get(family)!;
    for (const r of this.s.leasesByFamily.all() as Array<{ family: string; n: number }>) entry(r.family).leases = r.n;
    for (const r of this.s.sessionsByFamily.all() as Array<{ family: string; n: number }>) entry(r.family).sessions = r.n;
    return [...out.values()];
  }

  /** The shared LIST plan (server/store/plan/lease-scan.ts), read in chunks. */
  async scanLeases(scan: LeaseScan): Promise<LeaseScanResult> {
    const plan = planLeaseScan(scan);
    return runLeaseScan(scan, plan, (position, n) => {
      const q = renderLeaseChunk(sqlite, plan, scan.family, position, n);
      return this.statement(q.sql).all(...q.params) as LeaseRow[];
    });
  }

  async getCheckpoint(family: string, route: string): Promise<CheckpointRow | undefined> {
    return this.s.getCheckpoint.get(family, route) as CheckpointRow | undefined;
  }
  async putCheckpoint(row: CheckpointRow): Promise<void> {
    this.s.putCheckpoint.run(row);
  }

  async getIdempotency(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined> {
    return this.idempotencyRow(family, op, route, requestId);
  }
  async putIdempotency(row: IdempotencyRow): Promise<void> {
    this.recentIdempotency.put([row]);
  }
  async deleteIdempotency(family: string, op: string, route: string, requestId: string): Promise<void> {
    this.recentIdempotency.delete(idempotencyKey(family, op, route, requestId));
    const params = [family, op, route, requestId];
    this.log.add(this.s.deleteIdem, params);
    this.s.deleteIdem.run(params);
  }
  async pruneIdempotency(now: number, limit: number): Promise<number> {
    this.recentIdempotency.beforePrune(now);
    return this.s.pruneIdem.run(now, limit).changes;
  }

  async getTokenByHash(secretHash: string): Promise<TokenRow | undefined> {
    return tokenFromRaw(this.s.tokenByHash.get(secretHash) as RawToken | undefined);
  }
  async getToken(id: string): Promise<TokenRow | undefined> {
    return tokenFromRaw(this.s.tokenById.get(id) as RawToken | undefined);
  }
  async insertToken(row: TokenRow): Promise<void> {
    this.s.insertToken.run({ ...row, grants: JSON.stringify(row.grants), root: row.root ? 1 : 0 });
  }
  async revokeToken(id: string, at: number): Promise<void> {
    this.s.revokeToken.run(at, id);
  }
  async listTokens(family: string | null): Promise<TokenRow[]> {
    const raws = (family === null ? this.s.listTokensAll.all() : this.s.listTokensFamily.all(family)) as RawToken[];
    return raws.map((r) => tokenFromRaw(r)!);
  }
  async countTokens(): Promise<number> {
    return this.s.countTokens.get() as number;
  }
  async countLiveRootTokens(now: number): Promise<number> {
    return this.s.countLiveRoots.get(now) as number;
  }

  async insertLogin(row: LoginRow): Promise<void> {
    this.s.insertLogin.run(row);
  }
  async getLogin(idHash: string): Promise<LoginRow | undefined> {
    return this.s.getLogin.get(idHash) as LoginRow | undefined;
  }
  async deleteLogin(idHash: string): Promise<void> {
    this.s.deleteLogin.run(idHash);
  }
  async pruneLogins(now: number): Promise<number> {
    return this.s.pruneLogins.run(now).changes;
  }
  async pruneEmbedTokens(now: number, limit: number): Promise<number> {
    return this.s.pruneEmbedTokens.run(now, limit).changes;
  }

  async insertAudit(rows: readonly NewAuditRow[]): Promise<void> {
    const st = this.s.insertAudit;
    const perFamily = new Map<string, number>();
    for (const r of rows) {
      st.run(
        r.time, r.family, r.eventType, r.route, r.tokenId, r.subjectTokenId, r.ownerId, r.incarnation,
        r.result, r.fencingToken, r.reason, r.correlationId, r.latencyMs, RARE_AUDIT_TYPES.has(r.eventType) ? 1 : null, r.details ?? null,
      );
      perFamily.set(r.family, (perFamily.get(r.family) ?? 0) + 1);
    }
    for (const [family, n] of perFamily) this.s.auditCountAdd.run(family, n);
  }

  async auditCounts(): Promise<Map<string, number>> {
    const rows = this.s.auditCounts.all() as Array<{ family: string; rows: number }>;
    return new Map(rows.map((r) => [r.family, r.rows]));
  }

  async pruneAuditFamily(family: string, keepNewest: number, limit: number): Promise<number> {
    const count = (this.s.auditCounts.all() as Array<{ family: string; rows: number }>).find((r) => r.family === family)?.rows ?? 0;
    const over = familyExcess(count, keepNewest, limit);
    if (over === 0) return 0;
    const n = this.s.auditDeleteFamilyOldest.run(family, over).changes;
    this.s.auditCountAdd.run(family, -n);
    return n;
  }

  async tokenLineage(id: string): Promise<TokenRow[]> {
    return (this.s.tokenLineage.all(id) as RawToken[]).map((r) => tokenFromRaw(r)!);
  }
  /** Steps are serialized on SQLite: a plain read is current for the whole step. */
  async tokenChain(id: string, max: number, _lock: boolean): Promise<TokenRow[]> {
    return (this.s.tokenChain.all(id, max) as RawToken[]).map((r) => tokenFromRaw(r)!);
  }

  async countLiveEmbedTokens(createdBy: string, now: number): Promise<number> {
    return this.s.countLiveEmbed.get(createdBy, now) as number;
  }

  /** The shared audit plan (server/store/plan/audit-scan.ts). */
  async scanAudit(scan: AuditScan): Promise<AuditScanResult> {
    const plan = planAuditScan(scan);
    const q = renderAuditScan(sqlite, scan, plan);
    const rows = this.statement(q.sql).all(...q.params) as AuditRow[];
    if (rows.length >= scan.limit || !q.edge) {
      const last = rows[rows.length - 1];
      return { rows, lastExamined: last ? [last.time, last.seq] : null, exhausted: rows.length < scan.limit };
    }
    // A short page: did the budget end it, or the index range?
    const edge = this.statement(q.edge.sql).get(...q.edge.params) as { time: number; seq: number } | undefined;
    return { rows, lastExamined: edge ? [edge.time, edge.seq] : null, exhausted: edge === undefined };
  }

  private statement(sql: string): Database.Statement {
    let stmt = this.rendered.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.rendered.set(sql, stmt);
    }
    return stmt;
  }

  async pruneAudit(olderThan: number, maxRows: number, limit: number): Promise<number> {
    const maxSeq = this.s.auditMaxSeq.get() as number | null;
    if (maxSeq === null) return 0;
    const total = (this.s.auditCounts.all() as Array<{ rows: number }>).reduce((n, r) => n + r.rows, 0);
    const doomed = prunePrefix(this.s.auditOldest.all(limit) as OldAuditRow[], olderThan, total - maxRows, maxSeq);
    if (doomed.length === 0) return 0;
    const n = this.s.auditDeleteThrough.run(doomed[doomed.length - 1]!.seq).changes;
    for (const [family, k] of tally(doomed)) this.s.auditCountAdd.run(family, -k);
    return n;
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.s.getMeta.get(key) as string | undefined;
  }
  async initMeta(key: string, value: string): Promise<string> {
    this.s.initMeta.run(key, value);
    return this.s.getMeta.get(key) as string;
  }
}
