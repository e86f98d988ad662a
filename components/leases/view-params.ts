'use client';

import { useSearchParams } from 'next/navigation';
import { useCallback, useMemo } from 'react';

export const PAGE_SIZES = [25, 50, 100, 250, 500] as const;
const DEFAULT_PAGE_SIZE = 50;

/** "Expiring soon" windows offered, in seconds; the first one shown when the filter is turned on is the default. */
export const EXPIRING_WINDOWS = [10, 30, 60, 300] as const;
export const DEFAULT_EXPIRING_WINDOW = 30;

/** What the leases page shows; all of it lives in the URL, so a view can be shared. */
export interface LeaseViewParams {
  selector: string;
  owner: string;
  holder: string;
  limit: number;
  cursor: string | null;
  /** Expiring soon: within this many seconds (URL `expiring`), or null for any expiry. */
  expiring: number | null;
  /** Only leases whose route has waiters (URL `waiters=1`). */
  waiters: boolean;
  /** Only leases with a pending release request (URL `release_requested=1`). */
  asked: boolean;
  /** Free routes in lock-delay instead of leases (URL `lock_delay=1`); the lease filters do not apply to them. */
  delay: boolean;
}

export function viewKey(p: Pick<LeaseViewParams, 'selector' | 'owner' | 'holder' | 'limit' | 'expiring' | 'waiters' | 'asked' | 'delay'>): string {
  return JSON.stringify([p.selector, p.owner, p.holder, p.limit, p.expiring, p.waiters, p.asked, p.delay]);
}

export function toSearch(p: LeaseViewParams, defaultSelector: string): string {
  const q = new URLSearchParams();
  if (p.selector !== defaultSelector) q.set('selector', p.selector);
  if (p.owner) q.set('owner', p.owner);
  if (p.holder) q.set('holder', p.holder);
  if (p.expiring !== null) q.set('expiring', String(p.expiring));
  if (p.waiters) q.set('waiters', '1');
  if (p.asked) q.set('release_requested', '1');
  if (p.delay) q.set('lock_delay', '1');
  if (p.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(p.limit));
  if (p.cursor) q.set('cursor', p.cursor);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function parseViewParams(search: Pick<URLSearchParams, 'get'>, defaultSelector: string): LeaseViewParams {
  const limit = Number(search.get('limit'));
  const expiring = Number(search.get('expiring'));
  return {
    selector: search.get('selector') ?? defaultSelector,
    owner: search.get('owner') ?? '',
    holder: search.get('holder') ?? '',
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
    cursor: search.get('cursor') || null,
    // Any whole number of seconds up to an hour (the server's bound), so a shared link keeps its window.
    expiring: Number.isInteger(expiring) && expiring >= 1 && expiring <= 3_600 ? expiring : null,
    waiters: search.get('waiters') === '1',
    asked: search.get('release_requested') === '1',
    delay: search.get('lock_delay') === '1',
  };
}

/** The LIST (and summary) filters of a view, as the SDK names them. */
export function leaseFiltersOf(p: LeaseViewParams) {
  return {
    ownerId: p.owner || undefined,
    holderIncarnation: p.holder || undefined,
    expiresWithinMs: p.expiring === null ? undefined : p.expiring * 1000,
    withWaiters: p.waiters || undefined,
    releaseRequested: p.asked || undefined,
  };
}

/** The view from the URL, and a way to move to another (a new history entry, so Back works). */
export function useLeaseViewParams(defaultSelector: string): [LeaseViewParams, (next: LeaseViewParams) => void] {
  const search = useSearchParams();
  const params = useMemo(() => parseViewParams(search, defaultSelector), [search, defaultSelector]);
  // The native history API (Next's router follows it): a page turn is a URL
  // change for this client page, not a server round trip for the route.
  const go = useCallback((next: LeaseViewParams) => window.history.pushState(null, '', `/leases${toSearch(next, defaultSelector)}`), [defaultSelector]);
  return [params, go];
}
