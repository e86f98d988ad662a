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

import type { ChangeEvent, LeasePage, LeaseView, RenewedEvent } from '@/lib/client';

export interface LiveFilters {
  owner: string;
  holder: string;
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
  return (f.owner === '' || lease.owner_id === f.owner) && (f.holder === '' || lease.holder_incarnation === f.holder);
}

/**
 * `firstPage`: the page was listed without a cursor, so nothing sorts before
 * it. Its upper bound is its last route while another page follows, else none.
 */
export function derivePage(
  page: LeasePage,
  events: readonly ChangeEvent[],
  renewals: ReadonlyMap<string, Renewal>,
  filters: LiveFilters,
  firstPage: boolean,
): LivePage {
  const rows = new Map<string, LeaseView>(page.items.map((l) => [l.route, l]));
  const lower = firstPage ? null : (page.items[0]?.route ?? null);
  const upper = page.next_cursor === null ? null : (page.items.at(-1)?.route ?? null);
  // A later page that came back empty has no known bounds: nothing joins it.
  const known = firstPage || page.items.length > 0;
  const inBounds = (route: string) => known && (lower === null || !before(route, lower)) && (upper === null || !before(upper, route));
  const elsewhere = new Set<string>();
  let revision = page.revision;

  // Events arrive in revision order per stream; sort anyway, a reconnect can interleave.
  const later = events.filter((e) => e.revision > page.revision).sort((a, b) => a.revision - b.revision);
  for (const e of later) {
    revision = Math.max(revision, e.revision);
    if (e.change === 'acquired' && e.lease) {
      const fits = passes(e.lease, filters);
      if (rows.has(e.route) || (fits && inBounds(e.route))) {
        if (fits) rows.set(e.route, e.lease);
        else rows.delete(e.route);
        elsewhere.delete(e.route);
      } else if (fits) {
        elsewhere.add(e.route);
      }
    } else {
      rows.delete(e.route);
      elsewhere.delete(e.route);
    }
  }

  const out = [...rows.values()].sort((a, b) => (a.route < b.route ? -1 : a.route > b.route ? 1 : 0));
  return {
    rows: out.map((l) => {
      const r = renewals.get(l.route);
      // A renewal hint only ever moves expiry forward, and only for this holder's lease.
      if (!r || Date.parse(r.expires_at) <= Date.parse(l.expires_at)) return l;
      return { ...l, expires_at: r.expires_at, renewal_count: Math.max(l.renewal_count, r.renewal_count) };
    }),
    newElsewhere: elsewhere.size,
    revision,
  };
}

/** A renewal hint for a route, kept only if it is newer than the one held. */
export function mergeRenewal(map: ReadonlyMap<string, Renewal>, e: RenewedEvent): Map<string, Renewal> {
  const next = new Map(map);
  const cur = next.get(e.route);
  if (!cur || Date.parse(e.expires_at) > Date.parse(cur.expires_at)) next.set(e.route, { expires_at: e.expires_at, renewal_count: e.renewal_count });
  return next;
}
