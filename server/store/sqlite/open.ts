/**
 * Opening the embedded store's database file, and checkpointing its WAL
 * beside the event loop (docs/design.md "SQLite: checkpoints in a worker").
 *
 * The file is opened through SQLite's `unix-excl` VFS. The first connection
 * takes a process-wide exclusive lock on it, so a second Leasehold process
 * on the same data directory fails at open, while other connections of this
 * process (the checkpointer's, in a worker thread) share it. That VFS keeps
 * the WAL index in this process's memory: there is never a `-shm` file,
 * which a full disk could refuse to create or grow (docs/operations.md
 * "Disk full").
 *
 * A WAL checkpoint copies the WAL's pages into the database file and
 * fsyncs both. Run inside COMMIT on the event loop's thread (SQLite's
 * autocheckpoint), it stalled every request for 155–225 ms every few
 * seconds under a fleet's renewals (docs/benchmarks.md "Where the SQLite
 * fleet's p99 comes from"). The checkpointer runs PASSIVE checkpoints on its
 * own connection in a worker thread instead: they never wait for, nor block,
 * the store's connection. The store's own autocheckpoint stays as a bound:
 * it fires only when the WAL has grown past `WAL_BOUND_PAGES`, which the
 * checkpointer keeps from happening except under sustained writes, where
 * it then copies only what the checkpointer has not, and lets the WAL
 * start again from its beginning.
 */

import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the checkpointer checkpoints (a checkpoint with nothing to copy costs a few microseconds). */
export const CHECKPOINT_EVERY_MS = 250;
/** The store's autocheckpoint: the WAL's bound in pages (4 KiB each). */
export const WAL_BOUND_PAGES = 10_000;

// URI filenames (the `vfs` parameter) are read by better-sqlite3 once, when its addon loads.
process.env.SQLITE_USE_URI = '1';

const uriOf = (file: string) => `file:${encodeURI(file).replace(/[?#]/g, encodeURIComponent)}?vfs=unix-excl`;

/**
 * Open `file` through the `unix-excl` VFS. Throws if the file could not be
 * opened that way (URI filenames off because the addon was loaded before
 * this module: the name would otherwise be taken literally).
 */
export function openDatabase(file: string): Database.Database {
  const db = new Database(uriOf(file));
  const main = (db.pragma('database_list') as Array<{ name: string; file: string }>).find((d) => d.name === 'main');
  if (main?.file !== file) {
    db.close();
    throw new Error(`SQLite did not open ${file} through its URI (it opened ${main?.file ?? 'nothing'}): better-sqlite3 was loaded before server/store/sqlite/open.ts`);
  }
  return db;
}

/** What the checkpointer reports after each checkpoint: SQLite's counts, or why it failed. */
export type CheckpointReport = { ok: true; busy: number; log: number; checkpointed: number } | { ok: false; message: string };

// The worker: its own connection, a PASSIVE checkpoint every `everyMs`, each reported.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.uri);
db.pragma('busy_timeout = 0');
db.pragma('synchronous = ' + workerData.synchronous);
const tick = () => {
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ ok: false, message: String((e && e.message) || e) });
  }
};
const timer = setInterval(tick, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** The checkpointer of one database: a worker thread with its own connection. */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** The last checkpoint's report. */
  last: CheckpointReport | undefined;

  constructor(file: string, synchronous: 'NORMAL' | 'FULL', everyMs = CHECKPOINT_EVERY_MS) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER, { eval: true, workerData: { module, uri: uriOf(file), synchronous, everyMs } });
    this.worker.on('message', (r: CheckpointReport) => {
      this.last = r;
    });
    // A worker that fails leaves the store's own autocheckpoint to bound the WAL, as before it.
    this.worker.on('error', (e) => (this.last = { ok: false, message: e.message }));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.unref();
  }

  /** Stop it and close its connection (before the store's own, so the store's close can truncate the WAL). */
  async stop(): Promise<void> {
    // Referenced again while it stops, or a process with nothing else to do would end before it has.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
