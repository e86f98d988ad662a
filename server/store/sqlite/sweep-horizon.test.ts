/**
 * The sweep horizon as SQLite keeps it (docs/design.md "The sweep
 * horizon"): the column itself, which the reads of due leases never show.
 * A renewal that moves a deadline later leaves `sweep_at` (and its index)
 * alone, one that moves it earlier lowers it, the re-arm moves it on, and
 * a data directory of the schema before it is migrated with every lease's
 * horizon at its deadline. The behaviour the engine sees (due leases exact
 * whatever the horizon) is in store.conformance.test.ts, on both stores;
 * this file is SQLite only because it reads SQLite's own rows and schema
 * (PostgreSQL's migration and re-arm plan are in plan.test.ts).
 */

import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { millis } from '../millis';
import type { LeaseRow } from '../types';
import { MIGRATIONS } from './schema';
import { SqliteStore } from './sqlite-store';

const dirs: string[] = [];
const stores: SqliteStore[] = [];

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-sweep-'));
  dirs.push(dir);
  return dir;
}

function open(dir: string): SqliteStore {
  const s = new SqliteStore({ dataDir: dir });
  stores.push(s);
  return s;
}

async function closeAll(): Promise<void> {
  for (const s of stores.splice(0)) await s.close();
}

function lease(i: number, expiresAt: number): LeaseRow {
  return {
    family: 'default', route: `lease://acme/sweep/r${i}`, leaseId: `ls_${i}`, fencingToken: i, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(expiresAt), maxExpiresAt: millis(1_000_000), ttlMs: 5_000, renewalCount: 0, revision: i, metadata: null,
  };
}

/** A new data directory with leases r1, r2 … of these deadlines, and its store. */
async function withLeases(...deadlines: number[]): Promise<{ dir: string; store: SqliteStore }> {
  const dir = dataDir();
  const store = open(dir);
  await store.atomic(async (tx) => {
    for (const [i, at] of deadlines.entries()) await tx.insertLease(lease(i + 1, at));
  });
  return { dir, store };
}

/** Each lease's [route, expires_at, sweep_at] in the database, the store closed first (its pending rows written). */
async function horizons(dir: string): Promise<Array<[string, number, number]>> {
  await closeAll();
  const db = new Database(join(dir, 'leasehold.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT route, expires_at, sweep_at FROM leases ORDER BY route').raw().all() as Array<[string, number, number]>);
  } finally {
    db.close();
  }
}

test('a renewal to a later deadline leaves the horizon where it was, a shorter one lowers it, the re-arm moves it on', async () => {
  const { dir } = await withLeases(1_000, 1_000);
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 1_000, 1_000], ['lease://acme/sweep/r2', 1_000, 1_000]]);
  let store = open(dir);
  // Through a family's batch (written behind, then narrowly) and directly.
  await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://acme/sweep/r1', 'ls_1', 500, 9_000, 8_500, 1), { family: 'default' });
  await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://acme/sweep/r2', 'ls_2', 500, 800, 300, 1));
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 9_000, 1_000], ['lease://acme/sweep/r2', 800, 800]]);
  store = open(dir);
  // At 900: r2 is due (left where it is, the sweep ends it); r1's horizon has passed and it is not due.
  assert.equal(await store.atomic(async (tx) => tx.rearmLeases!(millis(900), 10)), 0);
  assert.equal(await store.atomic(async (tx) => tx.rearmLeases!(millis(1_000), 10)), 1);
  assert.deepEqual((await store.atomic((tx) => tx.dueLeases(millis(1_000), 10))).map((l) => l.route), ['lease://acme/sweep/r2']);
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 9_000, 9_000], ['lease://acme/sweep/r2', 800, 800]]);
});

test('a lease row written again whole (a new holder of the route) keeps the lower horizon', async () => {
  const dir = dataDir();
  const store = open(dir);
  await store.atomic((tx) => tx.insertLease(lease(1, 1_000)));
  // A read the caches cannot answer puts the row in the database; then the route changes hands in one step.
  await store.atomic((tx) => tx.dueLeases(millis(0), 10));
  await store.atomic(async (tx) => {
    assert.equal(await tx.deleteLease('default', 'lease://acme/sweep/r1', 'ls_1', 1), true);
    await tx.insertLease({ ...lease(1, 5_000), leaseId: 'ls_1b', fencingToken: 2 });
  });
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 5_000, 1_000]]);
});

test('a data directory of the schema before the horizon opens with every lease horizon at its deadline, and its due leases are found', async () => {
  const dir = dataDir();
  const old = new Database(join(dir, 'leasehold.sqlite'));
  for (const m of MIGRATIONS.slice(0, -1)) old.exec(m);
  old.pragma(`user_version = ${MIGRATIONS.length - 1}`);
  const insert = old.prepare(
    `INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash, owner_id, incarnation,
       acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata)
     VALUES ('default', ?, 'acme', 'sweep', ?, ?, ?, 'h1', 'o', 'hi_1', 1, 1, ?, 1000000, 5000, 0, ?, NULL)`,
  );
  insert.run('lease://acme/sweep/r1', 'r1', 'ls_1', 1, 700, 1);
  insert.run('lease://acme/sweep/r2', 'r2', 'ls_2', 2, 3_000, 2);
  old.close();
  const store = open(dir);
  assert.deepEqual((await store.atomic((tx) => tx.dueLeases(millis(1_000), 10))).map((l) => l.route), ['lease://acme/sweep/r1']);
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 700, 700], ['lease://acme/sweep/r2', 3_000, 3_000]]);
  const db = new Database(join(dir, 'leasehold.sqlite'), { readonly: true });
  const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'leases' ORDER BY name`).pluck().all();
  db.close();
  assert.ok(indexes.includes('leases_sweep'), String(indexes));
  assert.ok(!indexes.includes('leases_expiry'), String(indexes));
});

test('a row without a horizon (0: a journal line of an older build) is found when due and moved on when not', async () => {
  const { dir } = await withLeases(700, 3_000);
  await closeAll();
  const db = new Database(join(dir, 'leasehold.sqlite'));
  db.prepare('UPDATE leases SET sweep_at = 0').run();
  db.close();
  const store = open(dir);
  assert.deepEqual((await store.atomic((tx) => tx.dueLeases(millis(1_000), 10))).map((l) => l.route), ['lease://acme/sweep/r1']);
  assert.equal(await store.atomic(async (tx) => tx.rearmLeases!(millis(1_000), 10)), 1);
  assert.deepEqual(await horizons(dir), [['lease://acme/sweep/r1', 700, 0], ['lease://acme/sweep/r2', 3_000, 3_000]]);
});
