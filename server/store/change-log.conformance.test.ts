/**
 * The change log at the Store boundary (docs/design.md, "Change log"), on
 * every backend: appended with the step or not at all, read by revision,
 * pruned by count and age with a per-family horizon, sized without a scan,
 * and created for databases from before it (their history has no log: the
 * horizon starts at their current revisions).
 */

import { millis } from './millis';
import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import pg from 'pg';
import type { ChangeRow, Store, Tx } from './types';
import { BACKENDS, createTestDatabase } from '../testing/pg';
import { storeEachTest } from '../testing/store-each-test';
import { tempDir } from '../testing/harness';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/schema';
import { CHANGE_LOG_MIGRATION } from './sqlite/change-log';
import { PG_CHANGE_LOG_MIGRATION } from './postgres/pg-change-log';
import { MIGRATIONS as PG_MIGRATIONS } from './postgres/schema';
import { openStore } from './factory';

const row = (family: string, revision: number, time: number, route = `lease://a/b/r${revision}`): ChangeRow => ({
  family,
  revision,
  route,
  time: millis(time),
  data: JSON.stringify({ route, change: 'released', revision }),
});

/** Bump the family's revision and log the change, as the engine does: one change per revision. */
async function change(tx: Tx, family: string, route?: string): Promise<number> {
  const revision = await tx.bumpRevision(family);
  await tx.changes.append([row(family, revision, tx.now, route)]);
  return revision;
}

