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
 * One process per data directory: the database is opened in exclusive
 * locking mode, so a second process fails at open instead of sharing it.
 */

import { millis, systemClock, type Clock, type Millis } from '../millis';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { routeSegments } from '@/lib/selector';
import { MIGRATIONS } from './schema';
import { SqlitePolicies } from './policies';
import { SqliteChangeLog } from './change-log';
import { BatchTx, type DirectTx } from './write-behind';
import { BatchJournal, readJournal, type WriteLog } from './journal';
import { idempotencyKey, RecentIdempotency } from './recent-idempotency';
import { sqlite } from '../plan/dialect';
import { planLeaseScan, renderLeaseChunk, runLeaseScan } from '../plan/lease-scan';
import { planAuditScan, renderAuditScan } from '../plan/audit-scan';
import { auditPruneSql, dueFamiliesSql, dueSql, familyExcess } from '../plan/expiry';
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
  type TokenRow,
  type Tx,
} from '../types';

/** A transaction holding journaled batches commits after at most this long (docs/design.md, "SQLite: the batch journal"). */
export const COMMIT_EVERY_MS = 200;

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
}

const prune = auditPruneSql(sqlite);

const LEASE_COLS = `family, route, lease_id AS leaseId, fencing_token AS fencingToken,
  session_hash AS sessionHash, owner_id AS ownerId, incarnation, acquired_at AS acquiredAt,
  renewed_at AS renewedAt, expires_at AS expiresAt, max_expires_at AS maxExpiresAt,
  ttl_ms AS ttlMs, renewal_count AS renewalCount, revision, metadata, release_request AS releaseRequest`;
const SESSION_COLS = `family, id_hash AS idHash, incarnation, owner_id AS ownerId, ttl_ms AS ttlMs,
  created_at AS createdAt, expires_at AS expiresAt`;
const TOKEN_COLS = `id, secret_hash AS secretHash, name, family, grants, root, kind,
  created_at AS createdAt, expires_at AS expiresAt, revoked_at AS revokedAt, created_by AS createdBy`;

type RawToken = Omit<TokenRow, 'grants' | 'root'> & { grants: string; root: number };

