/**
 * Due work and pruning, written once (docs/design.md "Expiry"): due leases
 * and sessions are read through their expiry indexes only, so their cost
 * is what is due, never what is held (SQLite must be told the index: its
 * planner would answer `family = ?` through the family's primary key and
 * read every held lease of the family); the audit log is pruned from its
 * low end.
 */

import { columns, LEASE_FIELDS, SESSION_FIELDS, type Dialect } from './dialect';

function p(d: Dialect, n: number): string {
  return d.param(n);
}

/** The sweep horizon's reads use a parameter twice, and the floor out of order (`Dialect.numbered`). */
function n(d: Dialect, i: number): string {
  return d.numbered(i);
}

/**
 * How far past `limit` a due-lease read may walk the sweep horizon: rows
 * whose `sweep_at` passed but that were renewed since are stepped over, at
 * most this many, until the re-arm (`REARM_SQL`, `SQLITE_REARM_SQL`) moves
 * them on. The read's cost stays bounded whatever the lag.
 */
export const SWEEP_WALK = 4096;

/**
 * How far the due families' read walks the sweep horizon: past a backlog of
 * 10,000 (CONTRACT §19's bound for publishing each expiry within 1 s), so
 * no family's due lease hides behind another family's backlog under it.
 */
export const FAMILIES_WALK = 16_384;

/**
 * `what` of the due leases (`expires_at` at most `now`), of one family when
 * `family` is given, earliest horizon first, at most `limit` (SQL
 * expressions), through the sweep horizon (`leases_sweep`, docs/design.md
 * "The sweep horizon"): the index walk starts at the floor and stops after
 * `limit` plus SWEEP_WALK rows.
 */
function dueLeaseRows(d: Dialect, what: string, now: string, family: string | undefined, limit: string, floor: string): string {
  const ofFamily = family === undefined ? '' : ` AND family = ${family}`;
  return `SELECT ${what} FROM (SELECT * FROM leases${d.indexedBy('leases_sweep')} WHERE sweep_at >= ${floor} AND sweep_at <= ${now}${ofFamily} ORDER BY sweep_at LIMIT ${limit} + ${SWEEP_WALK}) w WHERE expires_at <= ${now} ORDER BY sweep_at LIMIT ${limit}`;
}

/**
 * Leases or sessions due at `now`, earliest first, of every family (params:
 * now, limit) or one (params: now, family, limit). Leases take one more,
 * last: the sweep horizon's floor (`SweepFloor`).
 */
export function dueSql(d: Dialect, table: 'leases' | 'sessions', oneFamily: boolean): string {
  const cols = columns(d, table === 'leases' ? LEASE_FIELDS : SESSION_FIELDS);
  if (table === 'leases') return oneFamily ? dueLeaseRows(d, cols, n(d, 1), n(d, 2), n(d, 3), n(d, 4)) : dueLeaseRows(d, cols, n(d, 1), undefined, n(d, 2), n(d, 3));
  const from = `${table}${d.indexedBy(`${table}_expiry`)}`;
  return oneFamily
    ? `SELECT ${cols} FROM ${from} WHERE expires_at <= ${p(d, 1)} AND family = ${p(d, 2)} ORDER BY expires_at LIMIT ${p(d, 3)}`
    : `SELECT ${cols} FROM ${from} WHERE expires_at <= ${p(d, 1)} ORDER BY expires_at LIMIT ${p(d, 2)}`;
}

/**
 * A family's backlog, for readiness (params: now, family, cap, family, cap,
 * and the sweep horizon's floor): its due leases and the leases
 * of its ending sessions, each counted up to `cap`, so the count costs at
 * most that however large the backlog.
 */
export function backlogSql(d: Dialect): string {
  return `SELECT (SELECT count(*) FROM (${dueLeaseRows(d, '1', n(d, 1), n(d, 2), n(d, 3), n(d, 6))}) due)
     + (SELECT count(*) FROM (SELECT 1 FROM leases WHERE session_hash IN (SELECT id_hash FROM sessions WHERE family = ${n(d, 4)} AND ending IS NOT NULL) LIMIT ${n(d, 5)}) ending) AS n`;
}

/** Families with a lease or session due (params: now, now, limit, and the sweep horizon's floor). */
export function dueFamiliesSql(d: Dialect): string {
  const leases = `SELECT family FROM (SELECT family, expires_at FROM leases${d.indexedBy('leases_sweep')} WHERE sweep_at >= ${n(d, 4)} AND sweep_at <= ${n(d, 1)} ORDER BY sweep_at LIMIT ${FAMILIES_WALK}) w WHERE expires_at <= ${n(d, 1)}`;
  return `SELECT family FROM (${leases}
     UNION SELECT family FROM sessions${d.indexedBy('sessions_expiry')} WHERE expires_at <= ${n(d, 2)}) f ORDER BY family LIMIT ${n(d, 3)}`;
}

