/**
 * Test support for store-level suites: a fresh store on one backend for
 * every test (SQLite in a temporary directory, PostgreSQL in a fresh
 * database), on a manual clock, closed and removed after the test.
 */

import { afterEach, beforeEach } from 'node:test';
import { rmSync } from 'node:fs';
import { openStore } from '../store/factory';
import type { Store } from '../store/types';
import { ManualClock, tempDir } from './harness';
import { createTestDatabase, type Backend, type TestDatabase } from './pg';

export interface StoreEachTest {
  readonly clock: ManualClock;
  /** Open (or reopen, after closing the last) the test's store over its directory or database. */
  open(): Promise<Store>;
}

/** Registers the hooks in the calling `describe`; call `open()` from a `beforeEach` or a test. */
export function storeEachTest(backend: Backend): StoreEachTest {
  const clock = new ManualClock();
  let dir = '';
  let db: TestDatabase | undefined;
  let opened: Store[] = [];
  beforeEach(async () => {
    dir = tempDir('leasehold-store-');
    db = backend === 'postgres' ? await createTestDatabase({ migrated: true }) : undefined;
  });
  afterEach(async () => {
    // A test may have closed its store already; closing again is harmless to ignore.
    for (const s of opened) await s.close().catch(() => {});
    opened = [];
    rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });
  return {
    clock,
    async open() {
      const store = await openStore(db?.url ?? dir, { clock: clock.now });
      opened.push(store);
      return store;
    },
  };
}
