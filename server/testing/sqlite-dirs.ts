/**
 * Test support: SQLite stores in temporary data directories, each closed and
 * its directory removed by `cleanup()` (call it in `afterEach`).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../store/sqlite/sqlite-store';

export function sqliteDirs(prefix: string) {
  const dirs: string[] = [];
  const stores: SqliteStore[] = [];
  return {
    /** A fresh, empty data directory. */
    dataDir(): string {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    /** A store on `dir`; `commitEveryMs` as SqliteStoreOptions has it. */
    open(dir: string, commitEveryMs: number): SqliteStore {
      const s = new SqliteStore({ dataDir: dir, commitEveryMs });
      stores.push(s);
      return s;
    },
    async cleanup(): Promise<void> {
      for (const s of stores.splice(0)) await s.close().catch(() => {});
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    },
  };
}
