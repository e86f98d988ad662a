/**
 * The shared FIFO queues (docs/semantics.md §5's waiters, across instances) in
 * the step's transaction. A row counts while before its deadline and while
 * its instance is listening (its bus connection is in pg_stat_activity), so
 * a dead instance's waiters never block a route. A parked place (its wait
 * ended without a grant; docs/design.md "Queue tickets") has no client, so
 * it counts until its deadline whichever instance parked it.
 */

import type { SharedWaiters, WaiterRow } from '../types';
import { BUS_APP_PREFIX } from './pg-connection';
import type { PgWaiterTx as PgTx } from './pg-run';

const WAITER_COLS = `family, route, request_id AS "requestId", instance, session_hash AS "sessionHash", digest,
  ttl_ms AS "ttlMs", max_lifetime_ms AS "maxLifetimeMs", metadata, deadline, place, parked`;
/** A waiter counts while before its deadline and while its instance listens (a parked place: while before its deadline). */
const LIVE_WAITER = `deadline > $3 AND (parked OR EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = '${BUS_APP_PREFIX}' || instance))`;

/** The shared FIFO queues, in the step's transaction. */
export class PgWaiters implements SharedWaiters {
  constructor(private readonly tx: PgTx) {}

  async enqueueWaiter(r: WaiterRow): Promise<void> {
    this.tx.queuedIn(r.family);
    await this.tx.run(
      'wins',
      `INSERT INTO waiters (family, route, request_id, instance, session_hash, digest, ttl_ms, max_lifetime_ms, metadata, deadline, place)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [r.family, r.route, r.requestId, r.instance, r.sessionHash, r.digest, r.ttlMs, r.maxLifetimeMs, r.metadata, r.deadline, r.place],
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
    const r = await this.tx.run<WaiterRow>('wfind', `SELECT ${WAITER_COLS} FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER} AND request_id = $4 AND NOT parked`, [family, route, now, requestId]);
    return r[0];
  }
  async sessionWaiting(family: string, route: string, sessionHash: string, now: number): Promise<boolean> {
    if (this.tx.noWaiters(family)) return false;
    const r = await this.tx.run('wses', `SELECT 1 AS x FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER} AND session_hash = $4 LIMIT 1`, [family, route, now, sessionHash]);
    return r.length > 0;
  }
  async takeSessionWaiters(sessionHash: string): Promise<WaiterRow[]> {
    return this.tx.run('wtake', `DELETE FROM waiters WHERE session_hash = $1 AND NOT parked RETURNING ${WAITER_COLS}`, [sessionHash]);
  }
  async deleteInstanceWaiters(instance: string): Promise<void> {
    await this.tx.run('wdeli', `DELETE FROM waiters WHERE instance = $1 AND NOT parked`, [instance]);
  }
  async parkWaiter(family: string, route: string, requestId: string, until: number): Promise<boolean> {
    const rows = await this.tx.run('wpark', `UPDATE waiters SET parked = true, deadline = $4 WHERE family = $1 AND route = $2 AND request_id = $3 AND NOT parked RETURNING 1 AS x`, [family, route, requestId, until]);
    return rows.length === 1;
  }
  async findPlace(family: string, route: string, place: string, now: number): Promise<WaiterRow | undefined> {
    if (this.tx.noWaiters(family)) return undefined;
    const r = await this.tx.run<WaiterRow>('wplace', `SELECT ${WAITER_COLS} FROM waiters WHERE family = $1 AND route = $2 AND ${LIVE_WAITER} AND place = $4`, [family, route, now, place]);
    return r[0];
  }
  async resumePlace(r: WaiterRow): Promise<boolean> {
    const rows = await this.tx.run(
      'wresume',
      `UPDATE waiters SET parked = false, request_id = $4, instance = $5, digest = $6, ttl_ms = $7, max_lifetime_ms = $8, metadata = $9, deadline = $10
       WHERE family = $1 AND route = $2 AND place = $3 AND parked RETURNING 1 AS x`,
      [r.family, r.route, r.place, r.requestId, r.instance, r.digest, r.ttlMs, r.maxLifetimeMs, r.metadata, r.deadline],
    );
    return rows.length === 1;
  }
  async reparkPlace(family: string, route: string, place: string, until: number): Promise<boolean> {
    const rows = await this.tx.run('wrepark', `UPDATE waiters SET deadline = $4 WHERE family = $1 AND route = $2 AND place = $3 AND parked RETURNING 1 AS x`, [family, route, place, until]);
    return rows.length === 1;
  }
  async deletePlace(family: string, route: string, place: string): Promise<boolean> {
    const rows = await this.tx.run('wdelp', `DELETE FROM waiters WHERE family = $1 AND route = $2 AND place = $3 RETURNING 1 AS x`, [family, route, place]);
    return rows.length === 1;
  }
  async deleteSessionPlace(family: string, route: string, sessionHash: string): Promise<boolean> {
    const rows = await this.tx.run('wdelsp', `DELETE FROM waiters WHERE family = $1 AND route = $2 AND session_hash = $3 AND parked RETURNING 1 AS x`, [family, route, sessionHash]);
    return rows.length > 0;
  }
  async dueParked(family: string, now: number, limit: number): Promise<Array<{ route: string; place: string }>> {
    if (this.tx.noWaiters(family)) return [];
    return this.tx.run('wdue', `SELECT route, place FROM waiters WHERE parked AND deadline <= $2 AND family = $1 ORDER BY deadline LIMIT $3`, [family, now, limit]);
  }
  async dueParkedFamilies(now: number, limit: number): Promise<string[]> {
    const rows = await this.tx.run<{ family: string }>('wduef', `SELECT DISTINCT family FROM (SELECT family FROM waiters WHERE parked AND deadline <= $1 ORDER BY deadline LIMIT $2) d`, [now, limit]);
    return rows.map((r) => r.family);
  }
  async lapseSessionPlaces(sessionHash: string, now: number): Promise<number> {
    const rows = await this.tx.run('wlapse', `UPDATE waiters SET deadline = $2 WHERE session_hash = $1 AND parked AND deadline > $2 RETURNING 1 AS x`, [sessionHash, now]);
    return rows.length;
  }
}
