/**
 * The SQLite store's read-ahead (sqlite-store.ts `READ_AHEAD_MIN`,
 * write-behind.ts `BatchTx.readAhead`): a step hinted with a batched call's
 * routes has the lease rows its cache lacks read in a few statements before
 * it runs, and its reads are then answered from the cache, exactly as they
 * would have been one row at a time. SQLite only: the PostgreSQL store reads
 * its hinted rows with the family's lock (pg-batch.ts), tested there.
 */

import { afterEach, test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { millis } from '../millis';
import type { LeaseRow, StepScope } from '../types';
import { SqliteStore } from './sqlite-store';
import { BatchTx } from './write-behind';

const dirs: string[] = [];
const stores: SqliteStore[] = [];

afterEach(async () => {
  mock.restoreAll();
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir: string): SqliteStore {
  const s = new SqliteStore({ dataDir: dir });
  stores.push(s);
  return s;
}

const route = (i: number) => `lease://acme/ahead/r${String(i).padStart(4, '0')}`;

function lease(i: number): LeaseRow {
  return {
    family: 'default', route: route(i), leaseId: `ls_${i}`, fencingToken: i + 1, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000 + i), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: i + 1,
    metadata: i % 3 === 0 ? `{"i":${i}}` : null,
  };
}

/** A store holding leases 0 … count-1 but every third, closed and opened again: its caches are cold. */
async function coldStore(count: number): Promise<SqliteStore> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-read-ahead-'));
  dirs.push(dir);
  const first = open(dir);
  await first.atomic(async (tx) => {
    for (let i = 0; i < count; i++) if (i % 3 !== 1) await tx.insertLease(lease(i));
  });
  await first.close();
  stores.splice(stores.indexOf(first), 1);
  return open(dir);
}

/** Each route's row as one step reads it, with or without the batched call's hint. */
function readAll(store: SqliteStore, routes: string[], hinted: boolean): Promise<Array<LeaseRow | undefined>> {
  const scope: StepScope | undefined = hinted ? { family: 'default', prefetch: { routes } } : undefined;
  return store.atomic(async (tx) => {
    const rows: Array<LeaseRow | undefined> = [];
    for (const r of routes) rows.push(await tx.getLease('default', r));
    return rows;
  }, scope);
}

for (const count of [9, 300]) {
  test(`a hinted step of ${count} routes reads its rows ahead, a few statements in all, and sees exactly what reading them one by one sees`, async () => {
    const routes = Array.from({ length: count }, (_, i) => route(i));
    const plain = await readAll(await coldStore(count), routes, false);
    assert.equal(plain.filter((r) => r === undefined).length, Math.floor((count + 1) / 3), 'every third route has no lease');

    const store = await coldStore(count);
    const ahead = mock.method(BatchTx.prototype, 'readAhead');
    const oneByOne = mock.method(BatchTx.prototype as unknown as { leaseRow(f: string, r: string): LeaseRow | undefined }, 'leaseRow');
    const hinted = await readAll(store, routes, true);
    assert.deepStrictEqual(hinted, plain);
    assert.equal(ahead.mock.callCount(), 1);
    assert.equal(oneByOne.mock.callCount(), 0, 'no row, present or absent, was read on its own');
  });
}

test('a row the batch already changed is not read again: the step sees the change, not the database', async () => {
  const store = await coldStore(12);
  const routes = Array.from({ length: 12 }, (_, i) => route(i));
  // Both steps run in one batch: the first renews lease 0 (pending, written behind), the second is hinted.
  const renewed = store.atomic(async (tx) => {
    await tx.updateLeaseRenewal('default', route(0), 'ls_0', millis(5_000), millis(15_000), 10_000, 1);
  });
  const [, rows] = await Promise.all([renewed, readAll(store, routes, true)]);
  assert.deepEqual([rows[0]?.renewalCount, rows[0]?.expiresAt], [1, 15_000]);
  assert.equal(rows[1], undefined);
  assert.equal(rows[2]?.leaseId, 'ls_2');
});

test('a lease row read back, alone or ahead, is the row written, field for field', async () => {
  const written: LeaseRow = {
    family: 'default', route: route(7), leaseId: 'ls_seven', fencingToken: 71, sessionHash: 'h_seven', ownerId: 'owner "7"', incarnation: 'hi_7',
    acquiredAt: millis(1_001), renewedAt: millis(2_002), expiresAt: millis(30_003), maxExpiresAt: millis(40_004), ttlMs: 28_005, renewalCount: 6, revision: 70,
    metadata: '{"k":"v"}', releaseRequest: '{"at":2500,"reason":"r","token_id":"t"}',
  };
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-read-ahead-'));
  dirs.push(dir);
  const first = open(dir);
  await first.atomic((tx) => tx.insertLease(written));
  await first.atomic((tx) => tx.setReleaseRequest('default', written.route, written.leaseId, written.fencingToken, written.releaseRequest!));
  await first.close();
  stores.splice(stores.indexOf(first), 1);
  const routes = Array.from({ length: 8 }, (_, i) => route(i));
  const alone = open(dir);
  assert.deepStrictEqual((await readAll(alone, [written.route], false))[0], written);
  await alone.close();
  stores.splice(stores.indexOf(alone), 1);
  // Opened again, its cache cold: the row comes from the read-ahead.
  assert.deepStrictEqual((await readAll(open(dir), routes, true))[7], written);
  const cold = open(dir + '-copy');
  dirs.push(dir + '-copy');
  assert.deepStrictEqual(await readAll(cold, routes, true), routes.map(() => undefined));
});
