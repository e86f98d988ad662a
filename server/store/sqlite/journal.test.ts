/**
 * The SQLite store's batch journal (server/store/sqlite/journal.ts,
 * docs/design.md "SQLite: the batch journal"). SQLite only: the journal is
 * how the embedded store defers its commits; PostgreSQL commits every batch
 * (its crash test is server/durability.test.ts, which runs on both stores).
 */

import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { millis } from '../millis';
import { StoreUnavailableError, type LeaseRow } from '../types';
import { readJournal } from './journal';
import { SqliteStore } from './sqlite-store';
import { sqliteDirs } from '../../testing/sqlite-dirs';

const HOLD = 3_600_000;
const tmp = sqliteDirs('leasehold-journal-');
const dataDir = tmp.dataDir;
const open = (dir: string, commitEveryMs = HOLD) => tmp.open(dir, commitEveryMs);

function lease(i: number, token: number, over: Partial<LeaseRow> = {}): LeaseRow {
  return {
    family: 'default', route: `lease://acme/j/r${i}`, leaseId: `ls_${i}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata: null, ...over,
  };
}

async function acquire(store: SqliteStore, i: number): Promise<number> {
  return store.atomic(async (tx) => {
    const token = await tx.bumpRevision('default');
    await tx.insertLease(lease(i, token));
    return token;
  });
}

afterEach(() => tmp.cleanup());

describe('SQLite batch journal', () => {
  test('steps answered before a SIGKILL, with their commit held back, are all there after reopening', async () => {
    const dir = dataDir();
    const n = 300;
    const child = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'journal-crash.fixture.ts'), dir, String(n)], { encoding: 'utf8' });
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    const acked = child.stdout.trim().split('\n').filter((l) => l.startsWith('acked ')).length;
    assert.equal(acked, n);
    // Nothing was committed after the schema: every answered step is in the journal only.
    assert.equal(readJournal(join(dir, 'leasehold.journal'), 0).length, n);

    const store = open(dir);
    assert.equal(store.replayed, n);
    assert.equal(store.uncommittedBatches, 0, 'the replayed lines were committed');
    const rows = await store.atomic(async (tx) => Promise.all(Array.from({ length: n }, (_, i) => tx.getLease('default', `lease://acme/crash/r${i}`))));
    rows.forEach((r, i) => assert.equal(r?.fencingToken, i + 1, `lease ${i}`));
    assert.equal(await store.atomic((tx) => tx.revision('default')), n);
    // The revision keeps counting from there: no token is ever handed out twice.
    assert.equal(await acquire(store, 1), n + 1);
  });

  test('batches wait in the journal until the commit interval, and close commits them', async () => {
    const dir = dataDir();
    const store = open(dir);
    for (let i = 0; i < 5; i++) await acquire(store, i);
    assert.equal(readJournal(join(dir, 'leasehold.journal'), 0).length, 5);
    assert.equal(store.uncommittedBatches, 5);
    await store.close();
    const again = open(dir);
    assert.equal(again.replayed, 0);
    assert.equal((await again.atomic((tx) => tx.getLease('default', 'lease://acme/j/r4')))?.fencingToken, 5);
  });

  test('rows waiting for the commit are seen by point reads and scans, and survive a reopen', async () => {
    const dir = dataDir();
    const store = open(dir);
    for (let i = 0; i < 3; i++) await acquire(store, i);
    assert.equal(await store.atomic((tx) => tx.countLeases('default')), 3, 'a scan sees the pending rows');
    assert.equal((await store.atomic((tx) => tx.sessionLeases('h1'))).length, 3);
    await store.atomic(async (tx) => {
      assert.ok(await tx.deleteLease('default', 'lease://acme/j/r1', 'ls_1', 2));
    });
    assert.equal((await store.atomic((tx) => tx.getLease('default', 'lease://acme/j/r1'))), undefined);
    assert.equal(await store.atomic((tx) => tx.countLeases('default')), 2);
    // Acquired and released between two commits: both are in the journal, the row only in the cache.
    await acquire(store, 7);
    await store.atomic(async (tx) => {
      assert.ok(await tx.deleteLease('default', 'lease://acme/j/r7', 'ls_7', 4));
    });
    const lines = readJournal(join(dir, 'leasehold.journal'), 0);
    const last = lines.at(-1)!.statements.map(([sql]) => sql.split(' ').slice(0, 3).join(' '));
    assert.ok(last.includes('DELETE FROM leases'), last.join('; '));
    await store.close();
    const again = open(dir);
    assert.equal(await again.atomic((tx) => tx.countLeases('default')), 2);
    assert.equal(await again.atomic((tx) => tx.revision('default')), 4);
  });

  test('with no interval held back, every batch commits and the journal stays empty', async () => {
    const dir = dataDir();
    const store = open(dir, 0);
    for (let i = 0; i < 3; i++) await acquire(store, i);
    assert.equal(store.uncommittedBatches, 0);
    assert.equal((await store.atomic((tx) => tx.getLease('default', 'lease://acme/j/r2')))?.fencingToken, 3);
  });

  test('a batch that writes through (an uncached table) commits at once, with the journaled batches before it', async () => {
    const dir = dataDir();
    const store = open(dir);
    await acquire(store, 0);
    assert.equal(store.uncommittedBatches, 1);
    await store.atomic((tx) =>
      tx.insertLogin({ idHash: 'login-1', tokenId: 'tok_1', createdAt: millis(1), expiresAt: millis(100_000) }),
    );
    assert.equal(store.uncommittedBatches, 0);
  });

  test('a step that writes through but changes nothing (a sweep with nothing to prune) leaves the batch journaled', async () => {
    const dir = dataDir();
    const store = open(dir);
    await acquire(store, 0);
    const pruned = await store.atomic(async (tx) => {
      await tx.insertLease(lease(1, 100));
      return (await tx.pruneLogins(millis(5))) + (await tx.pruneIdempotency(millis(5), 100));
    });
    assert.equal(pruned, 0);
    assert.equal(store.uncommittedBatches, 2, 'the batch was journaled, not committed');
    const lines = readJournal(join(dir, 'leasehold.journal'), 0);
    assert.equal(lines.length, 2);
    assert.ok(lines[1]!.statements.some(([sql]) => sql.includes('INTO leases')), 'the step\'s lease, flushed before it wrote through, is in its line');
  });

  test('a sweep that moves the horizon on leaves the batch journaled, and what it answered survives a reopen', async () => {
    const dir = dataDir();
    const store = open(dir);
    await acquire(store, 0);
    // In the database (a read the caches cannot answer), then renewed past its horizon.
    await store.atomic((tx) => tx.dueLeases(millis(0), 10));
    await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://acme/j/r0', 'ls_0', 9_000, 30_000, 21_000, 1), { family: 'default' });
    const before = store.uncommittedBatches;
    assert.ok(before > 0);
    assert.equal(await store.atomic(async (tx) => tx.rearmLeases!(millis(20_000), 10)), 1);
    assert.equal(store.uncommittedBatches, before, 'the batches before it still wait for the commit interval');
    await store.close();
    const again = open(dir);
    const l = await again.atomic((tx) => tx.getLease('default', 'lease://acme/j/r0'));
    assert.deepEqual([l?.expiresAt, l?.renewalCount], [30_000, 1]);
    assert.deepEqual(await again.atomic((tx) => tx.dueLeases(millis(30_000), 10)).then((r) => r.map((x) => x.route)), ['lease://acme/j/r0']);
  });

  test('a step that writes through and throws is undone, and its batch commits without it', async () => {
    const dir = dataDir();
    const store = open(dir);
    await acquire(store, 0);
    await assert.rejects(
      store.atomic(async (tx) => {
        await tx.insertLease(lease(1, 100));
        await tx.pruneLogins(millis(5));
        throw new Error('step fails');
      }),
      /step fails/,
    );
    assert.equal(store.uncommittedBatches, 0, 'committed, not journaled');
    await store.close();
    const again = open(dir);
    const rows = await again.atomic(async (tx) => [await tx.getLease('default', 'lease://acme/j/r0'), await tx.getLease('default', 'lease://acme/j/r1')] as const);
    assert.equal(rows[0]?.fencingToken, 1);
    assert.equal(rows[1], undefined);
  });

  test('a batch whose writes fail is refused alone: the journaled batches before it stay, and later ones work', async () => {
    const dir = dataDir();
    const store = open(dir);
    for (let i = 0; i < 3; i++) await acquire(store, i);
    // A value SQLite cannot bind fails the batch's flush, after its step succeeded.
    const bad = store.atomic(async (tx) => {
      const token = await tx.bumpRevision('default');
      await tx.insertLease(lease(9, token, { metadata: { not: 'a string' } as unknown as string }));
    });
    await assert.rejects(bad, StoreUnavailableError);
    const held = await store.atomic(async (tx) => [await tx.getLease('default', 'lease://acme/j/r2'), await tx.getLease('default', 'lease://acme/j/r9'), await tx.revision('default')] as const);
    assert.equal(held[0]?.fencingToken, 3);
    assert.equal(held[1], undefined);
    assert.equal(held[2], 3, 'the refused batch bumped nothing');
    assert.equal(await acquire(store, 3), 4);
    await store.close();
    const again = open(dir);
    assert.equal((await again.atomic((tx) => tx.getLease('default', 'lease://acme/j/r3')))?.fencingToken, 4);
  });

  test('reading the journal: it ends at a torn line, a line without its newline or an older line left behind; statements are named once per file', () => {
    const dir = dataDir();
    const path = join(dir, 'leasehold.journal');
    const line = (q: number, v: number, d = false) => JSON.stringify({ q, ...(d ? { d: { 1: 'INSERT INTO t VALUES (?)' } } : {}), w: [[1, [v]]] });
    writeFileSync(path, `${line(1, 1, true)}\n${line(2, 2)}\n{"q":3,"w":[[1,`);
    assert.deepEqual(readJournal(path, 0), [
      { seq: 1, statements: [['INSERT INTO t VALUES (?)', [1]]] },
      { seq: 2, statements: [['INSERT INTO t VALUES (?)', [2]]] },
    ]);
    // A line is in the journal only with its newline: a write the disk cut short before it is not.
    writeFileSync(path, `${line(1, 1, true)}\n${line(2, 2)}`);
    assert.deepEqual(readJournal(path, 0).map((l) => l.seq), [1], 'a last line without its newline');
    // After a commit at 2, line 3 is written over the start of the file; line 2 is left behind it.
    writeFileSync(path, `${line(3, 3, true)}\n${line(2, 2)}\n`);
    assert.deepEqual(readJournal(path, 2).map((l) => l.seq), [3]);
    assert.deepEqual(readJournal(path, 3), [], 'nothing after the last commit');
    writeFileSync(path, `${line(1, 1, true)}\n{"q":2,\n${line(3, 3)}\n`);
    assert.deepEqual(readJournal(path, 0).map((l) => l.seq), [1], 'a damaged line ends the journal');
    writeFileSync(path, `${line(1, 1)}\n`);
    assert.throws(() => readJournal(path, 0), /unknown statement/);
  });
});
