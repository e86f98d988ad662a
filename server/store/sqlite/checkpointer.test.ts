/**
 * The SQLite store's WAL checkpoints in a worker thread, and the `unix-excl`
 * opening that allows them (server/store/sqlite/open.ts, docs/design.md
 * "SQLite: checkpoints in a worker"). SQLite only: PostgreSQL checkpoints
 * its own WAL; nothing of ours runs there.
 */

import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { millis } from '../millis';
import type { LeaseRow } from '../types';
import { waitFor } from '../../testing/wait';
import { SqliteStore } from './sqlite-store';
import { sqliteDirs } from '../../testing/sqlite-dirs';

const tmp = sqliteDirs('leasehold-ckpt-');
const dataDir = tmp.dataDir;
// Every batch commits at once, so the WAL grows with each.
const open = (dir: string) => tmp.open(dir, 0);

function lease(i: number, token: number): LeaseRow {
  return {
    family: 'default', route: `lease://acme/c/r${i}`, leaseId: `ls_${i}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata: 'x'.repeat(500),
  };
}

async function acquireMany(store: SqliteStore, from: number, n: number): Promise<void> {
  await store.atomic(async (tx) => {
    for (let i = from; i < from + n; i++) await tx.insertLease(lease(i, await tx.bumpRevision('default')));
  });
}

afterEach(() => tmp.cleanup());

describe('SQLite: WAL checkpoints in a worker', () => {
  test('committed pages are copied into the database by the checkpointer, and there is never a -shm file', async () => {
    const dir = dataDir();
    const store = open(dir);
    const file = join(dir, 'leasehold.sqlite');
    const before = statSync(file).size;
    await acquireMany(store, 0, 2_000);
    // The batch commits within commitEveryMs (0): its pages go to the WAL.
    await waitFor('the commit in the WAL', () => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0), (n) => n > 1_000_000);
    // The checkpointer, not the store's connection (whose autocheckpoint waits for 10,000 pages), copies them.
    const report = await waitFor(
      'a checkpoint that copied every page of the WAL',
      () => store.checkpoints().last,
      (r) => r !== undefined && r.ok && r.log > 0 && r.checkpointed === r.log,
    );
    assert.ok(report?.ok);
    assert.ok(statSync(file).size > before + 1_000_000, `the database file holds the pages (${before} -> ${statSync(file).size} bytes)`);
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('-shm')), [], 'no -shm file');
    // The rows are read back after a reopen, and close left no WAL behind.
    await store.close();
    assert.equal(existsSync(`${file}-wal`), false, 'close emptied and removed the WAL');
    const again = open(dir);
    const got = await again.atomic((tx) => tx.getLease('default', 'lease://acme/c/r1999'));
    assert.equal(got?.leaseId, 'ls_1999');
  });

  test('one data directory, one store: a second store in this process is refused, and so is a second process', async () => {
    const dir = dataDir();
    const store = open(dir);
    await acquireMany(store, 0, 1);
    assert.throws(() => new SqliteStore({ dataDir: dir }), /in use by another store of this process/);
    const other = spawnSync(process.execPath, ['-e', `
      const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
      const db = new D(${JSON.stringify(join(dir, 'leasehold.sqlite'))});
      try { db.prepare('SELECT count(*) FROM leases').get(); console.log('read'); } catch (e) { console.log(e.code); }
    `], { encoding: 'utf8' });
    assert.equal(other.stdout.trim(), 'SQLITE_BUSY', `another process cannot read the database: ${other.stdout} ${other.stderr}`);
    // Closed, the directory is free again.
    await store.close();
    const again = open(dir);
    assert.equal((await again.atomic((tx) => tx.getLease('default', 'lease://acme/c/r0')))?.leaseId, 'ls_0');
  });
});
