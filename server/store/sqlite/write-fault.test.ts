/**
 * The SQLite store on a full disk (server/store/sqlite/write-fault.ts,
 * CONTRACT §19 "A failure answer is the truth"): a step is answered by what
 * the disk holds. Its batch's journal line refused: the step is refused and
 * changed nothing. Its line written but the commit after it refused: it was
 * answered, and it stays. Meanwhile reads are answered and writes refused;
 * once there is room again, writes are taken. The data directory is on a
 * small tmpfs (root only; skipped elsewhere, saying why).
 */

import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { millis } from '../millis';
import { StoreUnavailableError, type LeaseRow, type StoreNotice } from '../types';
import { JournalWriteError, readJournalFile } from './journal';
import { SqliteStore } from './sqlite-store';
import { writeFaultOf } from './write-fault';
import { mountTmpfs, type Tmpfs } from '../../testing/tmpfs';
import { waitFor } from '../../testing/wait';

const HOLD = 3_600_000;
let disk: Tmpfs | undefined;
let skip: string | undefined;
let dirs = 0;
const stores: SqliteStore[] = [];

function open(dir: string): SqliteStore {
  const s = new SqliteStore({ dataDir: dir, commitEveryMs: HOLD });
  stores.push(s);
  return s;
}

function lease(i: number, token: number, metadata: string | null = null): LeaseRow {
  return {
    family: 'default', route: `lease://acme/full/r${i}`, leaseId: `ls_${i}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata,
  };
}

/** A journaled step (written behind): a revision and a lease. */
function acquire(store: SqliteStore, i: number, metadata: string | null = null): Promise<number> {
  return store.atomic(async (tx) => {
    const token = await tx.bumpRevision('default');
    await tx.insertLease(lease(i, token, metadata));
    return token;
  });
}

/** A step that writes through (an uncached table): its batch commits at once. */
function login(store: SqliteStore, id: string): Promise<void> {
  return store.atomic((tx) => tx.insertLogin({ idHash: id, tokenId: 'tok_1', createdAt: millis(1), expiresAt: millis(100_000) }));
}

const held = (store: SqliteStore, i: number) => store.atomic(async (tx) => (await tx.getLease('default', `lease://acme/full/r${i}`))?.fencingToken);

/** A step refused as having changed nothing (`backend_unavailable`, not `outcome_unknown`). */
async function refused(p: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof StoreUnavailableError && !e.maybeCommitted, what);
}

function fresh(t: TestContext): string | undefined {
  if (skip) {
    t.skip(skip);
    return undefined;
  }
  const dir = join(disk!.dir, `store-${++dirs}`);
  mkdirSync(dir);
  return dir;
}

before(() => {
  const m = mountTmpfs(16, 'leasehold-write-fault-');
  if ('skip' in m) skip = m.skip;
  else disk = m;
});

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {});
  disk?.free();
});

after(() => disk?.unmount());

test('a failed write is the disk\'s fault (no space, or failing) only for the disk\'s codes', () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  assert.deepEqual(
    ['SQLITE_FULL', 'ENOSPC', 'EDQUOT', 'SQLITE_IOERR_WRITE', 'SQLITE_READONLY', 'EIO', 'EROFS', 'SQLITE_CONSTRAINT_PRIMARYKEY'].map((c) => writeFaultOf(coded(c))),
    ['no_space', 'no_space', 'no_space', 'io_error', 'io_error', 'io_error', 'io_error', undefined],
  );
  assert.equal(writeFaultOf(new JournalWriteError(coded('ENOSPC'), false)), 'no_space', 'a journal line refused for space');
  assert.equal(writeFaultOf(new TypeError('SQLite3 can only bind numbers, strings, bigints, buffers, and null')), undefined, 'one batch\'s value, not the disk');
});

describe('SQLite store on a full disk', () => {
  test('a batch whose journal line the disk refuses is refused and changes nothing; reads go on; writes return with room', async (t) => {
    const dir = fresh(t);
    if (!dir) return;
    const store = open(dir);
    const notices: StoreNotice[] = [];
    store.subscribe((n) => notices.push(n));
    assert.equal(await acquire(store, 0), 1);
    disk!.fill();
    // A line longer than any page the journal file has: it needs a new one.
    await refused(acquire(store, 1, 'x'.repeat(64 * 1024)), 'the journal line does not fit');
    assert.equal(store.writeFault(), 'no_space');
    const journal = join(dir, 'leasehold.journal');
    const read = readJournalFile(journal, 0);
    assert.deepEqual([read.lines.length, statSync(journal).size], [1, read.end], 'what the disk took of the refused line was taken back');
    assert.deepEqual(notices.map((n) => n.type), ['writes_refused']);
    assert.equal(await held(store, 0), 1, 'an answered batch is still read');
    assert.equal(await held(store, 1), undefined, 'the refused batch left nothing');
    assert.equal(await store.atomic((tx) => tx.revision('default')), 1, 'nor its revision');
    await refused(acquire(store, 2), 'a write while the disk is full');
    assert.equal(await store.atomic((tx) => tx.pruneLogins(millis(5))), 0, 'a step that writes through but changes nothing is a read');
    disk!.free();
    await waitFor('writes taken again', () => store.writeFault(), (f) => f === undefined);
    assert.deepEqual(notices.map((n) => n.type), ['writes_refused', 'writes_accepted']);
    assert.equal(await acquire(store, 3), 2, 'the next revision after the last one answered');
    await store.close();
    const again = open(dir);
    assert.deepEqual([await held(again, 0), await held(again, 1), await held(again, 2), await held(again, 3)], [1, undefined, undefined, 2]);
  });

  test('a batch durable in the journal stays answered when the commit after it is refused, and survives a reopen on the full disk', async (t) => {
    const dir = fresh(t);
    if (!dir) return;
    const store = open(dir);
    // Lines enough that the journal file keeps pages for the next ones after the commit below.
    for (let i = 0; i < 30; i++) await acquire(store, i);
    await login(store, 'login-0');
    assert.equal(store.uncommittedBatches, 0, 'committed: the next line goes at the start of the file');
    disk!.fill();
    assert.equal(await acquire(store, 100), 31, 'its line fits in the journal file: durable, answered');
    // A batch that must commit: its COMMIT needs WAL pages the disk has not got.
    await refused(login(store, 'login-1'), 'the commit is refused for space: nothing of its batch was applied');
    assert.equal(store.writeFault(), 'no_space');
    assert.equal(await held(store, 100), 31, 'the batch answered before is read from the journal');
    assert.equal(await store.atomic((tx) => tx.getLogin('login-1')), undefined);
    await store.close();
    // Reopened on the still full disk: read-only, with every answered batch.
    const full = open(dir);
    assert.equal(full.writeFault(), 'no_space');
    assert.ok(full.replayed >= 1, `replayed ${full.replayed}`);
    assert.equal(await held(full, 100), 31);
    assert.ok((await full.atomic((tx) => tx.getLogin('login-0'))) !== undefined, 'the commit before the disk filled');
    await refused(acquire(full, 101), 'a write on the reopened full disk');
    disk!.free();
    await waitFor('writes taken again', () => full.writeFault(), (f) => f === undefined);
    await full.close();
    const again = open(dir);
    assert.equal(again.replayed, 0, 'the held batches committed once there was room');
    assert.deepEqual([await held(again, 100), await held(again, 101)], [31, undefined]);
    assert.equal(await acquire(again, 102), 32);
  });
});
