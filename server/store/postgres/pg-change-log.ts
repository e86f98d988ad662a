/** The families' change logs on PostgreSQL, in the step's transaction (docs/design.md, "Change log"). */

import type { ChangeLogStats, ChangeLogTx, ChangeRow } from '../types';
import { pruneUpTo, type PruneCandidate } from '../change-log';
import type { PgRun as PgTx } from './pg-run';

export const PG_CHANGE_LOG_MIGRATION = `
  -- Every change of a family, by revision, as the feed sends it: a resuming
  -- stream replays from here, on any instance. The horizon says which
  -- revisions are complete; a database from before the log starts complete
  -- from its current revisions.
  CREATE TABLE change_log (
    family text COLLATE "C" NOT NULL,
    revision bigint NOT NULL,
    route text COLLATE "C" NOT NULL,
    time bigint NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (family, revision)
  );
  CREATE TABLE change_horizon (family text COLLATE "C" PRIMARY KEY, revision bigint NOT NULL);
  INSERT INTO change_horizon (family, revision) SELECT family, revision FROM families;
`;

/** The multi-row insert of a step's changes, as literal SQL (sent with its COMMIT, in the same round trip). */
export function changeInsertSql(rows: readonly ChangeRow[], quote: (s: string) => string): string {
  if (rows.length === 0) return '';
  const values = rows.map((r) => `(${quote(r.family)}, ${r.revision}, ${quote(r.route)}, ${r.time}, ${quote(r.data)})`);
  return `INSERT INTO change_log (family, revision, route, time, data) VALUES ${values.join(', ')}; `;
}

export class PgChangeLog implements ChangeLogTx {
  /** Appended in this step, written with its COMMIT (or before any read of the log in the same step). */
  pending: ChangeRow[] = [];

  constructor(private readonly tx: PgTx) {}

  async append(rows: readonly ChangeRow[]): Promise<void> {
    this.pending.push(...rows);
  }

  /** Write the pending appends now (a read of the log in the same step must see them). */
  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const rows = this.pending;
    this.pending = [];
    const values: unknown[] = [];
    const tuples = rows.map((r, i) => {
      values.push(r.family, r.revision, r.route, r.time, r.data);
      return `($${i * 5 + 1}, $${i * 5 + 2}, $${i * 5 + 3}, $${i * 5 + 4}, $${i * 5 + 5})`;
    });
    await this.tx.run('', `INSERT INTO change_log (family, revision, route, time, data) VALUES ${tuples.join(', ')}`, values);
  }

  async read(family: string, after: number, upTo: number, limit: number): Promise<ChangeRow[]> {
    await this.flush();
    return this.tx.run<ChangeRow>(
      'clread',
      `SELECT family, revision, route, time, data FROM change_log WHERE family = $1 AND revision > $2 AND revision <= $3 ORDER BY revision LIMIT $4`,
      [family, after, upTo, limit],
    );
  }

  async horizon(family: string): Promise<number> {
    const rows = await this.tx.run<{ revision: number }>('clhorizon', `SELECT revision FROM change_horizon WHERE family = $1`, [family]);
    return rows[0]?.revision ?? 0;
  }

  async prune(keepChanges: number, olderThan: number, limit: number): Promise<number> {
    await this.flush();
    let left = limit;
    const candidates = await this.tx.run<PruneCandidate>(
      'clcandidates',
      `SELECT f.family, f.revision, coalesce(h.revision, 0) AS horizon FROM families f LEFT JOIN change_horizon h ON h.family = f.family
       WHERE f.revision - coalesce(h.revision, 0) > $1 ORDER BY f.family`,
      [keepChanges],
    );
    for (const c of candidates) {
      if (left <= 0) break;
      const cut = c.revision - keepChanges;
      const oldest = await this.tx.run<{ revision: number; time: number }>(
        'cloldest',
        `SELECT revision, time FROM change_log WHERE family = $1 AND revision <= $2 ORDER BY revision LIMIT $3`,
        [c.family, cut, left],
      );
      const last = pruneUpTo(oldest, cut, olderThan);
      if (last === undefined) continue;
      const deleted = await this.tx.run<{ n: number }>(
        'cldelete',
        `WITH d AS (DELETE FROM change_log WHERE family = $1 AND revision <= $2 RETURNING 1) SELECT count(*)::int8 AS n FROM d`,
        [c.family, last],
      );
      left -= deleted[0]?.n ?? 0;
      await this.tx.run(
        'clsethorizon',
        `INSERT INTO change_horizon (family, revision) VALUES ($1, $2)
         ON CONFLICT (family) DO UPDATE SET revision = GREATEST(change_horizon.revision, excluded.revision)`,
        [c.family, last],
      );
    }
    return limit - left;
  }

  async stats(): Promise<ChangeLogStats[]> {
    return this.tx.run<ChangeLogStats>(
      'clstats',
      `SELECT f.family, f.revision - coalesce(h.revision, 0) AS rows, coalesce(h.revision, 0) AS horizon
       FROM families f LEFT JOIN change_horizon h ON h.family = f.family ORDER BY f.family`,
      [],
    );
  }
}
