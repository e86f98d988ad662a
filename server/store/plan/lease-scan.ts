/**
 * The LIST scan plan (docs/design.md "LIST"), written once for every
 * backend: which index range a selector reads, how it is read in chunks
 * along route order, and the SQL of one chunk in each dialect.
 *
 * | selector (realm, area, resource literal?) | index | range |
 * |---|---|---|
 * | realm, area (resource `*`) | primary key (family, route) | routes under `lease://realm/area/` |
 * | realm, resource (area `*`) | leases_by_resource | that resource, routes under `lease://realm/` |
 * | realm only | primary key | routes under `lease://realm/` |
 * | resource (realm `*`) | leases_by_resource | that resource, every route |
 * | area only | leases_by_area | that area, every route |
 * | none (`**`) | primary key | every route |
 *
 * An exact selector (all three literal) is not scanned: the engine reads its
 * one route. Rows of the range that the index does not decide (a segment it
 * does not hold, expiry, filters) are tested per examined row
 * (`scanAccepts`), and each examined row counts against the budget.
 */

import { scanAccepts, type LeaseRow, type LeaseScan, type LeaseScanResult } from '../types';
import { columns, LEASE_FIELDS, Params, type Dialect } from './dialect';

export interface LeaseScanPlan {
  index: 'primary' | 'resource' | 'area';
  /** The index's leading key after the family (the resource or the area), for the secondary indexes. */
  key?: string;
  /** Routes strictly between `from` and `to`. */
  from: string;
  to: string;
}

/** Above every route: all routes start `lease://`, and ';' follows ':'. */
const ROUTES_END = 'lease;';

/** The least string above every string that starts with `prefix` (routes are ASCII; the prefix ends in '/'). */
export function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

export function planLeaseScan(scan: LeaseScan): LeaseScanPlan {
  const [realm, area, resource] = scan.triple;
  const after = scan.after ?? '';
  // `route > from` would skip the prefix itself, which is never a route (routes have a resource).
  const under = (prefix: string) => ({ from: after < prefix ? prefix : after, to: prefixEnd(prefix) });
  if (realm !== null && area !== null) return { index: 'primary', ...under(`lease://${realm}/${area}/`) };
  if (realm !== null && resource !== null) return { index: 'resource', key: resource, ...under(`lease://${realm}/`) };
  if (realm !== null) return { index: 'primary', ...under(`lease://${realm}/`) };
  if (resource !== null) return { index: 'resource', key: resource, from: after, to: ROUTES_END };
  if (area !== null) return { index: 'area', key: area, from: after, to: ROUTES_END };
  return { index: 'primary', from: after, to: ROUTES_END };
}

const INDEX = { primary: undefined, resource: ['leases_by_resource', 'resource'], area: ['leases_by_area', 'area'] } as const;

/** One chunk's SQL: rows of the plan's range after `position`, in route order, at most `n`. */
export function renderLeaseChunk(d: Dialect, plan: LeaseScanPlan, family: string, position: string, n: number): { sql: string; params: unknown[] } {
  const p = new Params(d);
  const secondary = INDEX[plan.index];
  const where = [`family = ${p.bind(family)}`];
  if (secondary) where.push(`${secondary[1]} = ${p.bind(plan.key)}`);
  where.push(`route > ${p.bind(position)}`, `route < ${p.bind(plan.to)}`);
  const sql = `SELECT ${columns(d, LEASE_FIELDS)} FROM leases${secondary ? d.indexedBy(secondary[0]) : ''} WHERE ${where.join(' AND ')} ORDER BY route LIMIT ${p.bind(n)}`;
  return { sql, params: p.values };
}

/** Rows read per chunk at most; the first chunk is the page's size, later ones grow fourfold. */
const SCAN_CHUNK = 500;

/**
 * Run a plan: read chunks along the range until `want` rows are accepted,
 * `budget` rows are examined, or the range ends. A dense page is one read
 * of `want` rows.
 */
export async function runLeaseScan(
  scan: LeaseScan,
  plan: LeaseScanPlan,
  read: (position: string, n: number) => LeaseRow[] | Promise<LeaseRow[]>,
): Promise<LeaseScanResult> {
  const rows: LeaseRow[] = [];
  let examined = 0;
  let lastExamined: string | null = null;
  let position = plan.from;
  let size = Math.max(1, Math.min(SCAN_CHUNK, scan.want));
  for (;;) {
    const n = Math.min(size, scan.budget - examined);
    if (n <= 0) return { rows, examined, lastExamined, exhausted: false };
    const got = await read(position, n);
    for (const row of got) {
      examined++;
      lastExamined = row.route;
      if (scanAccepts(scan, row)) rows.push(row);
      if (rows.length >= scan.want || examined >= scan.budget) return { rows, examined, lastExamined, exhausted: false };
    }
    if (got.length < n) return { rows, examined, lastExamined, exhausted: true };
    position = got[got.length - 1]!.route;
    size = Math.min(SCAN_CHUNK, size * 4);
  }
}
