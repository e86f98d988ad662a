/**
 * The LIST's summary (docs/console.md /leases, "Counts"): how many held
 * leases match a selector and the LIST's filters, and how many each owner
 * holds, read by the same scan as LIST with the engine's per-page budget
 * of examined routes (CONTRACT §19). A range longer than the budget is
 * counted up to it: the answer then says the count is a lower bound
 * (`exact: false`), never a guess.
 */

import type { ParsedSelector } from '@/lib/selector';
import { leaseScanOf, scanWithFilters, type ListQuery } from './inventory';
import type { Step } from '../core/step';
import type { EngineContext } from './context';

/** Owners named in a summary at most; the rest are summed as `others`. */
export const SUMMARY_OWNERS = 10;

export interface LeaseSummary {
  /** Matching leases counted (all of them when `exact`). */
  total: number;
  /** False when the budget ran out before the range did: `total` is a lower bound. */
  exact: boolean;
  /** Routes examined (at most the budget). */
  examined: number;
  /** The owners holding the most matching leases, most first (ties by owner id). */
  owners: Array<{ owner_id: string; leases: number }>;
  /** Leases of the owners not named. */
  others: number;
  /** Distinct owners counted. */
  owner_count: number;
}

/** One read-only step: nothing due is ended here (LIST ends it); expired leases are simply not counted. */
export async function summaryStep(ctx: EngineContext, step: Step, family: string, sel: ParsedSelector, q: Omit<ListQuery, 'limit' | 'cursor'>): Promise<LeaseSummary> {
  const budget = q.budget ?? ctx.limits.listBudget;
  const spec = leaseScanOf(family, sel, { ...q, limit: budget }, null, budget, budget, step.now);
  const { result } = await scanWithFilters(ctx, step, spec, sel, q.withWaiters === true, false);
  const byOwner = new Map<string, number>();
  for (const l of result.rows) byOwner.set(l.ownerId, (byOwner.get(l.ownerId) ?? 0) + 1);
  const ranked = [...byOwner].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const named = ranked.slice(0, SUMMARY_OWNERS);
  step.events.push({ type: 'listed', family, examined: result.examined, returned: 0 });
  return {
    total: result.rows.length,
    exact: result.exhausted,
    examined: result.examined,
    owners: named.map(([owner_id, leases]) => ({ owner_id, leases })),
    others: ranked.slice(SUMMARY_OWNERS).reduce((n, [, c]) => n + c, 0),
    owner_count: ranked.length,
  };
}
