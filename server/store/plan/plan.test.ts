/**
 * The shared plans read the indexes they name, on both backends: each
 * rendered statement's query plan, over 20,000 held leases, uses the
 * intended index (a regression here is a LIST or sweep that scans what is
 * held, as the family's primary key did for due work on SQLite); and the
 * PostgreSQL batch's prepared reads and deletes probe their key index even
 * with a plan kept from when the tables were empty.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg, { type PoolClient } from 'pg';
import { parseSelector } from '@/lib/selector';
import { millis } from '../millis';
import { PgStore } from '../postgres/pg-store';
import { execute, prepareSql } from '../postgres/pg-prepared';
import { PRUNE_IDEMPOTENCY } from '../postgres/pg-tx';
import { SqliteStore } from '../sqlite/sqlite-store';
import { tempDir } from '../../testing/harness';
import { createTestDatabase, type TestDatabase } from '../../testing/pg';
import { named, postgres, sqlite, type Dialect } from './dialect';
import { backlogSql, dueFamiliesSql, dueSql, REARM_SQL, SQLITE_REARM_SQL } from './expiry';
import { planLeaseScan, renderLeaseChunk, type LeaseScanPlan } from './lease-scan';
import { planAuditScan, renderAuditScan } from './audit-scan';

const NOW = 1_800_000_000_000;
const LEASES = 20_000;

/** Each statement, and the index its plan must use. */
function cases(d: Dialect): Array<{ name: string; sql: string; params: unknown[]; index: string }> {
  const scan = (text: string, index: LeaseScanPlan['index']) => {
    const sel = parseSelector(text);
    assert.ok(sel.ok, text);
    const plan = planLeaseScan({ family: 'default', triple: sel.value.triple, after: null, want: 101, budget: 10_000, now: millis(NOW) });
    assert.equal(plan.index, index, text);
    const q = renderLeaseChunk(d, plan, 'default', plan.from, 101);
    return { name: text, ...q, index: { primary: d.name === 'sqlite' ? 'PRIMARY KEY' : 'leases_pkey', resource: 'leases_by_resource', area: 'leases_by_area' }[index] };
  };
  const audit = (text: string, eventType: string | undefined, index: string) => {
    const sel = parseSelector(text);
    assert.ok(sel.ok, text);
    const s = { family: 'default', triple: sel.value.triple, selector: text, routeless: false, eventType, before: null, limit: 100, budget: 10_000 };
    const q = renderAuditScan(d, s, planAuditScan(s));
    return { name: `audit ${text} ${eventType ?? ''}`, sql: q.sql, params: q.params, index };
  };
  const due = 'leases_sweep';
  // The walk's floor (SweepFloor on PostgreSQL, 0 on SQLite), a parameter of the sweep horizon's reads.
  const floor = [d.name === 'postgres' ? NOW - 10_000 : 0];
  return [
    // Both stores walk the sweep horizon (docs/design.md "The sweep horizon").
    { name: 'due leases of a family', sql: dueSql(d, 'leases', true), params: [NOW, 'default', 512, ...floor], index: due },
    { name: 'due leases', sql: dueSql(d, 'leases', false), params: [NOW, 512, ...floor], index: due },
    { name: 'due families', sql: dueFamiliesSql(d), params: [NOW, NOW, 64, ...floor], index: due },
    { name: 'backlog', sql: backlogSql(d), params: [NOW, 'default', 1000, 'default', 1000, ...floor], index: due },
    scan('lease://acme/area-7/*', 'primary'),
    scan('lease://acme/**', 'primary'),
    scan('lease://acme/*/res-9', 'resource'),
    scan('lease://*/*/res-9', 'resource'),
    scan('lease://*/area-7/res-9', 'resource'),
    scan('lease://*/area-7/*', 'area'),
    audit('lease://acme/area-7/res-9', undefined, 'audit_by_route'),
    audit('lease://acme/**', 'lease_revoke', 'audit_rare'),
    audit('lease://acme/**', 'lease_acquire', 'audit_by_time'),
  ];
}

