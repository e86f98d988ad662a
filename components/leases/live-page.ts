/**
 * The leases table's live view, derived: the page as LIST answered it (a
 * snapshot at `page.revision`) with the feed's later changes applied. Nothing
 * here fetches or mutates; the same inputs always give the same rows, so a
 * refetch simply moves the snapshot forward and drops what it already holds.
 *
 * A route acquired after the snapshot joins the page only if it sorts inside
 * the page's bounds (docs/console.md); one that sorts elsewhere is counted as a
 * "new lease" for the badge that offers a refresh.
 */

import { applyChange, applyRenewal, type ChangeEvent, type LeasePage, type LeaseView, type RenewedEvent } from '@/lib/client';

interface LiveFilters {
  owner: string;
  holder: string;
  /** Expiring soon: only leases expiring at or before this instant (epoch ms). */
  expiresBy?: number | undefined;
  /** Only leases whose route has waiters. */
  withWaiters?: boolean | undefined;
  /** Only leases with a pending release request. */
  releaseRequested?: boolean | undefined;
}

export interface Renewal {
  expires_at: string;
  renewal_count: number;
}

export interface LivePage {
  rows: LeaseView[];
  /** Routes acquired since the snapshot that belong to another page (or sort outside this one). */
  newElsewhere: number;
  /** The newest revision the rows reflect. */
  revision: number;
}

// Routes are ASCII, so UTF-16 order is the server's byte order.
const before = (a: string, b: string): boolean => a < b;

function passes(lease: LeaseView, f: LiveFilters): boolean {
  return (
    (f.owner === '' || lease.owner_id === f.owner) &&
    (f.holder === '' || lease.holder_incarnation === f.holder) &&
    (f.expiresBy === undefined || Date.parse(lease.expires_at) <= f.expiresBy) &&
    (!f.withWaiters || lease.waiters > 0) &&
    (!f.releaseRequested || lease.release_request !== null)
  );
}

/**
 * `firstPage`: the page was listed without a cursor, so nothing sorts before
 * it. Its upper bound is its last route while another page follows, else none.
 * Changes and renewal hints apply by the SDK's one merge rule (revisions and
 * renewal counts, `applyChange` and `applyRenewal`), the observer's too.
 */
export function derivePage(
  page: LeasePage,
  events: readonly ChangeEvent[],
  renewals: ReadonlyMap<string, Renewal>,
  filters: LiveFilters,
  firstPage: boolean,
): LivePage {
  // Every route the snapshot and the later changes know of, in or out of the page.
  const known = new Map<string, LeaseView>(page.items.map((l) => [l.route, l]));
  const lower = firstPage ? null : (page.items[0]?.route ?? null);
  const upper = page.next_cursor === null ? null : (page.items.at(-1)?.route ?? null);
  // A later page that came back empty has no known bounds: nothing joins it.
  const bounded = firstPage || page.items.length > 0;
  const inBounds = (route: string) => bounded && (lower === null || !before(route, lower)) && (upper === null || !before(upper, route));
  let revision = page.revision;

  // The rule is order-insensitive; revision order keeps `known` small in between.
  const later = events.filter((e) => e.revision > page.revision).sort((a, b) => a.revision - b.revision);
  for (const e of later) {
    revision = Math.max(revision, e.revision);
    applyChange(known, e);
  }
  for (const [route, r] of renewals) applyRenewal(known, { route, ...r });

  const rows: LeaseView[] = [];
  let newElsewhere = 0;
  for (const lease of known.values()) {
    if (!passes(lease, filters)) continue;
    if (inBounds(lease.route)) rows.push(lease);
    else newElsewhere++;
  }
  rows.sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
  return { rows, newElsewhere, revision };
}

/** A renewal hint for a route, kept if its renewal count is higher than the one held (the SDK's rule). */
export function mergeRenewal(map: ReadonlyMap<string, Renewal>, e: RenewedEvent): Map<string, Renewal> {
  const next = new Map(map);
  const cur = next.get(e.route);
  if (!cur || e.renewal_count > cur.renewal_count) next.set(e.route, { expires_at: e.expires_at, renewal_count: e.renewal_count });
  return next;
}
