/**
 * The store factory (server/store/factory.ts): the URL's scheme picks the
 * engine, and a scheme no engine takes is refused without echoing the URL
 * (it may carry a password).
 */

import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../testing/harness';
import { createTestDatabase } from '../testing/pg';
import { openStore } from './factory';
import { PgStore } from './postgres/pg-store';
import { SqliteStore } from './sqlite/sqlite-store';

test('a plain path and a sqlite: URL open SQLite in that data directory', async () => {
  const forms = [(d: string) => d, (d: string) => `sqlite:${d}`, (d: string) => `sqlite://${d}`];
  for (const form of forms) {
    const dir = tempDir('leasehold-factory-');
    try {
      const store = await openStore(form(dir));
      try {
        assert.ok(store instanceof SqliteStore);
        assert.equal(store.kind, 'sqlite');
        assert.ok(existsSync(join(dir, 'leasehold.sqlite')), `the database is in ${form('<dir>')}`);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('postgres:// and postgresql:// open PostgreSQL', async () => {
  const db = await createTestDatabase();
  try {
    for (const url of [db.url, db.url.replace(/^postgres(ql)?:/, 'postgresql:')]) {
      const store = await openStore(url, { postgres: { poolSize: 2 } });
      try {
        assert.ok(store instanceof PgStore);
        assert.equal(store.kind, 'postgres');
      } finally {
        await store.close();
      }
    }
  } finally {
    await db.drop();
  }
});

test('an unknown scheme is refused, naming the scheme and the known engines, never the URL', async () => {
  await assert.rejects(openStore('mysql://root:s3cret@db.example/leases'), (e: unknown) => {
    assert.ok(e instanceof Error);
    assert.match(e.message, /no store for mysql:\/\/ URLs \(known: sqlite, postgres\)/);
    assert.doesNotMatch(e.message, /s3cret|example/);
    return true;
  });
});
