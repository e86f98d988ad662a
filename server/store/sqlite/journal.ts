/**
 * The batch journal of the SQLite store (docs/design.md, "SQLite: the batch
 * journal").
 *
 * A batch whose writes are all written behind (the hot path: acquire,
 * renew, release, keepalive) is made durable by appending one line to this
 * file, the SQL statements its flush ran with their parameters, instead of
 * committing the SQLite transaction: one `write` instead of two `pwrite`s
 * per dirty page (about ten pages per acquire). The transaction stays open
 * across batches and commits every `COMMIT_EVERY_MS` (or when a batch writes
 * through, or at close), each hot page then written to the WAL once for many
 * batches. After a commit the journal is emptied; the sequence number of the
 * last line the commit holds is written with it (`meta.journal_seq`).
 *
 * On open, lines above that sequence number are applied again in order and
 * committed: a batch acknowledged after its line was written survives a
 * process crash (the line is in the operating system's cache, as a WAL
 * commit with `synchronous=NORMAL` is), and with `synchronous=FULL` the line
 * is fsynced before the batch is answered (power-loss durable, as before).
 *
 * A line is `{"q":seq,"d":{id:sql,…},"w":[[id,params],…]}`: a statement's
 * text is written once per journal file (`d`), later lines name it by id.
 */

import type Database from 'better-sqlite3';
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';

/** Where the write-behind flush reports each statement it runs (journaled when the batch is). */
export interface WriteLog {
  add(stmt: Database.Statement, params: unknown[]): void;
}

interface Line {
  q: number;
  d?: Record<string, string>;
  w: Array<[number, unknown[]]>;
}

export class BatchJournal implements WriteLog {
  private readonly fd: number;
  /** Statement ids defined in the file so far (by SQL text). */
  private ids = new Map<string, number>();
  private nextId = 1;
  /** This batch's statements and the ids it defines. */
  private entries: Array<[number, unknown[]]> = [];
  private defs: Array<[number, string]> = [];
  /** Sequence number of the last line written; lines above `committedSeq` are not in the database yet. */
  private seq: number;
  private committedSeq: number;

  constructor(
    readonly path: string,
    lastSeq: number,
    private readonly fsync: boolean,
  ) {
    this.fd = openSync(path, 'a');
    this.seq = lastSeq;
    this.committedSeq = lastSeq;
  }

  add(stmt: Database.Statement, params: unknown[]): void {
    const sql = stmt.source;
    let id = this.ids.get(sql);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(sql, id);
      this.defs.push([id, sql]);
    }
    this.entries.push([id, params]);
  }

  /** Lines written since the last commit. */
  get uncommitted(): boolean {
    return this.seq > this.committedSeq;
  }

  /** The sequence number the next commit records. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Append this batch's line (a batch with no statements writes none); throws if the file cannot take it. */
  write(): void {
    if (this.entries.length === 0) return;
    const line: Line = { q: this.seq + 1, w: this.entries };
    if (this.defs.length > 0) line.d = Object.fromEntries(this.defs);
    const text = `${JSON.stringify(line)}\n`;
    try {
      writeSync(this.fd, text);
      if (this.fsync) fdatasyncSync(this.fd);
    } catch (e) {
      this.discard();
      throw e;
    }
    this.seq++;
    this.entries = [];
    this.defs = [];
  }

  /** Forget this batch's statements (it commits instead, or failed). */
  discard(): void {
    for (const [id, sql] of this.defs) {
      if (this.ids.get(sql) === id) this.ids.delete(sql);
    }
    this.entries = [];
    this.defs = [];
  }

  /** The transaction holding every written line committed: the file starts empty again. */
  committed(): void {
    this.discard();
    ftruncateSync(this.fd);
    this.committedSeq = this.seq;
    this.ids = new Map();
    this.nextId = 1;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * The journal's lines above `afterSeq`, parsed. A line cut short by a crash
 * (no newline at the end of the file) was never acknowledged and is ignored;
 * any other unreadable line is corruption and throws.
 */
export function readJournal(path: string, afterSeq: number): Array<{ seq: number; statements: Array<[string, unknown[]]> }> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const lines = text.split('\n');
  // The last element is '' when the file ends with a newline, else a torn line.
  lines.pop();
  const sqlById = new Map<number, string>();
  const out: Array<{ seq: number; statements: Array<[string, unknown[]]> }> = [];
  for (const [i, raw] of lines.entries()) {
    let line: Line;
    try {
      line = JSON.parse(raw) as Line;
    } catch {
      throw new Error(`the SQLite batch journal ${path} is damaged at line ${i + 1}`);
    }
    if (line.d) for (const [id, sql] of Object.entries(line.d)) sqlById.set(Number(id), sql);
    if (line.q <= afterSeq) continue;
    out.push({
      seq: line.q,
      statements: line.w.map(([id, params]) => {
        const sql = sqlById.get(id);
        if (sql === undefined) throw new Error(`the SQLite batch journal ${path} names an unknown statement at line ${i + 1}`);
        return [sql, params];
      }),
    });
  }
  return out;
}