for (const backend of BACKENDS) {
  describe(`change log conformance: ${backend}`, () => {
    const fx = storeEachTest(backend);
    const clock = fx.clock;
    let store: Store;
    beforeEach(async () => {
      store = await fx.open();
    });

    const read = (family: string, after = 0, upTo = Number.MAX_SAFE_INTEGER, limit = 1_000) => store.atomic((tx) => tx.changes.read(family, after, upTo, limit));

    test('changes are appended with their step, read back in revision order within (after, upTo], limited', async () => {
      await store.atomic(async (tx) => {
        for (let i = 0; i < 5; i++) await change(tx, 'f1');
      }, { family: 'f1' });
      await store.atomic(async (tx) => {
        await change(tx, 'f2');
      }, { family: 'f2' });
      const all = await read('f1');
      assert.deepEqual(all.map((r) => r.revision), [1, 2, 3, 4, 5]);
      assert.deepEqual(all[0], row('f1', 1, clock.now()));
      assert.deepEqual((await read('f1', 1, 4)).map((r) => r.revision), [2, 3, 4]);
      assert.deepEqual((await read('f1', 1, 5, 2)).map((r) => r.revision), [2, 3]);
      assert.deepEqual((await read('f2')).map((r) => [r.family, r.revision]), [['f2', 1]]);
      assert.deepEqual(await read('nobody'), []);
    });

    test('a step reads every logged change up to the revision it reads, those of earlier steps started with it included', async () => {
      await store.atomic((tx) => change(tx, 'f'), { family: 'f' });
      // Started together: on SQLite one batch, the later steps' reads come before its commit.
      const steps = Array.from({ length: 6 }, (_, i) =>
        i % 2 === 0
          ? store.atomic((tx) => change(tx, 'f'), { family: 'f' })
          : store.atomic(async (tx) => {
              const upTo = await tx.revision('f');
              return { upTo, rows: (await tx.changes.read('f', 0, upTo, 100)).map((r) => r.revision) };
            }),
      );
      for (const r of await Promise.all(steps)) {
        if (typeof r === 'number') continue;
        assert.deepEqual(r.rows, Array.from({ length: r.upTo }, (_, i) => i + 1));
        assert.ok(r.upTo >= 1);
      }
    });

    test('a step that throws logs nothing; its neighbours in the same batch keep theirs', async () => {
      const ok1 = store.atomic((tx) => change(tx, 'f'), { family: 'f' });
      const bad = store.atomic(async (tx) => {
        await change(tx, 'f');
        throw new Error('boom');
      }, { family: 'f' });
      const ok2 = store.atomic((tx) => change(tx, 'f'), { family: 'f' });
      assert.equal(await ok1, 1);
      await assert.rejects(bad, /boom/);
      assert.equal(await ok2, 2);
      assert.deepEqual((await read('f')).map((r) => r.revision), [1, 2]);
    });

    test('a step reads its own appends, and a step writing through (a scan after a write) keeps or drops them with the rest', async () => {
      await store.atomic(async (tx) => {
        await change(tx, 'f');
        assert.deepEqual((await tx.changes.read('f', 0, 10, 10)).map((r) => r.revision), [1]);
      }, { family: 'f' });
      await assert.rejects(
        store.atomic(async (tx) => {
          await change(tx, 'f');
          await tx.scanLeases({ family: 'f', triple: [null, null, null], after: null, want: 1, budget: 1, now: tx.now });
          await change(tx, 'f');
          throw new Error('boom');
        }, { family: 'f' }),
        /boom/,
      );
      assert.deepEqual((await read('f')).map((r) => r.revision), [1]);
    });

    test('prune keeps the newest changes by count, raising the horizon; stats are revision minus horizon', async () => {
      await store.atomic(async (tx) => {
        for (let i = 0; i < 10; i++) await change(tx, 'f');
      }, { family: 'f' });
      await store.atomic((tx) => change(tx, 'g'), { family: 'g' });
      assert.equal(await store.atomic((tx) => tx.changes.horizon('f')), 0);
      // By count alone (every row is older than the cut-off): keep 4 of f's 10, at most 3 per call.
      const never = millis(Number.MAX_SAFE_INTEGER);
      assert.equal(await store.atomic((tx) => tx.changes.prune(4, never, 3)), 3);
      assert.equal(await store.atomic((tx) => tx.changes.horizon('f')), 3);
      assert.equal(await store.atomic((tx) => tx.changes.prune(4, never, 100)), 3);
      assert.equal(await store.atomic((tx) => tx.changes.prune(4, never, 100)), 0);
      assert.equal(await store.atomic((tx) => tx.changes.horizon('f')), 6);
      assert.deepEqual((await read('f')).map((r) => r.revision), [7, 8, 9, 10]);
      assert.deepEqual(await store.atomic((tx) => tx.changes.stats()), [
        { family: 'f', rows: 4, horizon: 6 },
        { family: 'g', rows: 1, horizon: 0 },
      ]);
    });

    test('prune keeps whatever is newer than the age cut-off, even beyond the count', async () => {
      const t0 = clock.now();
      await store.atomic(async (tx) => {
        for (let i = 0; i < 3; i++) await change(tx, 'f');
      }, { family: 'f' });
      clock.advance(1_000);
      await store.atomic(async (tx) => {
        for (let i = 0; i < 3; i++) await change(tx, 'f');
      }, { family: 'f' });
      // Keep 1 by count, but everything from t0 + 500 on by age: only the first 3 go.
      assert.equal(await store.atomic((tx) => tx.changes.prune(1, millis(t0 + 500), 100)), 3);
      assert.equal(await store.atomic((tx) => tx.changes.horizon('f')), 3);
      assert.deepEqual((await read('f')).map((r) => r.revision), [4, 5, 6]);
    });
  });

  describe(`change log migration: ${backend}`, () => {
    test('a database from before the change log gets one, its horizon at each family’s revision', async () => {
      const dir = tempDir('leasehold-upgrade-');
      // The schema just before the change log's migration (later migrations may follow it).
      const before = backend === 'sqlite' ? SQLITE_MIGRATIONS.indexOf(CHANGE_LOG_MIGRATION) : PG_MIGRATIONS.indexOf(PG_CHANGE_LOG_MIGRATION);
      let store: Store;
      let drop: (() => Promise<void>) | undefined;
      if (backend === 'sqlite') {
        const db = new Database(join(dir, 'leasehold.sqlite'));
        for (const m of SQLITE_MIGRATIONS.slice(0, before)) db.exec(m);
        db.pragma(`user_version = ${before}`);
        db.prepare(`INSERT INTO families (family, revision) VALUES ('old', 41)`).run();
        db.close();
        store = await openStore(`sqlite:${dir}`);
      } else {
        const t = await createTestDatabase();
        drop = t.drop;
        const c = new pg.Client({ connectionString: t.url });
        await c.connect();
        await c.query('CREATE TABLE leasehold_schema (version integer NOT NULL)');
        for (const m of PG_MIGRATIONS.slice(0, before)) await c.query(m);
        await c.query('INSERT INTO leasehold_schema (version) VALUES ($1)', [before]);
        await c.query(`INSERT INTO families (family, revision) VALUES ('old', 41)`);
        await c.end();
        store = await openStore(t.url);
      }
      try {
        assert.equal(await store.atomic((tx) => tx.schemaCurrent()), true);
        assert.equal(await store.atomic((tx) => tx.changes.horizon('old')), 41);
        assert.deepEqual(await store.atomic((tx) => tx.changes.stats()), [{ family: 'old', rows: 0, horizon: 41 }]);
        await store.atomic((tx) => change(tx, 'old'), { family: 'old' });
        assert.deepEqual(
          (await store.atomic((tx) => tx.changes.read('old', 41, 100, 10))).map((r) => r.revision),
          [42],
        );
      } finally {
        await store.close();
        await drop?.();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
