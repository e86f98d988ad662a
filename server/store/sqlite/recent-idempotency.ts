/**
 * The second tier of idempotency records (docs/design.md, "SQLite: group
 * commit"): the records of steps that write through. (The hot path's
 * records wait in the write-behind cache and are written in key order at
 * the commit, write-behind.ts; before anything is written there, this tier
 * is moved into the keyed table.) Every acquire, renew, release and
 * checkpoint writes one record, keyed by a request id the client chose;
 * inserting it straight into the keyed index dirties about one index page
 * per record. So a record written through is first appended to `idempotency_recent`, a table
 * without an index whose rows this process also keeps in memory (it is the
 * database's only writer), and the recent rows are moved into the keyed
 * table in one sorted statement once MERGE_AT of them have gathered: each
 * index page is written once per merge instead of once per batch.
 *
 * The records are as durable as before (they are in the step's
 * transaction); a lookup reads this transaction's rows, then the committed
 * recent rows, then the keyed table. The in-memory side follows the
 * transaction: savepoints, commit and rollback.
 */

import type Database from 'better-sqlite3';
import type { IdempotencyRow } from '../types';
import type { WriteLog } from './journal';

/** Recent records moved into the keyed table at once, at most this many kept apart. */
export const MERGE_AT = 4_096;
/** Rows per multi-row insert (8 columns each, well under SQLite's 32,766 parameters). */
const CHUNK = 128;
const COLS = 'family, op, route, request_id, digest, status, answer, expires_at';

type Row = IdempotencyRow & { id: number };

export function idempotencyKey(family: string, op: string, route: string, requestId: string): string {
  return `${family}\u0000${op}\u0000${route}\u0000${requestId}`;
}

export class RecentIdempotency {
  /** Committed recent rows, by key (exactly the rows of `idempotency_recent` at the last commit). */
  private recent = new Map<string, Row>();
  /** This transaction's changes: a row, or null for a key deleted. */
  private pending = new Map<string, Row | null>();
  /** This transaction moved every recent row into the keyed table. */
  private merged = false;
  private nextId: number;
  /** The earliest expiry among recent rows (pruning merges first when it has passed). */
  private minExpiry = Infinity;
  private saved: { pending: Map<string, Row | null>; merged: boolean; minExpiry: number } | undefined;
  private readonly inserts = new Map<number, Database.Statement>();
  private readonly s;

  /** Where each write is reported for the batch journal (server/store/sqlite/journal.ts). */
  log: WriteLog | undefined;

  constructor(private readonly db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      deleteById: p(`DELETE FROM idempotency_recent WHERE id = ?`),
      merge: p(`INSERT OR REPLACE INTO idempotency (${COLS}) SELECT ${COLS} FROM idempotency_recent ORDER BY family, op, route, request_id`),
      clear: p(`DELETE FROM idempotency_recent`),
    };
    const rows = p(
      `SELECT id, family, op, route, request_id AS requestId, digest, status, answer, expires_at AS expiresAt FROM idempotency_recent ORDER BY id`,
    ).all() as Row[];
    for (const r of rows) {
      this.recent.set(idempotencyKey(r.family, r.op, r.route, r.requestId), r);
      this.minExpiry = Math.min(this.minExpiry, r.expiresAt);
    }
    this.nextId = rows.length > 0 ? rows[rows.length - 1]!.id + 1 : 1;
  }

  /** The record for a key as this transaction sees it, if recent: a row, null (deleted), or undefined (look in the keyed table). */
  get(key: string): IdempotencyRow | null | undefined {
    const p = this.pending.get(key);
    if (p !== undefined) return p;
    return this.merged ? undefined : this.recent.get(key);
  }

  /** Rows gathered apart from the keyed table. */
  get size(): number {
    return this.merged ? this.pending.size : this.recent.size + this.pending.size;
  }

  /** Append records (each replacing any recent record of its key). */
  put(rows: readonly IdempotencyRow[]): void {
    const values: unknown[][] = [];
    for (const r of rows) {
      const key = idempotencyKey(r.family, r.op, r.route, r.requestId);
      this.dropRecent(key);
      const row: Row = { ...r, id: this.nextId++ };
      this.pending.set(key, row);
      if (row.expiresAt < this.minExpiry) this.minExpiry = row.expiresAt;
      values.push([row.id, r.family, r.op, r.route, r.requestId, r.digest, r.status, r.answer, r.expiresAt]);
    }
    for (let i = 0; i < values.length; i += CHUNK) {
      const part = values.slice(i, i + CHUNK);
      this.run(this.insert(part.length), part.flat());
    }
  }

  /** Delete a key's recent record, if any (the caller deletes it from the keyed table too). */
  delete(key: string): void {
    this.dropRecent(key);
    this.pending.set(key, null);
  }

  /** Move every recent record into the keyed table (in this transaction). */
  merge(): void {
    if (this.size === 0) return;
    this.run(this.s.merge, []);
    this.run(this.s.clear, []);
    this.merged = true;
    this.pending = new Map();
    this.minExpiry = Infinity;
  }

  /** Before pruning the keyed table at `now`: recent records already expired are moved there first. */
  beforePrune(now: number): void {
    if (this.minExpiry <= now) this.merge();
  }

  savepoint(): void {
    this.saved = { pending: new Map(this.pending), merged: this.merged, minExpiry: this.minExpiry };
  }

  rollbackToSavepoint(): void {
    if (!this.saved) return;
    ({ pending: this.pending, merged: this.merged, minExpiry: this.minExpiry } = this.saved);
  }

  releaseSavepoint(): void {
    this.saved = undefined;
  }

  committed(): void {
    if (this.merged) this.recent = new Map();
    for (const [k, v] of this.pending) {
      if (v === null) this.recent.delete(k);
      else this.recent.set(k, v);
    }
    this.endTransaction();
  }

  rolledBack(): void {
    this.minExpiry = Infinity;
    for (const r of this.recent.values()) this.minExpiry = Math.min(this.minExpiry, r.expiresAt);
    this.endTransaction();
  }

  private endTransaction(): void {
    this.pending = new Map();
    this.merged = false;
    this.saved = undefined;
  }

  /** Remove the key's row from `idempotency_recent` if one is there. */
  private dropRecent(key: string): void {
    const old = this.get(key);
    if (old) this.run(this.s.deleteById, [(old as Row).id]);
  }

  private run(stmt: Database.Statement, params: unknown[]): void {
    this.log?.add(stmt, params);
    stmt.run(params);
  }

  private insert(n: number): Database.Statement {
    let s = this.inserts.get(n);
    if (!s) {
      s = this.db.prepare(`INSERT INTO idempotency_recent (id, ${COLS}) VALUES ${new Array(n).fill('(?,?,?,?,?,?,?,?,?)').join(',')}`);
      this.inserts.set(n, s);
    }
    return s;
  }
}