/**
 * The sweep horizon's re-arm (PostgreSQL, params: now, limit, floor): among
 * the first `limit` leases from the floor up, those whose `sweep_at` has
 * passed but that are not due (renewed since) get `sweep_at = expires_at`.
 * The walk has no upper bound on purpose: with one (`sweep_at <= now`),
 * PostgreSQL estimated few rows and read them by a bitmap scan, which
 * visits every dead row version in the range on every call (an index scan
 * marks them dead once, then skips them): 56 ms a call in a fleet. Never
 * waits for a row: one a step holds is skipped (SKIP LOCKED) and re-armed
 * on a later sweep, so the statement cannot deadlock with a family's batch.
 * In the same round trip, `first`: the lowest horizon at or above the floor
 * before the re-arm (one snapshot for the whole statement), where the next
 * floor may go (`SweepFloor`); the re-arm only raises horizons, so the floor
 * holds even if the step rolls back. Answers one row: `first` (null: no
 * lease) and `n`, the leases moved on.
 */
export const REARM_SQL = `WITH first AS (SELECT sweep_at FROM leases WHERE sweep_at >= $3 ORDER BY sweep_at LIMIT 1),
  moved AS (UPDATE leases SET sweep_at = expires_at WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM leases WHERE ctid = ANY (ARRAY(SELECT ctid FROM leases WHERE sweep_at >= $3 ORDER BY sweep_at LIMIT $2))
      AND sweep_at <= $1 AND expires_at > $1 FOR NO KEY UPDATE SKIP LOCKED)) RETURNING 1)
  SELECT (SELECT sweep_at FROM first) AS "first", (SELECT count(*) FROM moved)::int8 AS "n"`;

/**
 * The sweep horizon's re-arm on SQLite (params: now, limit, now): among the
 * first `limit` leases whose `sweep_at` has passed, those not due (renewed
 * since) get `sweep_at = expires_at`; `changes` counts them. SQLite removes
 * an index entry as its row changes and has one writer, so the walk has no
 * dead entries to step over and no row to skip: it starts at the index's
 * low end (the store's floor stays 0).
 */
export const SQLITE_REARM_SQL = `UPDATE leases SET sweep_at = expires_at
  WHERE (family, route) IN (SELECT family, route FROM leases INDEXED BY leases_sweep WHERE sweep_at <= ? ORDER BY sweep_at LIMIT ?) AND expires_at > ?`;

/**
 * Where the walks of the sweep horizon start (PostgreSQL; docs/design.md
 * "The sweep horizon"). Every re-arm and every row a sweep ends
 * leaves a dead index entry at the low end of `leases_sweep` until vacuum
 * comes, and a walk from the start reads them all: in a fleet, hundreds of
 * thousands a minute. No live lease is ever written with a horizon below its
 * step's `now`, and a step ends within the store's step limit (4 s), so
 * once a walk saw its lowest live horizon, nothing will ever sit below
 * that, less the limit: the floor, kept per store in memory, only rising.
 * The walks start there. Every RESET_MS it starts again at 0 (one
 * walk over the dead entries), so that even a row written against the rule
 * (a commit that landed long after its step gave up) is found.
 */
export class SweepFloor {
  /** The walks' start: no live lease has a horizon below it. */
  at = 0;
  private since = 0;
  static readonly MARGIN_MS = 10_000;
  static readonly RESET_MS = 60_000;

  /** After a re-arm at `now` (store time) found `first`, the lowest live horizon (undefined: none). */
  advance(now: number, first: number | undefined): void {
    if (now - this.since >= SweepFloor.RESET_MS) {
      this.since = now;
      this.at = 0;
      return;
    }
    this.at = Math.max(this.at, Math.min(first ?? now, now) - SweepFloor.MARGIN_MS);
  }
}

/** The statements of audit pruning (`Tx.pruneAudit`, `Tx.pruneAuditFamily`); the decisions are `prunePrefix` and `familyExcess`. */
export function auditPruneSql(d: Dialect) {
  return {
    /** The newest seq (none: null). */
    maxSeq: `SELECT max(seq) AS seq FROM audit`,
    /** The oldest events, ascending seq (params: limit). */
    oldest: `SELECT seq, time, family FROM audit ORDER BY seq LIMIT ${p(d, 1)}`,
    /** Delete every event up to a seq (params: seq). */
    deleteThrough: `DELETE FROM audit WHERE seq <= ${p(d, 1)}`,
    /** Delete a family's oldest events by time (params: family, how many). */
    deleteFamilyOldest: `DELETE FROM audit WHERE seq IN (SELECT seq FROM audit${d.indexedBy('audit_by_time')} WHERE family = ${p(d, 1)} ORDER BY time, seq LIMIT ${p(d, 2)})`,
  };
}

/** How many of a family's oldest events a per-family prune deletes: those above `keepNewest` (at least one stays), at most `limit`. */
export function familyExcess(count: number, keepNewest: number, limit: number): number {
  return Math.max(0, Math.min(limit, count - Math.max(1, keepNewest)));
}
