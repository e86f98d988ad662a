/**
 * Test support: a SQLite data directory whose family has already counted to
 * `revision`, so the next lease granted there has fencing token
 * `revision + 1` (a revision is the family's change counter, and a lease's
 * fencing token is the revision of its grant). Tokens past 2^31 would take
 * 2^31 grants to reach otherwise. The change log's horizon moves with it, as
 * in a store whose older changes were pruned: a feed resuming from before it
 * is told to resync, never handed a gap.
 *
 * Call it on a fresh directory, then start the server on it
 * (`startTestServer({ backend: 'sqlite', dataDir })`).
 */

import Database from 'better-sqlite3';
import { join } from 'node:path';
import { openStore } from '../store/factory';

export async function seedRevision(dataDir: string, family: string, revision: number): Promise<void> {
  // The store creates its schema at open: seed it closed, as the server will find it.
  await (await openStore(`sqlite:${dataDir}`)).close();
  const db = new Database(join(dataDir, 'leasehold.sqlite'));
  try {
    db.transaction(() => {
      for (const table of ['families', 'change_horizon']) {
        db.prepare(`INSERT INTO ${table} (family, revision) VALUES (?, ?) ON CONFLICT (family) DO UPDATE SET revision = excluded.revision`).run(family, revision);
      }
    })();
  } finally {
    db.close();
  }
}
