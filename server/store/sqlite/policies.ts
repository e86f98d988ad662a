/** Policies and lock-delay deadlines on the embedded store (docs/policies.md). */

import type Database from 'better-sqlite3';
import { columns, POLICY_FIELDS, sqlite } from '../plan/dialect';
import type { LockDelayRow, PolicyRow, PolicyTx } from '../types';

const POLICY_COLS = columns(sqlite, POLICY_FIELDS);

export const POLICY_MIGRATION = `
  CREATE TABLE policies (
    family TEXT NOT NULL,
    selector TEXT NOT NULL,
    ttl_min_ms INTEGER,
    ttl_max_ms INTEGER,
    ttl_default_ms INTEGER,
    max_lifetime_ms INTEGER,
    lock_delay_ms INTEGER,
    max_waiters INTEGER,
    updated_at INTEGER NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (family, selector)
  ) WITHOUT ROWID;
  CREATE TABLE lock_delays (
    family TEXT NOT NULL,
    route TEXT NOT NULL,
    until INTEGER NOT NULL,
    PRIMARY KEY (family, route)
  ) WITHOUT ROWID;
  CREATE INDEX lock_delays_due ON lock_delays (until);
`;

export class SqlitePolicies implements PolicyTx {
  private readonly s;

  constructor(db: Database.Database) {
    const p = (sql: string) => db.prepare(sql);
    this.s = {
      list: p(`SELECT ${POLICY_COLS} FROM policies WHERE family = ? ORDER BY selector`),
      count: p(`SELECT count(*) FROM policies WHERE family = ?`).pluck(),
      put: p(
        `INSERT OR REPLACE INTO policies (family, selector, ttl_min_ms, ttl_max_ms, ttl_default_ms, max_lifetime_ms, lock_delay_ms, max_waiters, updated_at, updated_by)
         VALUES (@family, @selector, @ttlMinMs, @ttlMaxMs, @ttlDefaultMs, @maxLifetimeMs, @lockDelayMs, @maxWaiters, @updatedAt, @updatedBy)`,
      ),
      del: p(`DELETE FROM policies WHERE family = ? AND selector = ?`),
      getDelay: p(`SELECT until FROM lock_delays WHERE family = ? AND route = ?`).pluck(),
      setDelay: p(`INSERT OR REPLACE INTO lock_delays (family, route, until) VALUES (@family, @route, @until)`),
      delDelay: p(`DELETE FROM lock_delays WHERE family = ? AND route = ? AND until = ?`),
      dueDelays: p(`SELECT family, route, until FROM lock_delays WHERE until <= ? AND family = ? ORDER BY until LIMIT ?`),
      dueFamilies: p(`SELECT DISTINCT family FROM lock_delays WHERE until <= ? ORDER BY family LIMIT ?`).pluck(),
      countDelays: p(`SELECT count(*) FROM lock_delays WHERE until > ?`).pluck(),
      scanDelays: p(`SELECT family, route, until FROM lock_delays WHERE family = ? AND route > ? AND route < ? ORDER BY route LIMIT ?`),
    };
  }

  async listPolicies(family: string): Promise<PolicyRow[]> {
    return this.s.list.all(family) as PolicyRow[];
  }
  async countPolicies(family: string): Promise<number> {
    return this.s.count.get(family) as number;
  }
  async putPolicy(row: PolicyRow): Promise<void> {
    this.s.put.run(row);
  }
  async deletePolicy(family: string, selector: string): Promise<boolean> {
    return this.s.del.run(family, selector).changes > 0;
  }
  async getLockDelay(family: string, route: string): Promise<number | undefined> {
    return this.s.getDelay.get(family, route) as number | undefined;
  }
  async setLockDelay(row: LockDelayRow): Promise<void> {
    this.s.setDelay.run(row);
  }
  async deleteLockDelay(family: string, route: string, until: number): Promise<boolean> {
    return this.s.delDelay.run(family, route, until).changes > 0;
  }
  async dueLockDelays(family: string, now: number, limit: number): Promise<LockDelayRow[]> {
    return this.s.dueDelays.all(now, family, limit) as LockDelayRow[];
  }
  async dueDelayFamilies(now: number, limit: number): Promise<string[]> {
    return this.s.dueFamilies.all(now, limit) as string[];
  }
  async countLockDelays(now: number): Promise<number> {
    return this.s.countDelays.get(now) as number;
  }
  async scanLockDelays(family: string, after: string, before: string, limit: number): Promise<LockDelayRow[]> {
    return this.s.scanDelays.all(family, after, before, limit) as LockDelayRow[];
  }
}