function tokenFromRaw(raw: RawToken | undefined): TokenRow | undefined {
  if (!raw) return undefined;
  return { ...raw, grants: JSON.parse(raw.grants) as string[], root: raw.root === 1 };
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly clock: Clock;
  private tx: BatchTx;
  private readonly journal: BatchJournal;
  /** When the open transaction last committed (performance.now()), and the timer that commits an idle one. */
  private lastCommit = performance.now();
  private commitTimer: NodeJS.Timeout | undefined;
  /** A commit or flush failed after lines were journaled: the database must be rebuilt from the journal before the next batch. */
  private recoverFirst = false;
  private readonly commitEveryMs: number;
  private putJournalSeq: Database.Statement | undefined;
  /** Journal lines applied at open: batches answered before a crash that had not committed. */
  readonly replayed: number;

  /** Batches answered since the last commit (durable by their journal line alone). */
  get uncommittedBatches(): number {
    return this.journal.backlog;
  }
  private queue: Pending[] = [];
  private scheduled = false;
  private flushing = false;
  private closed = false;
  private readonly epochValue: string;
  /** Transaction control, prepared once (exec would recompile it every batch and step). */
  private readonly ctl: Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo' | 'totalChanges', Database.Statement>;

  /** Open (creating if needed) the store in `dataDir`. Throws if another process holds it. */
  constructor(opts: SqliteStoreOptions) {
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    this.clock = opts.clock ?? systemClock;
    this.db = new Database(join(opts.dataDir, 'leasehold.sqlite'));
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('locking_mode = EXCLUSIVE');
      this.db.pragma(`synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('busy_timeout = 0');
      // Savepoint journals in memory, a 64 MiB page cache, and fewer, larger
      // WAL checkpoints (each copies a hot page once, however often it was
      // rewritten): together about a third less CPU per step (docs/benchmarks.md).
      this.db.pragma('temp_store = MEMORY');
      this.db.pragma('cache_size = -65536');
      this.db.pragma('wal_autocheckpoint = 10000');
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
    const journalPath = join(opts.dataDir, 'leasehold.journal');
    this.commitEveryMs = opts.commitEveryMs ?? COMMIT_EVERY_MS;
    const before = this.journalSeq();
    const seq = this.replayJournal(journalPath);
    this.replayed = seq - before;
    this.journal = new BatchJournal(journalPath, seq, opts.synchronous === 'full');
    // Every line is in the database now: start the file afresh.
    this.journal.committed();
    this.tx = this.newTx();
    const existing = this.db.prepare(`SELECT value FROM meta WHERE key = 'epoch'`).get() as { value: string } | undefined;
    if (existing) {
      this.epochValue = existing.value;
    } else {
      this.epochValue = `ep_${randomBytes(12).toString('base64url')}`;
      this.db.prepare(`INSERT INTO meta (key, value) VALUES ('epoch', ?)`).run(this.epochValue);
    }
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
      this.db.pragma(`user_version = ${MIGRATIONS.length}`);
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

  /**
   * Apply the journal's lines that the database does not hold yet (a crash
   * came before their commit), commit them, empty the journal. Returns the
   * sequence number of the last line applied.
   */
  private journalSeq(): number {
    const seq = this.db.prepare(`SELECT value FROM meta WHERE key = 'journal_seq'`).pluck().get() as string | undefined;
    return seq === undefined ? 0 : Number(seq);
  }

  private replayJournal(path: string): number {
    let seq = this.journalSeq();
    const lines = readJournal(path, seq);
    if (lines.length > 0) {
      const prepared = new Map<string, Database.Statement>();
      this.db.exec('BEGIN IMMEDIATE');
      try {
        for (const line of lines) {
          for (const [sql, params] of line.statements) {
            let st = prepared.get(sql);
            if (!st) prepared.set(sql, (st = this.db.prepare(sql)));
            st.run(params);
          }
          seq = line.seq;
        }
        this.setJournalSeq(seq);
        this.db.exec('COMMIT');
      } catch (e) {
        this.db.exec('ROLLBACK');
        throw e;
      }
    }
    return seq;
  }

  private setJournalSeq(seq: number): void {
    this.putJournalSeq ??= this.db.prepare(`INSERT INTO meta (key, value) VALUES ('journal_seq', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
    this.putJournalSeq.run(String(seq));
  }

  /** Commit the open transaction (with the journal's position when it holds journaled batches), then empty the journal. */
  private commit(): void {
    // Rows of journaled batches wait in the caches until now.
    this.tx.flushBatch();
    if (this.journal.uncommitted) this.setJournalSeq(this.journal.lastSeq);
    this.ctl.commit.run();
    this.lastCommit = performance.now();
    this.journal.committed();
  }

  /**
   * After a failed flush or commit the transaction was rolled back, and with
   * it any batch that was journaled but not committed: apply the journal
   * again, commit, and start the caches afresh. Throws if the database
   * cannot take it (the next batch tries again).
   */
  private recover(): void {
    if (this.db.inTransaction) this.ctl.rollback.run();
    this.journal.discard();
    this.replayJournal(this.journal.path);
    this.lastCommit = performance.now();
    this.journal.committed();
    this.tx = this.newTx();
    this.recoverFirst = false;
  }

  /** An idle transaction holding journaled batches commits after `COMMIT_EVERY_MS`. */
  private armCommitTimer(): void {
    if (this.commitTimer) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      if (this.flushing || this.closed) return;
      if (!this.db.inTransaction) return;
      try {
        this.commit();
      } catch {
        this.recoverFirst = true;
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

  /** Steps are strictly serial here (one writer), so a scope needs no lock. */
  atomic<T>(fn: (tx: Tx) => Promise<T>, _scope?: StepScope): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('store is closed', false));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
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

  private async flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const batch = this.queue;
    this.queue = [];
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    try {
      if (this.recoverFirst) this.recover();
      // The transaction may be open already, holding journaled batches.
      if (!this.db.inTransaction) this.ctl.begin.run();
    } catch (e) {
      this.flushing = false;
      for (const p of batch) p.reject(new StoreUnavailableError(`cannot begin: ${(e as Error).message}`, false));
      this.schedule();
      return;
    }
    for (const p of batch) {
      this.tx.beginStep(this.clock());
      try {
        const value = await p.fn(this.tx);
        this.tx.endStep(true);
        outcomes.push({ ok: true, value });
      } catch (e) {
        this.tx.endStep(false);
        outcomes.push({ ok: false, value: e });
      }
    }
    let commitError: unknown;
    let journaled = false;
    try {
      if (this.tx.journaled) {
        this.tx.journalBatch();
        this.journal.write();
        journaled = true;
        if (performance.now() - this.lastCommit >= this.commitEveryMs) this.commit();
        else this.armCommitTimer();
      } else {
        this.tx.flushBatch();
        this.journal.discard();
        this.commit();
      }
    } catch (e) {
      commitError = e;
      this.journal.discard();
      try {
        this.ctl.rollback.run();
      } catch {
        // The transaction is already gone; nothing more to undo.
      }
      // The rollback took every journaled batch with it: rebuild them now.
      try {
        this.recover();
        // This batch's own line was written: recovery committed it.
        if (journaled) commitError = undefined;
      } catch {
        this.recoverFirst = true;
      }
    }
    this.tx.endBatch(commitError === undefined);
    this.flushing = false;
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i]!;
      const o = outcomes[i]!;
      if (commitError) p.reject(new StoreUnavailableError(`commit failed: ${(commitError as Error).message}`, false));
      else if (o.ok) p.resolve(o.value);
      else p.reject(o.value);
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
    if (this.recoverFirst) this.recover();
    if (this.db.inTransaction) this.commit();
    this.journal.close();
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.close();
  }
}

/** The `Tx` over one connection: prepared statements, answered synchronously but typed async. */
class SqliteTx implements DirectTx {
  now = millis(0);
  readonly policies: SqlitePolicies;
  readonly recentIdempotency: RecentIdempotency;
  readonly changes: SqliteChangeLog;
  private readonly s;
  /** Statements rendered from the shared plans (server/store/plan/), by text, prepared on first use. */
  private readonly rendered = new Map<string, Database.Statement>();

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
      deleteSession: p(`DELETE FROM sessions WHERE id_hash = ?`),
      // Due work through the expiry indexes only (server/store/plan/expiry.ts).
      dueSessions: p(dueSql(sqlite, 'sessions', false)),
      dueSessionsFamily: p(dueSql(sqlite, 'sessions', true)),
      dueFamilies: p(dueFamiliesSql(sqlite)).pluck(),
      listSessionsFirst: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE family = ? ORDER BY created_at, incarnation LIMIT ?`,
      ),
      listSessionsAfter: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE family = ? AND (created_at, incarnation) > (?, ?)
         ORDER BY created_at, incarnation LIMIT ?`,
      ),
      countSessionLeases: p(`SELECT count(*) FROM leases WHERE session_hash = ?`).pluck(),
      getLease: p(`SELECT ${LEASE_COLS} FROM leases WHERE family = ? AND route = ?`),
      insertLease: p(
        `INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash,
           owner_id, incarnation, acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms,
           renewal_count, revision, metadata)
         VALUES (@family, @route, @realm, @area, @resource, @leaseId, @fencingToken, @sessionHash,
           @ownerId, @incarnation, @acquiredAt, @renewedAt, @expiresAt, @maxExpiresAt, @ttlMs,
           @renewalCount, @revision, @metadata)`,
      ),
      renewLease: p(
        `UPDATE leases SET renewed_at = ?, expires_at = ?, ttl_ms = ?, renewal_count = ?
         WHERE family = ? AND route = ? AND lease_id = ?`,
      ),
      deleteLease: p(`DELETE FROM leases WHERE family = ? AND route = ? AND lease_id = ? AND fencing_token = ?`),
      setReleaseRequest: p(`UPDATE leases SET release_request = ? WHERE family = ? AND route = ? AND lease_id = ? AND fencing_token = ?`),
      sessionLeases: p(`SELECT ${LEASE_COLS} FROM leases WHERE session_hash = ? ORDER BY route`),
      dueLeases: p(dueSql(sqlite, 'leases', false)),
      dueLeasesFamily: p(dueSql(sqlite, 'leases', true)),
      countLeasesAll: p(`SELECT count(*) FROM leases`).pluck(),
      countLeasesFamily: p(`SELECT count(*) FROM leases WHERE family = ?`).pluck(),
      leasesByFamily: p(`SELECT family, count(*) AS n FROM leases GROUP BY family`),
      sessionsByFamily: p(`SELECT family, count(*) AS n FROM sessions GROUP BY family`),
      getCheckpoint: p(
        `SELECT family, route, value, fencing_token AS fencingToken, lease_id AS leaseId,
           written_at AS writtenAt, version FROM checkpoints WHERE family = ? AND route = ?`,
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
    return this.s.getLease.get(family, route) as LeaseRow | undefined;
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
  async deleteSession(idHash: string): Promise<void> {
    this.s.deleteSession.run(idHash);
  }
  async dueSessions(now: number, limit: number, family?: string): Promise<SessionRow[]> {
    return (family === undefined ? this.s.dueSessions.all(now, limit) : this.s.dueSessionsFamily.all(now, family, limit)) as SessionRow[];
  }
  async dueFamilies(now: number, limit: number): Promise<string[]> {
    return this.s.dueFamilies.all(now, now, limit) as string[];
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
  async countSessionLeases(idHash: string): Promise<number> {
    return this.s.countSessionLeases.get(idHash) as number;
  }

  async getLease(family: string, route: string): Promise<LeaseRow | undefined> {
    return this.s.getLease.get(family, route) as LeaseRow | undefined;
  }
  async insertLease(row: LeaseRow): Promise<void> {
    const [realm, area, resource] = routeSegments(row.route);
    this.s.insertLease.run({ ...row, realm, area, resource });
  }
  async updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: number, expiresAt: number, ttlMs: number, renewalCount: number): Promise<void> {
    this.s.renewLease.run(renewedAt, expiresAt, ttlMs, renewalCount, family, route, leaseId);
  }
  async deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean> {
    return this.s.deleteLease.run(family, route, leaseId, fencingToken).changes === 1;
  }
  async setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean> {
    return this.s.setReleaseRequest.run(request, family, route, leaseId, fencingToken).changes === 1;
  }
  async sessionLeases(idHash: string): Promise<LeaseRow[]> {
    return this.s.sessionLeases.all(idHash) as LeaseRow[];
  }
  async dueLeases(now: number, limit: number, family?: string): Promise<LeaseRow[]> {
    return (family === undefined ? this.s.dueLeases.all(now, limit) : this.s.dueLeasesFamily.all(now, family, limit)) as LeaseRow[];
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
