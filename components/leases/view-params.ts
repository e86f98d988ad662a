'use client';

import { useSearchParams } from 'next/navigation';
import { useCallback, useMemo } from 'react';

export const PAGE_SIZES = [25, 50, 100, 250, 500] as const;
export const DEFAULT_PAGE_SIZE = 50;

/** What the leases page shows; all of it lives in the URL, so a view can be shared. */
export interface LeaseViewParams {
  selector: string;
  owner: string;
  holder: string;
  limit: number;
  cursor: string | null;
}

export function viewKey(p: Pick<LeaseViewParams, 'selector' | 'owner' | 'holder' | 'limit'>): string {
  return JSON.stringify([p.selector, p.owner, p.holder, p.limit]);
}

export function toSearch(p: LeaseViewParams, defaultSelector: string): string {
  const q = new URLSearchParams();
  if (p.selector !== defaultSelector) q.set('selector', p.selector);
  if (p.owner) q.set('owner', p.owner);
  if (p.holder) q.set('holder', p.holder);
  if (p.limit !== DEFAULT_PAGE_SIZE) q.set('limit', String(p.limit));
  if (p.cursor) q.set('cursor', p.cursor);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function parseViewParams(search: Pick<URLSearchParams, 'get'>, defaultSelector: string): LeaseViewParams {
  const limit = Number(search.get('limit'));
  return {
    selector: search.get('selector') ?? defaultSelector,
    owner: search.get('owner') ?? '',
    holder: search.get('holder') ?? '',
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
    cursor: search.get('cursor') || null,
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
