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

/** Leases or sessions due at `now`, earliest first, of every family (params: now, limit) or one (params: now, family, limit). */
export function dueSql(d: Dialect, table: 'leases' | 'sessions', oneFamily: boolean): string {
  const cols = columns(d, table === 'leases' ? LEASE_FIELDS : SESSION_FIELDS);
  const from = `${table}${d.indexedBy(`${table}_expiry`)}`;
  return oneFamily
    ? `SELECT ${cols} FROM ${from} WHERE expires_at <= ${p(d, 1)} AND family = ${p(d, 2)} ORDER BY expires_at LIMIT ${p(d, 3)}`
    : `SELECT ${cols} FROM ${from} WHERE expires_at <= ${p(d, 1)} ORDER BY expires_at LIMIT ${p(d, 2)}`;
}

/**
 * A family's backlog, for readiness (params: now, family, cap, family, cap):
 * its due leases and the leases of its ending sessions, each counted up to
 * `cap`, so the count costs at most that however large the backlog.
 */
export function backlogSql(d: Dialect): string {
  return `SELECT (SELECT count(*) FROM (SELECT 1 FROM leases${d.indexedBy('leases_expiry')} WHERE expires_at <= ${p(d, 1)} AND family = ${p(d, 2)} LIMIT ${p(d, 3)}) due)
     + (SELECT count(*) FROM (SELECT 1 FROM leases WHERE session_hash IN (SELECT id_hash FROM sessions WHERE family = ${p(d, 4)} AND ending IS NOT NULL) LIMIT ${p(d, 5)}) ending) AS n`;
}

/** Families with a lease or session due (params: now, now, limit). */
export function dueFamiliesSql(d: Dialect): string {
  return `SELECT family FROM (SELECT family FROM leases${d.indexedBy('leases_expiry')} WHERE expires_at <= ${p(d, 1)}
     UNION SELECT family FROM sessions${d.indexedBy('sessions_expiry')} WHERE expires_at <= ${p(d, 2)}) f ORDER BY family LIMIT ${p(d, 3)}`;
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
