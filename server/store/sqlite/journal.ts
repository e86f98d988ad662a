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
 * batches. The sequence number of the last line a commit holds is written
 * with it (`meta.journal_seq`), and the next line is written at the start
 * of the file again, over the old ones: overwriting pages the file already
 * has costs a third of appending to an emptied file (no new blocks, no
 * zeroed pages), and the old lines left behind it are told apart by their
 * sequence numbers.
 *
 * On open, the lines that continue `meta.journal_seq` one by one from the
 * start of the file are applied again in order and committed (the first
 * line that does not, or does not parse, ends the journal: a line cut short
 * by a crash, or an older line): a batch acknowledged after its line was written survives a
 * process crash (the line is in the operating system's cache, as a WAL
 * commit with `synchronous=NORMAL` is), and with `synchronous=FULL` the line
 * is fsynced before the batch is answered (power-loss durable, as before).
 *
 * A line is `{"q":seq,"d":{id:sql,…},"w":[[id,params],…]}`: a statement's
 * text is written once per journal file (`d`), later lines name it by id.
 * A line is in the journal only once it is written whole, newline included:
 * a write that fails (a full disk) takes back what it wrote, so a batch
 * refused for it is never applied later (CONTRACT §19 "A failure answer is
 * the truth"); if even that fails, the batch's outcome is unknown until the
 * store reads the file again.
 */

import type Database from 'better-sqlite3';
import { closeSync, constants, fdatasyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';

/** Where the write-behind flush reports each statement it runs (journaled when the batch is). */
export interface WriteLog {
  add(stmt: Database.Statement, params: unknown[]): void;
}

/**
 * A line the journal could not write whole. `maybeWritten`: part of it may
 * be in the file still (it could not be taken back), so its batch's outcome
 * is unknown until the file is read again; otherwise the file does not hold it.
 */
export class JournalWriteError extends Error {
  readonly code: string | undefined;
  constructor(
    readonly cause: unknown,
    readonly maybeWritten: boolean,
  ) {
    super(`cannot write the batch journal: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'JournalWriteError';
    this.code = (cause as NodeJS.ErrnoException | undefined)?.code;
  }
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
  /** Where the next line goes. */
  private offset = 0;

  constructor(
    readonly path: string,
    lastSeq: number,
    private readonly fsync: boolean,
  ) {
    this.fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
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

  /** Lines written since the last commit. */
  get backlog(): number {
    return this.seq - this.committedSeq;
  }

  /** The sequence number the next commit records. */
  get lastSeq(): number {
    return this.seq;
  }

  /**
   * Append this batch's line (a batch with no statements writes none).
   * Throws a JournalWriteError if the file cannot take it whole (and synced,
   * with fsync): the part written is taken back first.
   */
  write(): void {
    if (this.entries.length === 0) return;
    const line: Line = { q: this.seq + 1, w: this.entries };
    if (this.defs.length > 0) line.d = Object.fromEntries(this.defs);
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    let done = 0;
    try {
      // A write may take part of the line (the disk filled on the way): the rest follows, or fails.
      while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done, this.offset + done);
      if (this.fsync) fdatasyncSync(this.fd);
    } catch (e) {
      this.discard();
      throw new JournalWriteError(e, done > 0 && !this.takeBack());
    }
    this.offset += bytes.length;
    this.seq++;
    this.entries = [];
    this.defs = [];
  }

  /**
   * Cut the file where the failed line began; true if it could. Shrinking a
   * file needs no free space. The lines past that point are older ones
   * (from before the last commit), never needed again.
   */
  private takeBack(): boolean {
    try {
      ftruncateSync(this.fd, this.offset);
      return true;
    } catch {
      return false;
    }
  }

  /** Forget this batch's statements (it commits instead, or failed). */
  discard(): void {
    for (const [id, sql] of this.defs) {
      if (this.ids.get(sql) === id) this.ids.delete(sql);
    }
    this.entries = [];
    this.defs = [];
  }

  /**
   * The file was read again (after a failed write or commit): its lines
   * after `committedSeq` up to `seq`, ending at byte `end`, are the ones the
   * database has not committed; the next line follows them.
   */
  reread(committedSeq: number, seq: number, end: number): void {
    this.discard();
    this.committedSeq = committedSeq;
    this.seq = seq;
    this.offset = end;
  }

  /** The transaction holding every written line committed: the next line goes at the start of the file. */
  committed(): void {
    this.discard();
    this.offset = 0;
    this.committedSeq = this.seq;
    this.ids = new Map();
    this.nextId = 1;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** A line read back: its sequence number and its statements (text and parameters). */
interface JournalLine {
  seq: number;
  statements: Array<[string, unknown[]]>;
}

/**
 * The journal's lines that continue `afterSeq`, parsed: from the start of
 * the file, each line numbered one more than the one before, the first
 * `afterSeq + 1`. The first line that does not parse (cut short by a crash:
 * never acknowledged), is not ended by a newline (a write that failed) or
 * does not continue the count (an older line, from before the last commit)
 * ends it.
 */
export function readJournal(path: string, afterSeq: number): JournalLine[] {
  return readJournalFile(path, afterSeq).lines;
}

/** `readJournal`, and the byte offset where the last line it returns ends (0 when none). */
export function readJournalFile(path: string, afterSeq: number): { lines: JournalLine[]; end: number } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], end: 0 };
    throw e;
  }
  const sqlById = new Map<number, string>();
  const out: JournalLine[] = [];
  let end = 0;
  const pieces = text.split('\n');
  // The last piece follows the last newline: empty, or a line never written whole.
  pieces.pop();
  for (const [i, raw] of pieces.entries()) {
    let line: Line;
    try {
      line = JSON.parse(raw) as Line;
    } catch {
      break;
    }
    if (line?.q !== afterSeq + out.length + 1) break;
    if (line.d) for (const [id, sql] of Object.entries(line.d)) sqlById.set(Number(id), sql);
    out.push({
      seq: line.q,
      statements: line.w.map(([id, params]) => {
        const sql = sqlById.get(id);
        if (sql === undefined) throw new Error(`the SQLite batch journal ${path} names an unknown statement at line ${i + 1}`);
        return [sql, params];
      }),
    });
    end += Buffer.byteLength(raw) + 1;
  }
  return { lines: out, end };
}
