/** The families' change logs on the embedded store (docs/design.md, "Change log"). */

import type Database from 'better-sqlite3';
import type { ChangeLogStats, ChangeLogTx, ChangeRow } from '../types';
import { pruneUpTo, type PruneCandidate } from '../change-log';
import { changeValues } from '../unit-of-work';

export const CHANGE_LOG_MIGRATION = `
  -- Every change of a family, by revision, as the feed sends it: a resuming
  -- stream replays from here. The horizon says which revisions are
  -- complete; a database from before the log starts complete from its
  -- current revisions.
  CREATE TABLE change_log (
    family TEXT NOT NULL,
    revision INTEGER NOT NULL,
    route TEXT NOT NULL,
    time INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (family, revision)
  ) WITHOUT ROWID;
  CREATE TABLE change_horizon (family TEXT PRIMARY KEY, revision INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO change_horizon (family, revision) SELECT family, revision FROM families;
`;


export class SqliteChangeLog implements ChangeLogTx {
  private readonly s;

  constructor(db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      append: p(`INSERT INTO change_log (family, revision, route, time, data) VALUES (?, ?, ?, ?, ?)`),
      read: p(`SELECT family, revision, route, time, data FROM change_log WHERE family = ? AND revision > ? AND revision <= ? ORDER BY revision LIMIT ?`),
      horizon: p(`SELECT revision FROM change_horizon WHERE family = ?`).pluck(),
      candidates: p(
        `SELECT f.family, f.revision, coalesce(h.revision, 0) AS horizon FROM families f LEFT JOIN change_horizon h ON h.family = f.family
         WHERE f.revision - coalesce(h.revision, 0) > ? ORDER BY f.family`,
      ),
      oldest: p(`SELECT revision, time FROM change_log WHERE family = ? AND revision <= ? ORDER BY revision LIMIT ?`),
      deleteUpTo: p(`DELETE FROM change_log WHERE family = ? AND revision <= ?`),
      setHorizon: p(
        `INSERT INTO change_horizon (family, revision) VALUES (?, ?)
         ON CONFLICT (family) DO UPDATE SET revision = max(revision, excluded.revision)`,
      ),
      stats: p(
        `SELECT f.family, f.revision - coalesce(h.revision, 0) AS rows, coalesce(h.revision, 0) AS horizon
         FROM families f LEFT JOIN change_horizon h ON h.family = f.family ORDER BY f.family`,
      ),
    };
  }

  async append(rows: readonly ChangeRow[]): Promise<void> {
    for (const r of rows) this.s.append.run(...changeValues(r));
  }

  async read(family: string, after: number, upTo: number, limit: number): Promise<ChangeRow[]> {
    return this.s.read.all(family, after, upTo, limit) as ChangeRow[];
  }

  async horizon(family: string): Promise<number> {
    return (this.s.horizon.get(family) as number | undefined) ?? 0;
  }

  async prune(keepChanges: number, olderThan: number, limit: number): Promise<number> {
    let left = limit;
    for (const c of this.s.candidates.all(keepChanges) as PruneCandidate[]) {
      if (left <= 0) break;
      const last = pruneUpTo(this.s.oldest.all(c.family, c.revision - keepChanges, left) as Array<{ revision: number; time: number }>, c.revision - keepChanges, olderThan);
      if (last === undefined) continue;
      left -= this.s.deleteUpTo.run(c.family, last).changes;
      this.s.setHorizon.run(c.family, last);
    }
    return limit - left;
  }

  async stats(): Promise<ChangeLogStats[]> {
    return this.s.stats.all() as ChangeLogStats[];
  }
}
