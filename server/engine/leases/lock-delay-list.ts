/**
 * Routes in lock-delay (docs/console.md /leases, "In lock-delay"): free
 * routes that accept no new holder yet, with their deadlines. They are not
 * leases, so LIST never returns them; this is their own keyset-paged read,
 * in route order, along the delays' primary key: one read of at most the
 * engine's per-page budget of delays (CONTRACT §19), of which those that
 * match the selector and are still running are answered. A page may be
 * short of `limit` with a cursor when the budget ran out first.
 */

import { matches, routeSegments, type ParsedSelector } from '@/lib/selector';
import { prefixEnd } from '../../store/plan/lease-scan';
import type { LockDelayRow } from '../../store/types';
import type { Step } from '../core/step';
import type { EngineContext } from './context';

export interface LockDelayView {
  route: string;
  lock_delay_until: string;
  remaining_ms: number;
}

export interface LockDelayPage {
  items: LockDelayView[];
  next_cursor: string | null;
}

/** Above every route: all routes start `lease://`, and ';' follows ':'. */
const ROUTES_END = 'lease;';

/** The route range a selector's leading literal segments narrow the read to. */
function rangeOf(sel: ParsedSelector): { from: string; to: string } {
  const [realm, area] = sel.triple;
  const prefix = realm === null ? null : area === null ? `lease://${realm}/` : `lease://${realm}/${area}/`;
  return prefix === null ? { from: '', to: ROUTES_END } : { from: prefix, to: prefixEnd(prefix) };
}

export async function lockDelayStep(
  ctx: EngineContext,
  step: Step,
  family: string,
  sel: ParsedSelector,
  q: { limit: number; budget?: number },
  after: string | null,
  encode: (position: string) => string,
): Promise<LockDelayPage> {
  const range = rangeOf(sel);
  const budget = q.budget ?? ctx.limits.listBudget;
  const running: LockDelayRow[] = [];
  let examined = 0;
  let position = after !== null && after > range.from ? after : range.from;
  let exhausted = false;
  // Chunks along route order, the first the page's size, later ones fourfold, until the page fills, the range ends or the budget is spent.
  for (let size = q.limit + 1; running.length <= q.limit && examined < budget; size *= 4) {
    const n = Math.min(size, budget - examined);
    const rows = await step.tx.policies.scanLockDelays(family, position, range.to, n);
    for (const r of rows) {
      examined++;
      position = r.route;
      if (r.until > step.now && matches(sel.triple, routeSegments(r.route))) running.push(r);
      if (running.length > q.limit) break;
    }
    if (rows.length < n) {
      exhausted = true;
      break;
    }
  }
  const page = running.slice(0, q.limit);
  let next: string | null = null;
  if (running.length > q.limit) next = page.at(-1)!.route;
  else if (!exhausted && examined > 0) next = position;
  step.events.push({ type: 'listed', family, examined, returned: page.length });
  return {
    items: page.map((r) => ({ route: r.route, lock_delay_until: new Date(r.until).toISOString(), remaining_ms: r.until - step.now })),
    next_cursor: next === null ? null : encode(next),
  };
}
