/**
 * Inventory (docs/semantics.md §7): LIST of held, unexpired leases matching a
 * selector, in route byte order, with keyset pagination and a per-page budget
 * of examined routes, so a sparse selector always makes progress.
 */

import type { ParsedSelector } from '@/lib/selector';
import { millis, type Millis } from '../../store/millis';
import { scanAccepts, type LeaseScan, type LeaseScanResult } from '../../store/types';
import { expireDue } from './leases';
import { heldOnly } from './read-only';
import type { Step } from '../core/step';
import type { EngineContext } from './context';
import { leaseView, type LeaseView } from '../core/views';

export interface ListPage {
  items: LeaseView[];
  next_cursor: string | null;
  revision: number;
  epoch: string;
}

export interface ListQuery {
  limit: number;
  cursor?: string;
  ownerId?: string;
  incarnation?: string;
  /** Only leases expiring within this many milliseconds of the read ("expiring soon"). */
  expiresWithinMs?: number;
  /** Only leases with at least one waiter in their route's queue. */
  withWaiters?: boolean;
  /** Only leases with a pending release request. */
  releaseRequested?: boolean;
  /** Routes examined at most (defaults to the engine's limit). */
  budget?: number;
}

/** The on-call filters of a LIST (docs/console.md /leases), as the cursor binds them; null when none is set. */
function onCallFilters(q: ListQuery): [number | null, boolean, boolean] | null {
  const f: [number | null, boolean, boolean] = [q.expiresWithinMs ?? null, q.withWaiters === true, q.releaseRequested === true];
  return f[0] === null && !f[1] && !f[2] ? null : f;
}

/**
 * What a LIST cursor is bound to, besides family and epoch: the selector as
 * given and the filters. Without an on-call filter the key is the one
 * earlier builds bound, so their cursors stay good across an upgrade.
 */
export function listQueryKey(sel: ParsedSelector, q: ListQuery): string {
  const f = onCallFilters(q);
  return JSON.stringify(f === null ? [sel.selector, q.ownerId ?? null, q.incarnation ?? null] : [sel.selector, q.ownerId ?? null, q.incarnation ?? null, ...f]);
}

/** The store's scan of a LIST or summary: selector, unexpired, and every filter the store can test on a row. */
export function leaseScanOf(family: string, sel: ParsedSelector, q: ListQuery, after: string | null, want: number, budget: number, now: Millis): LeaseScan {
  return {
    family,
    triple: sel.triple,
    after,
    want,
    budget,
    now,
    ownerId: q.ownerId,
    incarnation: q.incarnation,
    expiresBy: q.expiresWithinMs === undefined ? undefined : millis(now + q.expiresWithinMs),
    releaseRequested: q.releaseRequested === true ? true : undefined,
  };
}

/**
 * Scan, then (with `withWaiters`) keep the leases whose route has waiters.
 * Waiters are not a lease column (the embedded store keeps its queues in
 * memory), so that filter is applied to the scan's rows, at most `want` of
 * them, by one count of their queues: the scan's bounds still hold.
 * `counts`: the caller shows the waiter counts, so they are read even
 * without the filter (one query on a shared store).
 */
export async function scanWithFilters(
  ctx: EngineContext,
  step: Step,
  scan: LeaseScan,
  sel: ParsedSelector,
  withWaiters: boolean,
  counts: boolean,
): Promise<{ result: LeaseScanResult; waiting: Map<string, number> }> {
  const route = exactRoute(sel);
  const result = route === null ? await step.tx.scanLeases(scan) : await pointRead(step, scan, route);
  if (!withWaiters && !counts) return { result, waiting: new Map() };
  const waiting = await ctx.waiters.countOf(step, scan.family, result.rows.map((l) => l.route));
  if (!withWaiters) return { result, waiting };
  return { result: { ...result, rows: result.rows.filter((l) => (waiting.get(l.route) ?? 0) > 0) }, waiting };
}

/** The one route an exact selector (no wildcard) names, else null. */
function exactRoute(sel: ParsedSelector): string | null {
  const [realm, area, resource] = sel.triple;
  return realm !== null && area !== null && resource !== null ? `lease://${realm}/${area}/${resource}` : null;
}

/** An exact selector's page: one point read of its route, whatever else is held. */
async function pointRead(step: Step, scan: LeaseScan, route: string): Promise<LeaseScanResult> {
  const row = scan.after === null || scan.after < route ? await step.tx.getLease(scan.family, route) : undefined;
  return { rows: row && scanAccepts(scan, row) ? [row] : [], examined: row ? 1 : 0, lastExamined: row ? route : null, exhausted: true };
}

/**
 * One page, read after processing due expirations. The next cursor is at the
 * last item when the page is full, else at the last route examined when the
 * budget ran out, else there is none. `readOnly` (the store refuses writes:
 * a full disk): nothing due is ended, the page leaves it out instead, and
 * may then be short of `limit` with a cursor (read-only.ts).
 */
export async function listStep(
  ctx: EngineContext,
  step: Step,
  family: string,
  sel: ParsedSelector,
  q: ListQuery,
  after: string | null,
  encode: (position: string) => string,
  readOnly = false,
): Promise<Omit<ListPage, 'epoch'>> {
  if (!readOnly) await expireDue(ctx, step, 512, family);
  const spec = leaseScanOf(family, sel, q, after, q.limit + 1, q.budget ?? ctx.limits.listBudget, step.now);
  // On a shared store the queues are in the store: one query for the scanned rows.
  const { result: scan, waiting } = await scanWithFilters(ctx, step, spec, sel, q.withWaiters === true, true);
  const page = readOnly ? await heldOnly(step, scan.rows.slice(0, q.limit)) : scan.rows.slice(0, q.limit);
  step.events.push({ type: 'listed', family, examined: scan.examined, returned: page.length });
  let next: string | null = null;
  if (scan.rows.length > q.limit) next = scan.rows[q.limit - 1]!.route;
  // Short of `limit` (the budget ran out, or `withWaiters` dropped rows of a full scan): resume after the last route examined.
  else if (!scan.exhausted && scan.lastExamined !== null) next = scan.lastExamined;
  return {
    items: page.map((l) => leaseView(l, step.now, waiting.get(l.route) ?? 0)),
    next_cursor: next === null ? null : encode(next),
    revision: await step.tx.revision(family),
  };
}
