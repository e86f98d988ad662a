/**
 * The audit scan plan (docs/design.md "Audit"), written once for every
 * backend: newest first (or, for one exact route, oldest first) over the
 * narrowest index:
 *
 * | query | index | range | filtered per examined row |
 * |---|---|---|---|
 * | an exact route | audit_by_route | family, route, time window, keyset | event type |
 * | a rare event type | audit_rare | family, type, time window, keyset | selector |
 * | anything else | audit_by_time | family, time window, keyset, **at most `budget` rows** | selector, event type, routeless |
 *
 * A route with a wildcard (a policy event's: its selector) is matched by
 * the same selector string only (or by a query for every route): `*` is
 * not a route segment, so the segment tests must not read it as one.
 *
 * Only the last is bounded: it examines at most `budget` events, and when
 * its page comes back short, one more read (`edge`) says whether the budget
 * or the range ended it, and where to resume.
 */

import { RARE_AUDIT_TYPES, type AuditScan } from '../types';
import { AUDIT_FIELDS, columns, Params, type Dialect } from './dialect';

interface AuditScanPlan {
  index: 'audit_by_route' | 'audit_rare' | 'audit_by_time';
  /** Oldest first (one exact route only). */
  asc: boolean;
  /** Examine at most `scan.budget` events of the range, then filter. */
  bounded: boolean;
}

export function planAuditScan(scan: AuditScan): AuditScanPlan {
  const [realm, area, resource] = scan.triple;
  const exact = realm !== null && area !== null && resource !== null;
  const rare = !exact && scan.eventType !== undefined && RARE_AUDIT_TYPES.has(scan.eventType);
  return {
    index: exact ? 'audit_by_route' : rare ? 'audit_rare' : 'audit_by_time',
    asc: exact && scan.oldestFirst === true,
    bounded: !exact && !rare,
  };
}

interface RenderedAuditScan {
  sql: string;
  params: unknown[];
  /** For a bounded plan: the (time, seq) of the last event the budget reaches, if any (`LIMIT 1 OFFSET budget - 1`). */
  edge?: { sql: string; params: unknown[] };
}

export function renderAuditScan(d: Dialect, scan: AuditScan, plan: AuditScanPlan): RenderedAuditScan {
  const [realm, area, resource] = scan.triple;
  const all = realm === null && area === null && resource === null;
  // The index range, rendered twice (the page, and the edge read) with their own parameters.
  const range = (p: Params): string[] => {
    const r = [`family = ${p.bind(scan.family)}`];
    if (plan.index === 'audit_by_route') r.push(`route = ${p.bind(`lease://${realm}/${area}/${resource}`)}`);
    if (plan.index === 'audit_rare') r.push(d.isTrue('rare'), `event_type = ${p.bind(scan.eventType)}`);
    if (scan.since !== undefined) r.push(`time >= ${p.bind(scan.since)}`);
    if (scan.until !== undefined) r.push(`time < ${p.bind(scan.until)}`);
    if (scan.before !== null) r.push(`(time, seq) ${plan.asc ? '>' : '<'} (${p.bind(scan.before[0])}, ${p.bind(scan.before[1])})`);
    return r;
  };
  const filter = (p: Params): string[] => {
    const f: string[] = [];
    if (!all) {
      const segments = d.routeMatches(scan.triple, p.bind);
      if (scan.selector === undefined) f.push(...segments);
      // A policy event's route is its selector (docs/policies.md): matched by that exact string only, never by its segments.
      else f.push(`((${[...segments, `route NOT LIKE '%*%'`].join(' AND ')}) OR route = ${p.bind(scan.selector)})`);
    } else if (!scan.routeless) f.push('route IS NOT NULL');
    if (scan.eventType !== undefined && plan.index !== 'audit_rare') f.push(`event_type = ${p.bind(scan.eventType)}`);
    return f;
  };
  const order = plan.asc ? 'ORDER BY time, seq' : 'ORDER BY time DESC, seq DESC';
  const from = `audit${d.indexedBy(plan.index)}`;
  const cols = columns(d, AUDIT_FIELDS);
  const p = new Params(d);
  if (!plan.bounded) {
    const where = [...range(p), ...filter(p)].join(' AND ');
    return { sql: `SELECT ${cols} FROM ${from} WHERE ${where} ${order} LIMIT ${p.bind(scan.limit)}`, params: p.values };
  }
  const inner = `SELECT * FROM ${from} WHERE ${range(p).join(' AND ')} ${order} LIMIT ${p.bind(scan.budget)}`;
  const f = filter(p);
  const sql = `SELECT ${cols} FROM (${inner}) a ${f.length ? `WHERE ${f.join(' AND ')}` : ''} ${order} LIMIT ${p.bind(scan.limit)}`;
  const e = new Params(d);
  const edge = `SELECT time, seq FROM ${from} WHERE ${range(e).join(' AND ')} ${order} LIMIT 1 OFFSET ${e.bind(scan.budget - 1)}`;
  return { sql, params: p.values, edge: { sql: edge, params: e.values } };
}
