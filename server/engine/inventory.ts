/**
 * Inventory (docs/semantics.md §7): LIST of held, unexpired leases matching a
 * selector, in route byte order, with keyset pagination and a per-page budget
 * of examined routes, so a sparse selector always makes progress.
 */

import type { ParsedSelector } from '@/lib/selector';
import { scanAccepts, type LeaseScan, type LeaseScanResult } from '../store/types';
import { expireDue } from './leases';
import { heldOnly } from './read-only';
import type { EngineContext, Step } from './step';
import { leaseView, type LeaseView } from './views';

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
  /** Routes examined at most (defaults to the engine's limit). */
  budget?: number;
}

/** What a LIST cursor is bound to, besides family and epoch: the selector as given and the filters. */
export function listQueryKey(sel: ParsedSelector, q: ListQuery): string {
  return JSON.stringify([sel.selector, q.ownerId ?? null, q.incarnation ?? null]);
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
  const spec: LeaseScan = {
    family,
    triple: sel.triple,
    after,
    want: q.limit + 1,
    budget: q.budget ?? ctx.limits.listBudget,
    now: step.now,
    ownerId: q.ownerId,
    incarnation: q.incarnation,
  };
  const route = exactRoute(sel);
  const scan = route === null ? await step.tx.scanLeases(spec) : await pointRead(step, spec, route);
  const page = readOnly ? await heldOnly(step, scan.rows.slice(0, q.limit)) : scan.rows.slice(0, q.limit);
  step.events.push({ type: 'listed', family, examined: scan.examined, returned: page.length });
  let next: string | null = null;
  if (scan.rows.length > q.limit) next = scan.rows[q.limit - 1]!.route;
  else if (!scan.exhausted && scan.lastExamined !== null) next = scan.lastExamined;
  // On a shared store the queues are in the store: one query for the page.
  const waiting = await ctx.waiters.countOf(step, family, page.map((l) => l.route));
  return {
    items: page.map((l) => leaseView(l, step.now, waiting.get(l.route) ?? 0)),
    next_cursor: next === null ? null : encode(next),
    revision: await step.tx.revision(family),
  };
}
