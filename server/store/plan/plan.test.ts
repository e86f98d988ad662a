/**
 * The shared plans read the indexes they name, on both backends: each
 * rendered statement's query plan, over 20,000 held leases, uses the
 * intended index (a regression here is a LIST or sweep that scans what is
 * held, as the family's primary key did for due work on SQLite).
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { parseSelector } from '@/lib/selector';
import { millis } from '../millis';
import { PgStore } from '../postgres/pg-store';
import { SqliteStore } from '../sqlite/sqlite-store';
import { tempDir } from '../../testing/harness';
import { createTestDatabase, type TestDatabase } from '../../testing/pg';
import { postgres, sqlite, type Dialect } from './dialect';
import { dueFamiliesSql, dueSql } from './expiry';
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
    const s = { family: 'default', triple: sel.value.triple, routeless: false, eventType, before: null, limit: 100, budget: 10_000 };
    const q = renderAuditScan(d, s, planAuditScan(s));
    return { name: `audit ${text} ${eventType ?? ''}`, sql: q.sql, params: q.params, index };
  };
  return [
    { name: 'due leases of a family', sql: dueSql(d, 'leases', true), params: [NOW, 'default', 512], index: 'leases_expiry' },
    { name: 'due leases', sql: dueSql(d, 'leases', false), params: [NOW, 512], index: 'leases_expiry' },
    { name: 'due families', sql: dueFamiliesSql(d), params: [NOW, NOW, 64], index: 'leases_expiry' },
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
         acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'acme', 'area-' || (n % 100), 'res-' || (n / 100),
         'l' || n, n, 's' || (n % 8), 'o', 'hi', ${NOW}, ${NOW}, ${NOW} + 600000 + n, ${NOW} + 3600000, 600000, 0, n, NULL FROM i`,
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
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${c.sql}`).all(...c.params) as Array<{ detail: string }>).map((r) => r.detail).join('; ');
      assert.match(plan, new RegExp(`USING (COVERING )?(INDEX ${c.index}|${c.index})`), `${c.name}: ${plan}`);
      assert.doesNotMatch(plan, /SCAN leases(?! USING)/, `${c.name}: ${plan}`);
    }
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
         acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata)
       SELECT 'default', 'lease://acme/area-' || (n % 100) || '/res-' || (n / 100), 'acme', 'area-' || (n % 100), 'res-' || (n / 100),
         'l' || n, n, 's' || (n % 8), 'o', 'hi', ${NOW}, ${NOW}, ${NOW}::int8 + 600000 + n, ${NOW}::int8 + 3600000, 600000, 0, n, NULL
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
});
