/**
 * Test support for the PostgreSQL store: a fresh database per use, created
 * with a random name on the test server and dropped afterwards. The server
 * is `LEASEHOLD_TEST_DATABASE_URL` (a database to connect to for CREATE /
 * DROP), else `LEASEHOLD_DATABASE_URL`'s server, else the local one
 * (127.0.0.1:5432, user postgres).
 */

import { STORE_KINDS, type StoreKind } from '@/lib/wire';
import pg from 'pg';
import { randomBytes } from 'node:crypto';

/** The administrative URL (its database is only used to create and drop others). */
export function adminUrl(): string {
  return process.env.LEASEHOLD_TEST_DATABASE_URL ?? process.env.LEASEHOLD_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** The same server and credentials, another database. */
export function urlFor(database: string, base = adminUrl()): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

export interface TestDatabase {
  name: string;
  url: string;
  /** Drop it (disconnecting whoever is still connected). */
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: adminUrl(), connectionTimeoutMillis: 5_000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Drop a test database by name (disconnecting whoever is still connected). */
export async function dropTestDatabase(name: string): Promise<void> {
  if (!/^leasehold_test_[0-9a-f]+$/.test(name)) throw new Error(`not a test database: ${name}`);
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Create `leasehold_test_<random>`. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `leasehold_test_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  return {
    name,
    url: urlFor(name),
    drop: () => dropTestDatabase(name),
  };
}

/** The store backends every conformance suite runs against. */
export const BACKENDS = STORE_KINDS;
export type Backend = StoreKind;
