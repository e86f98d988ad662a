'use client';

import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo } from 'react';
import { isLeaseholdError, type LeasePage } from '@/lib/client';
import { parseSelector } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { startEarly, takeEarly } from '@/components/console/early';
import { consoleFeed } from '@/components/feed/feed';
import { derivePage, type LivePage } from '@/components/leases/live-page';
import { MAX_PENDING_EVENTS, useLiveLeasesStore } from '@/components/leases/live-store';
import { leaseFiltersOf, parseViewParams, viewKey, type LeaseViewParams } from '@/components/leases/view-params';
import { queryKeys } from '@/components/query-keys';

function listPage(params: LeaseViewParams) {
  return consoleClient().listPage(params.selector, { limit: params.limit, cursor: params.cursor ?? undefined, ...leaseFiltersOf(params) });
}

const earlyKey = (params: LeaseViewParams) => `leases:${JSON.stringify(queryKeys.leasePage(params))}`;

/**
 * Opening /leases with a selector in the URL: list as soon as this code
 * loads, in parallel with whoami and hydration (the first page is what an
 * operator waits for).
 */
export function startFirstPageEarly(): void {
  if (typeof window === 'undefined' || window.location.pathname !== '/leases') return;
  const search = new URLSearchParams(window.location.search);
  if (!search.has('selector')) return;
  const params = parseViewParams(search, '');
  if (parseSelector(params.selector).ok && !params.delay) startEarly(earlyKey(params), () => listPage(params));
}

const FINAL = new Set(['access_denied', 'invalid_selector', 'invalid_request', 'invalid_credential']);

/**
 * One page of LIST, kept live by the tab's feed: the selector is watched
 * (with renewal hints) for as long as the table shows it, each registration
 * is followed by a fresh LIST (so nothing between the two is missed), and
 * the rows are the snapshot with the later changes applied (live-page.ts).
 */
export function useLiveLeases(params: LeaseViewParams, enabled: boolean) {
  const queryClient = useQueryClient();
  const valid = parseSelector(params.selector).ok;
  const key = queryKeys.leasePage(params);
  const query = useQuery({
    queryKey: key,
    queryFn: () => takeEarly<LeasePage>(earlyKey(params)) ?? listPage(params),
    enabled: enabled && valid,
    // The feed keeps the page current; only a (re)registration refetches it.
    staleTime: Infinity,
    refetchOnWindowFocus: false,
    placeholderData: keepPreviousData,
    retry: (count, e) => !(isLeaseholdError(e) && FINAL.has(e.code)) && count < 2,
  });

  const view = viewKey(params);
  const viewOpened = useLiveLeasesStore((s) => s.viewOpened);
  useEffect(() => viewOpened(view), [view, viewOpened]);

  const denied = isLeaseholdError(query.error) && FINAL.has(query.error.code);
  useEffect(() => {
    if (!enabled || !valid || denied) return;
    const store = useLiveLeasesStore.getState();
    return consoleFeed().watch(
      params.selector,
      (e) => {
        if (e.type === 'change') store.changeReceived(e);
        else if (e.type === 'renewed') store.renewalReceived(e);
        else if (e.type === 'release_requested') store.releaseRequestReceived(e);
      },
      { renewals: true, onRegistered: () => void queryClient.invalidateQueries({ queryKey: queryKeys.leases() }) },
    );
  }, [enabled, valid, denied, params.selector, queryClient]);

  // A fresh snapshot holds every change up to its revision: drop those.
  const snapshotTaken = useLiveLeasesStore((s) => s.snapshotTaken);
  const fresh = query.isPlaceholderData ? undefined : query.data;
  useEffect(() => {
    if (fresh) snapshotTaken(fresh.revision);
  }, [fresh, snapshotTaken]);
  // While the next page loads, the previous one stays on screen (dimmed by the table).
  const snapshot = query.data;

  const events = useLiveLeasesStore((s) => s.events);
  const renewals = useLiveLeasesStore((s) => s.renewals);
  useEffect(() => {
    // Far behind (a burst bigger than any page): a fresh page is cheaper than replaying.
    if (events.length > MAX_PENDING_EVENTS) void queryClient.invalidateQueries({ queryKey: queryKeys.leases() });
  }, [events.length, queryClient]);

  // "Expiring soon" is relative to when the snapshot was read: a lease renewed past the window leaves, one acquired since joins only if it expires inside it.
  const expiresBy = params.expiring === null || !snapshot ? undefined : query.dataUpdatedAt + params.expiring * 1000;
  const live = useMemo<LivePage | undefined>(
    () =>
      snapshot
        ? derivePage(snapshot, events, renewals, { owner: params.owner, holder: params.holder, expiresBy, withWaiters: params.waiters, releaseRequested: params.asked }, params.cursor === null)
        : undefined,
    [snapshot, events, renewals, params.owner, params.holder, expiresBy, params.waiters, params.asked, params.cursor],
  );

  return { query, live, nextCursor: fresh?.next_cursor ?? null, refresh: () => void query.refetch() };
}
