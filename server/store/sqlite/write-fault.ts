/**
 * What a failed write of the SQLite store was, and when to try writing
 * again (CONTRACT §19 "A failure answer is the truth", docs/operations.md
 * "Disk full").
 *
 * A write that fails because the disk is full or failing (the batch
 * journal's `write`, a statement, the `COMMIT`) puts the store in read-only
 * mode: reads are answered from what is durable, writes are refused, and the
 * commit is tried again once the file system reports room for it. Any other
 * error (a value SQLite will not bind, a bug) fails its batch alone.
 */

import { statfsSync } from 'node:fs';
import type { WriteFault } from '../types';

/** The disk (or the owner's quota) is full: SQLite's code, or the file system's errno. */
const NO_SPACE = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);
/** The disk failed or will not be written (remounted read-only after errors). */
const IO_ERRNO = new Set(['EIO', 'EROFS', 'EFBIG']);
const IO_PREFIXES = ['SQLITE_IOERR', 'SQLITE_READONLY', 'SQLITE_CANTOPEN'];

/** A refused commit is tried again at least this often, whatever the file system reports. */
const RETRY_EVERY_MS = 10_000;
/** ...and sooner once it reports at least this much room, more than at the last failure. */
const ROOM_BYTES = 1_048_576;

/** The error's code: better-sqlite3's (`SQLITE_FULL`, `SQLITE_IOERR_WRITE`) or Node's errno (`ENOSPC`). */
function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The write fault an error is, or undefined when the disk is not to blame. */
export function writeFaultOf(e: unknown): WriteFault | undefined {
  const code = codeOf(e);
  if (code === undefined) return undefined;
  if (NO_SPACE.has(code)) return 'no_space';
  if (IO_ERRNO.has(code) || IO_PREFIXES.some((p) => code.startsWith(p))) return 'io_error';
  return undefined;
}

/** Bytes the file system holding `dir` has free for this process; undefined if it cannot say. */
function freeBytes(dir: string): number | undefined {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/**
 * When a store that refuses writes tries again: once the file system has
 * room (at least 1 MiB, more than when the last attempt failed), and at
 * least every RETRY_EVERY_MS (a file system may say less than it can take).
 */
export class RetryGate {
  private freeAtFailure = 0;
  private failedAt = 0;

  constructor(private readonly dir: string) {}

  /** An attempt failed at `now` (performance.now()). */
  failed(now: number): void {
    this.failedAt = now;
    this.freeAtFailure = freeBytes(this.dir) ?? 0;
  }

  /** Is an attempt worth making at `now`? */
  due(now: number): boolean {
    if (now - this.failedAt >= RETRY_EVERY_MS) return true;
    const free = freeBytes(this.dir);
    return free !== undefined && free >= ROOM_BYTES && free > this.freeAtFailure;
  }
}
