/**
 * The shared FIFO queues (docs/semantics.md §5's waiters, across instances) in
 * the step's transaction. A row counts while before its deadline and while
 * its instance is listening (its bus connection is in pg_stat_activity), so
 * a dead instance's waiters never block a route.
 */

import type { SharedWaiters, WaiterRow } from '../types';
import { BUS_APP_PREFIX } from './pg-connection';
import type { PgTx } from './pg-tx';

const WAITER_COLS = `family, route, request_id AS "requestId", instance, session_hash AS "sessionHash", digest,
  ttl_ms AS "ttlMs", max_lifetime_ms AS "maxLifetimeMs", metadata, deadline`;
/** A waiter counts while before its deadline and while its instance listens. */
const LIVE_WAITER = `deadline > $3 AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = '${BUS_APP_PREFIX}' || instance)`;

/** The shared FIFO queues, in the step's transaction. */
export class PgWaiters implements SharedWaiters {
  constructor(private readonly tx: PgTx) {}

  async enqueueWaiter(r: WaiterRow): Promise<void> {
    this.tx.queuedIn(r.family);
    await this.tx.run(
      'wins',
      `INSERT INTO waiters (family, route, request_id, instance, session_hash, digest, ttl_ms, max_lifetime_ms, metadata, deadline)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [r.family, r.route, r.requestId, r.instance, r.sessionHash, r.digest, r.ttlMs, r.maxLifetimeMs, r.metadata, r.deadline],
    );
  }
  async headWaiter(family: string, route: string, now: number): Promise<WaiterRow | undefined> {
    if (this.tx.noWaiters(family)) return undefined;
    for (;;) {
      const rows = await this.tx.run<WaiterRow & { live: boolean }>(
        'whead',
        `SELECT ${WAITER_COLS}, (${LIVE_WAITER}) AS live FROM waiters WHERE family = $1 AND route = $2 ORDER BY seq LIMIT 1`,
        [family, route, now],
      );
      const w = rows[0];
      if (!w) return undefined;
      if (w.live) {
        const { live: _, ...row } = w;
        return row;
      }
      await this.deleteWaiter(family, route, w.requestId);
    }
  }
  async deleteWaiter(family: string, route: string, requestId: string): Promise<boolean> {
    const rows = await this.tx.run('wdel', `DELETE FROM waiters WHERE family = $1 AND route = $2 AND request_id = $3 RETURNING 1 AS x`, [family, route, requestId]);
    return rows.length === 1;
  }
  async countWaiters(family: string, route: string, now: number): Promise<number> {
    if (this.tx.noWaiters(family)) return 0;
    const r = await this.tx.run<{ n: number }>('wcount', `SELECT count(*)::int8 AS n FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER}`, [family, route, now]);
    return r[0]?.n ?? 0;
  }
  async countWaitersOf(family: string, routes: readonly string[], now: number): Promise<Map<string, number>> {
    if (this.tx.noWaiters(family)) return new Map();
    const r = await this.tx.run<{ route: string; n: number }>(
      'wcounts',
      `SELECT route, count(*)::int8 AS n FROM waiters WHERE family = $1 AND route = ANY($2::text[]) AND ${LIVE_WAITER} GROUP BY route`,
      [family, routes, now],
    );
    return new Map(r.map((x) => [x.route, x.n]));
  }
  async findWaiter(family: string, route: string, requestId: string, now: number): Promise<WaiterRow | undefined> {
    if (this.tx.noWaiters(family)) return undefined;
    const r = await this.tx.run<WaiterRow>('wfind', `SELECT ${WAITER_COLS} FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER} AND request_id = $4`, [family, route, now, requestId]);
    return r[0];
  }
  async sessionWaiting(family: string, route: string, sessionHash: string, now: number): Promise<boolean> {
    if (this.tx.noWaiters(family)) return false;
    const r = await this.tx.run('wses', `SELECT 1 AS x FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER} AND session_hash = $4 LIMIT 1`, [family, route, now, sessionHash]);
    return r.length > 0;
  }
  async takeSessionWaiters(sessionHash: string): Promise<WaiterRow[]> {
    return this.tx.run('wtake', `DELETE FROM waiters WHERE session_hash = $1 RETURNING ${WAITER_COLS}`, [sessionHash]);
  }
  async deleteInstanceWaiters(instance: string): Promise<void> {
    await this.tx.run('wdeli', `DELETE FROM waiters WHERE instance = $1`, [instance]);
  }
}