describe('query plans: sqlite', () => {
  const dir = tempDir('leasehold-plan-');
  let db: Database.Database;
  before(async () => {
    await new SqliteStore({ dataDir: dir }).close();
    db = new Database(join(dir, 'leasehold.sqlite'));
    db.prepare(
      `WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < ${LEASES - 1})
       INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash, owner_id, incarnation,
         acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata, sweep_at)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'acme', 'area-' || (n % 100), 'res-' || (n / 100),
         'l' || n, n, 's' || (n % 8), 'o', 'hi', ${NOW}, ${NOW}, ${NOW} + 600000 + n, ${NOW} + 3600000, 600000, 0, n, NULL, ${NOW} + 600000 + n FROM i`,
    ).run();
    // No ANALYZE, as in production: without statistics SQLite's planner
    // answers `family = ?` through the primary key unless told the index.
  });
  after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  test('each rendered statement uses its index', () => {
    for (const c of cases(sqlite)) {
      // The sweep horizon's reads name their parameters (Dialect.numbered).
      const args = /@p\d/.test(c.sql) ? [named(c.params)] : c.params;
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${c.sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join('; ');
      assert.match(plan, new RegExp(`USING (COVERING )?(INDEX ${c.index}|${c.index})`), `${c.name}: ${plan}`);
      assert.doesNotMatch(plan, /SCAN leases(?! USING)/, `${c.name}: ${plan}`);
    }
  });
  test('the sweep horizon’s re-arm walks leases_sweep and updates each row by its key', () => {
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${SQLITE_REARM_SQL}`).all(NOW, 512, NOW) as Array<{ detail: string }>).map((r) => r.detail).join('; ');
    assert.match(plan, /SEARCH leases USING (COVERING )?INDEX leases_sweep/, plan);
    assert.match(plan, /SEARCH leases USING PRIMARY KEY \(family=\? AND route=\?\)/, plan);
    assert.doesNotMatch(plan, /SCAN leases(?! USING)/, plan);
  });
});

describe('query plans: postgres', () => {
  let tdb: TestDatabase;
  let client: pg.Client;
  before(async () => {
    tdb = await createTestDatabase();
    await (await PgStore.open({ url: tdb.url })).close();
    client = new pg.Client({ connectionString: tdb.url });
    await client.connect();
    await client.query(
      `INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash, owner_id, incarnation,
         acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata, sweep_at)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'acme', 'area-' || (n % 100), 'res-' || (n / 100),
         'l' || n, n, 's' || (n % 8), 'o', 'hi', ${NOW}, ${NOW}, ${NOW}::int8 + 600000 + n, ${NOW}::int8 + 3600000, 600000, 0, n, NULL,
         ${NOW}::int8 + 600000 + n
       FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query(
      `INSERT INTO audit (time, family, event_type, route, owner_id, result, correlation_id, latency_ms, rare)
       SELECT ${NOW}::int8 + n, 'default', CASE WHEN n % 100 = 0 THEN 'lease_revoke' ELSE 'lease_acquire' END,
         'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'o', 'ok', 'c', 1, CASE WHEN n % 100 = 0 THEN true END
       FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query('ANALYZE');
  });
  after(async () => {
    await client?.end();
    await tdb?.drop();
  });
  test('each rendered statement uses its index', async () => {
    for (const c of cases(postgres)) {
      const r = await client.query(`EXPLAIN ${c.sql}`, c.params);
      const plan = r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
      assert.match(plan, new RegExp(`Index (Only )?Scan( Backward)? using ${c.index}`), `${c.name}:\n${plan}`);
      assert.doesNotMatch(plan, /Seq Scan on leases|Seq Scan on audit/, `${c.name}:\n${plan}`);
    }
  });
  test('the sweep horizon’s re-arm walks leases_sweep and updates by TID', async () => {
    const r = await client.query(`EXPLAIN ${REARM_SQL}`, [NOW + 1_000_000, 2048, NOW]);
    const plan = r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
    assert.match(plan, /Index (Only )?Scan using leases_sweep/, plan);
    assert.match(plan, /Tid Scan on leases/, plan);
    assert.doesNotMatch(plan, /Seq Scan on leases/, plan);
  });
});

describe('query plans: the PostgreSQL batch’s prepared statements', () => {
  let tdb: TestDatabase;
  let client: pg.Client;
  /** Each keyed read and delete, its arguments, and the key index it must probe. */
  const keyed: Array<[name: string, args: string, index: string]> = [
    ['lh_pf_idempotency', `'default', '[["acquire", "lease://acme/area-1/res-1", "r1"]]'`, 'idempotency_pkey'],
    ['lh_pf_sessions', `'["s1", "s2"]'`, 'sessions_pkey'],
    ['lh_pf_leases', `'default', '["lease://acme/area-1/res-1", "lease://acme/area-2/res-2"]'`, 'leases_pkey'],
    ['lh_pf_delays', `'default', '["lease://acme/area-1/res-1"]'`, 'lock_delays_pkey'],
    ['lh_del_leases', `'[["default", "lease://acme/area-1/res-1"]]'`, 'leases_pkey'],
    ['lh_del_sessions', `'[["s1"]]'`, 'sessions_pkey'],
    ['lh_del_idempotency', `'[["default", "acquire", "lease://acme/area-1/res-1", "r1"]]'`, 'idempotency_pkey'],
    ['lh_del_checkpoints', `'[["default", "lease://acme/area-1/res-1"]]'`, 'checkpoints_pkey'],
    ['lh_lock_leases', `'[["default", "lease://acme/area-1/res-1"]]'`, 'leases_pkey'],
    ['lh_lock_sessions', `'[["s1"]]'`, 'sessions_pkey'],
    ['lh_lock_idempotency', `'[["default", "acquire", "lease://acme/area-1/res-1", "r1"]]'`, 'idempotency_pkey'],
    ['lh_lock_checkpoints', `'[["default", "lease://acme/area-1/res-1"]]'`, 'checkpoints_pkey'],
  ];
  const explain = async (name: string, args: string) =>
    (await client.query(`EXPLAIN EXECUTE ${name}(${args})`)).rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');

  before(async () => {
    tdb = await createTestDatabase();
    await (await PgStore.open({ url: tdb.url })).close();
    client = new pg.Client({ connectionString: tdb.url });
    await client.connect();
    // Prepared, and executed past the point where PostgreSQL settles on a generic plan, while the tables are empty.
    await client.query(prepareSql(client as unknown as PoolClient));
    for (const [name, args] of keyed) for (let i = 0; i < 8; i++) await explain(name, args);
    await client.query(
      `INSERT INTO sessions (id_hash, family, incarnation, owner_id, ttl_ms, created_at, expires_at)
       SELECT 's' || n, 'default', 'i' || n, 'o', 60000, ${NOW}, ${NOW}::int8 + 60000 FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query(
      `INSERT INTO idempotency (family, op, route, request_id, digest, status, answer, expires_at)
       SELECT 'default', 'acquire', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'r' || n, 'd', 0, '{}', ${NOW}::int8 + n
       FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query(
      `INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash, owner_id, incarnation,
         acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata, sweep_at)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'acme', 'area-' || (n % 100), 'res-' || (n / 100),
         'l' || n, n, 's' || n, 'o', 'hi', ${NOW}, ${NOW}, ${NOW}::int8 + 600000 + n, ${NOW}::int8 + 3600000, 600000, 0, n, NULL, ${NOW}::int8 + 600000 + n
       FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query(
      `INSERT INTO lock_delays (family, route, until) SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), ${NOW}::int8 + n
       FROM generate_series(0, ${LEASES - 1}) n`,
    );
    await client.query(
      `INSERT INTO checkpoints (family, route, value, fencing_token, lease_id, written_at, version)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), '{}', n, 'l' || n, ${NOW}, 1 FROM generate_series(0, ${LEASES - 1}) n`,
    );
    // ANALYZE invalidates the connection's cached plans (as autovacuum's does once a table grows).
    await client.query('ANALYZE');
  });
  after(async () => {
    await client?.end();
    await tdb?.drop();
  });

  test('each keyed read and delete probes its key index over 20,000 rows, on the connection that prepared it', async () => {
    for (const [name, args, index] of keyed) {
      const plan = await explain(name, args);
      assert.match(plan, new RegExp(`Index Scan using ${index}`), `${name}:\n${plan}`);
      assert.doesNotMatch(plan, /Seq Scan on (leases|sessions|idempotency|checkpoints|lock_delays)|Hash Join|Bitmap Heap Scan/, `${name}:\n${plan}`);
    }
  });

  test('the sweep’s prune of idempotency records walks the expiry index, with a generic plan', async () => {
    await client.query(`PREPARE iprune(bigint, bigint) AS ${PRUNE_IDEMPOTENCY}`);
    await client.query(`SET plan_cache_mode = force_generic_plan`);
    try {
      const plan = (await client.query(`EXPLAIN EXECUTE iprune(${NOW}, 1000)`)).rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n');
      assert.match(plan, /Index Scan using idempotency_expiry/, plan);
      assert.doesNotMatch(plan, /Seq Scan on idempotency/, plan);
    } finally {
      await client.query(`RESET plan_cache_mode`);
      await client.query(`DEALLOCATE iprune`);
    }
  });

  test('the batch’s writes run as prepared: rows in, rows out', async () => {
    await client.query('BEGIN');
    try {
      await client.query(`EXECUTE lh_put_sessions('[["s-new", "default", "i-new", "o", 1000, ${NOW}, ${NOW + 1000}, null, null, 0]]')`);
      const got = await client.query(`SELECT family, ttl_ms FROM sessions WHERE id_hash = 's-new'`);
      assert.deepEqual(got.rows, [{ family: 'default', ttl_ms: '1000' }]);
      // A value holding the dollar-quote tag, quotes, a backslash and an unpaired surrogate (sent as U+FFFD, as text would be).
      const owner = `o'$lh_rows$"\\x\ud800y`;
      await client.query(execute('lh_put_sessions', [['s-odd', 'default', 'i-odd', owner, 1000, NOW, NOW + 1000, null, null, 0]]));
      const odd = await client.query(`SELECT owner_id FROM sessions WHERE id_hash = 's-odd'`);
      assert.deepEqual(odd.rows, [{ owner_id: `o'$lh_rows$"\\x\ufffdy` }]);
      await client.query(`EXECUTE lh_del_sessions('[["s-new"], ["s1"]]')`);
      assert.equal((await client.query(`SELECT count(*)::int AS n FROM sessions WHERE id_hash IN ('s-new', 's1', 's2')`)).rows[0].n, 1);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
