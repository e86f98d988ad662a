/** Policies and lock-delay deadlines on PostgreSQL, in the step's transaction (docs/policies.md). */

import { columns, POLICY_FIELDS, postgres } from '../plan/dialect';
import type { LockDelayRow, PolicyRow, PolicyTx } from '../types';
import type { PgRun as PgTx } from './pg-run';

const POLICY_COLS = columns(postgres, POLICY_FIELDS);

export const PG_POLICY_MIGRATION = `
  CREATE TABLE policies (
    family text COLLATE "C" NOT NULL,
    selector text COLLATE "C" NOT NULL,
    ttl_min_ms bigint,
    ttl_max_ms bigint,
    ttl_default_ms bigint,
    max_lifetime_ms bigint,
    lock_delay_ms bigint,
    max_waiters bigint,
    updated_at bigint NOT NULL,
    updated_by text NOT NULL,
    PRIMARY KEY (family, selector)
  );
  CREATE TABLE lock_delays (
    family text COLLATE "C" NOT NULL,
    route text COLLATE "C" NOT NULL,
    until bigint NOT NULL,
    PRIMARY KEY (family, route)
  );
  CREATE INDEX lock_delays_due ON lock_delays (until);
`;

export class PgPolicies implements PolicyTx {
  constructor(private readonly tx: PgTx) {}

  async listPolicies(family: string): Promise<PolicyRow[]> {
    return this.tx.run<PolicyRow>('plist', `SELECT ${POLICY_COLS} FROM policies WHERE family = $1 ORDER BY selector`, [family]);
  }
  async countPolicies(family: string): Promise<number> {
    const rows = await this.tx.run<{ n: number }>('pcount', `SELECT count(*)::int8 AS n FROM policies WHERE family = $1`, [family]);
    return rows[0]?.n ?? 0;
  }
  async putPolicy(r: PolicyRow): Promise<void> {
    await this.tx.run(
      'pput',
      `INSERT INTO policies (family, selector, ttl_min_ms, ttl_max_ms, ttl_default_ms, max_lifetime_ms, lock_delay_ms, max_waiters, updated_at, updated_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (family, selector) DO UPDATE SET ttl_min_ms = excluded.ttl_min_ms, ttl_max_ms = excluded.ttl_max_ms,
         ttl_default_ms = excluded.ttl_default_ms, max_lifetime_ms = excluded.max_lifetime_ms, lock_delay_ms = excluded.lock_delay_ms,
         max_waiters = excluded.max_waiters, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      [r.family, r.selector, r.ttlMinMs, r.ttlMaxMs, r.ttlDefaultMs, r.maxLifetimeMs, r.lockDelayMs, r.maxWaiters, r.updatedAt, r.updatedBy],
    );
  }
  async deletePolicy(family: string, selector: string): Promise<boolean> {
    return (await this.tx.run('pdel', `DELETE FROM policies WHERE family = $1 AND selector = $2 RETURNING 1`, [family, selector])).length > 0;
  }
  async getLockDelay(family: string, route: string): Promise<number | undefined> {
    const rows = await this.tx.run<{ until: number }>('dget', `SELECT until FROM lock_delays WHERE family = $1 AND route = $2`, [family, route]);
    return rows[0]?.until;
  }
  async setLockDelay(r: LockDelayRow): Promise<void> {
    await this.tx.run(
      'dset',
      `INSERT INTO lock_delays (family, route, until) VALUES ($1, $2, $3) ON CONFLICT (family, route) DO UPDATE SET until = excluded.until`,
      [r.family, r.route, r.until],
    );
  }
  async deleteLockDelay(family: string, route: string, until: number): Promise<boolean> {
    const rows = await this.tx.run('ddel', `DELETE FROM lock_delays WHERE family = $1 AND route = $2 AND until = $3 RETURNING 1`, [family, route, until]);
    return rows.length > 0;
  }
  async dueLockDelays(family: string, now: number, limit: number): Promise<LockDelayRow[]> {
    return this.tx.run<LockDelayRow>('ddue', `SELECT family, route, until FROM lock_delays WHERE until <= $1 AND family = $2 ORDER BY until LIMIT $3`, [now, family, limit]);
  }
  async dueDelayFamilies(now: number, limit: number): Promise<string[]> {
    const rows = await this.tx.run<{ family: string }>('dfam', `SELECT DISTINCT family FROM lock_delays WHERE until <= $1 ORDER BY family LIMIT $2`, [now, limit]);
    return rows.map((r) => r.family);
  }
  async countLockDelays(now: number): Promise<number> {
    const rows = await this.tx.run<{ n: number }>('dcount', `SELECT count(*)::int8 AS n FROM lock_delays WHERE until > $1`, [now]);
    return rows[0]?.n ?? 0;
  }
  async scanLockDelays(family: string, after: string, before: string, limit: number): Promise<LockDelayRow[]> {
    return this.tx.run<LockDelayRow>(
      'dscan',
      `SELECT family, route, until FROM lock_delays WHERE family = $1 AND route > $2 AND route < $3 ORDER BY route LIMIT $4`,
      [family, after, before, limit],
    );
  }
}
