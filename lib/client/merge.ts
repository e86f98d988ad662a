/**
 * The one rule by which a view of held leases takes in feed events
 * (docs/sdk.md "What the view guarantees"): the observer and the console's
 * live table both apply it, so they cannot disagree about a lease.
 *
 * It is order-insensitive and idempotent, by revision: an `acquired` change
 * with revision R installs its lease unless the view holds a lease of
 * revision ≥ R; a removal with revision R drops the route's lease if that
 * lease's revision is < R. Applying a change twice, or a replayed change the
 * view already reflects, changes nothing, which is what lets a resumed stream
 * start its replay at any revision at or before the view's.
 *
 * Renewal hints carry no revision: a hint moves expiry and renewal count
 * forward for the lease in the view, and never brings back a removed lease.
 */

import type { ChangeEvent, RenewedEvent } from './subscription';
import { ENDING_KINDS } from '../wire';
import type { ChangeKind, LeaseView } from './types';

/** A route's new value after a change: the lease now in the view, or undefined when it left. */
export interface ViewUpdate {
  readonly route: string;
  readonly lease: LeaseView | undefined;
}

/** The kinds that take a route's lease out of the view: every change kind but `acquired` (lib/wire). */
export const REMOVAL_KINDS: ReadonlySet<ChangeKind> = new Set(ENDING_KINDS);

function freeze(lease: LeaseView): LeaseView {
  if (lease.metadata) Object.freeze(lease.metadata);
  return Object.freeze(lease);
}

/** A frozen LeaseView, stripped of lease and session ids even if given more. */
export function asView(lease: LeaseView): LeaseView {
  const { lease_id: _l, session_id: _s, ...view } = lease as LeaseView & { lease_id?: unknown; session_id?: unknown };
  return freeze({ ...view, metadata: view.metadata ? { ...view.metadata } : view.metadata });
}

/** The change rule (see the file comment) on `view`, in place. Returns what changed, if anything. */
export function applyChange(view: Map<string, LeaseView>, ev: Pick<ChangeEvent, 'route' | 'change' | 'revision' | 'lease'>): ViewUpdate | undefined {
  const cur = view.get(ev.route);
  if (ev.change === 'acquired') {
    if (!ev.lease || (cur && cur.revision >= ev.revision)) return undefined;
    const lease = asView(ev.lease);
    view.set(ev.route, lease);
    return { route: ev.route, lease };
  }
  if (REMOVAL_KINDS.has(ev.change) && cur && cur.revision < ev.revision) {
    view.delete(ev.route);
    return { route: ev.route, lease: undefined };
  }
  return undefined;
}

/** The renewal rule on `view`, in place: only a higher renewal count of the lease held moves it. */
export function applyRenewal(view: Map<string, LeaseView>, ev: Pick<RenewedEvent, 'route' | 'expires_at' | 'renewal_count'>): ViewUpdate | undefined {
  const cur = view.get(ev.route);
  if (!cur || ev.renewal_count <= cur.renewal_count) return undefined;
  const lease = freeze({ ...cur, expires_at: ev.expires_at, renewal_count: ev.renewal_count, metadata: cur.metadata });
  view.set(ev.route, lease);
  return { route: ev.route, lease };
}
