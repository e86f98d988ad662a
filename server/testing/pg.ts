/**
 * Test support for the PostgreSQL store: a fresh database per use, created
 * with a random name on the test server and dropped afterwards. The server
 * is `LEASEHOLD_TEST_DATABASE_URL` (a database to connect to for CREATE /
 * DROP), else `LEASEHOLD_DATABASE_URL`'s server, else the local one
 * (127.0.0.1:5432, user postgres).
 */

import { STORE_KINDS, type StoreKind } from '@/lib/wire';
import pg from 'pg';
import { PgStore } from '../store/postgres/pg-store';
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

/**
 * The process's connections for CREATE and DROP, kept between uses (a
 * connection costs about as much as a DROP); idle ones never keep the
 * process alive (`allowExitOnIdle`), so a test file still ends on its own.
 */
let adminPool: pg.Pool | undefined;

async function admin<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  adminPool ??= new pg.Pool({ connectionString: adminUrl(), connectionTimeoutMillis: 5_000, max: 2, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  const c = await adminPool.connect();
  try {
    return await fn(c);
  } finally {
    c.release();
  }
}

/** Drop a test database by name (disconnecting whoever is still connected). */
export async function dropTestDatabase(name: string): Promise<void> {
  if (!/^leasehold_test_[0-9a-f]+$/.test(name)) throw new Error(`not a test database: ${name}`);
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** This process's migrated template (`migrated: true`), made at its first use and dropped when the process ends. */
let template: Promise<string> | undefined;

/**
 * A database holding the schema at its current version and nothing else:
 * migrated by the store itself, then its epoch deleted, so each copy draws
 * its own at its first open, as a new database does. Copying it takes a
 * third of the time of creating a database and migrating it (docs/design.md
 * "How the CI time splits").
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `leasehold_test_${randomBytes(6).toString('hex')}`;
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
    process.once('beforeExit', () => void dropTestDatabase(name).catch(() => undefined));
    const store = await PgStore.open({ url: urlFor(name), poolSize: 1 });
    await store.close();
    const c = new pg.Client({ connectionString: urlFor(name), connectionTimeoutMillis: 5_000 });
    await c.connect();
    try {
      await c.query(`DELETE FROM meta WHERE key = 'epoch'`);
    } finally {
      await c.end();
    }
    return name;
  })();
  return template;
}

/**
 * Create `leasehold_test_<random>`: empty, or with `migrated` a copy of
 * this process's migrated template, for tests about anything but the
 * migrations themselves.
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const name = `leasehold_test_${randomBytes(6).toString('hex')}`;
  const from = opts.migrated ? ` TEMPLATE ${await migratedTemplate()}` : '';
  await admin((c) => c.query(`CREATE DATABASE ${name}${from}`));
  return {
    name,
    url: urlFor(name),
    drop: () => dropTestDatabase(name),
  };
}

/** The store backends every conformance suite runs against. */
export const BACKENDS = STORE_KINDS;
export type Backend = StoreKind;
