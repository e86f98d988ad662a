'use client';

import { keepPreviousData, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { isLeaseholdError, type AuditPage, type Checkpoint, type LeaseView } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { consoleFeed, onFeedRelisted } from '@/components/feed/feed';
import { useFeedStore } from '@/components/feed/feed-store';
import { queryKeys } from '@/components/query-keys';

export const AUDIT_PAGE_SIZE = 20;

/**
 * Audit rows of workers' calls are written in batches (every 100 ms, server
 * side), so a change event can arrive before its row is readable: the audit
 * query is refreshed once the batch has had time to land. An operator's own
 * action is written with its change and needs no wait.
 */
const AUDIT_SETTLE_MS = 300;

/** While the feed is not live the page cannot hear changes, so it re-reads at this pace instead. */
export const FALLBACK_POLL_MS = 10_000;

/** A refusal (4xx) will not change by asking again; a network fault or 5xx might. */
function retryUnlessRefused(count: number, error: unknown): boolean {
  if (isLeaseholdError(error) && error.status >= 400 && error.status < 500) return false;
  return count < 2;
}

function useFallbackPoll(route: string): number | false {
  const heard = useFeedStore((s) => s.state === 'live' && !(route in s.refused));
  return heard ? false : FALLBACK_POLL_MS;
}

/** The route's lease, `null` when nobody holds it. */
export function useLease(route: string) {
  const poll = useFallbackPoll(route);
  return useQuery<LeaseView | null>({
    queryKey: queryKeys.lease(route),
    queryFn: async () => (await consoleClient().inspect(route)) ?? null,
    retry: retryUnlessRefused,
    refetchInterval: poll,
  });
}

/** When the free route leaves lock-delay (epoch ms), `null` when it is in none; read only while the route is free. */
export function useLockDelay(route: string, free: boolean) {
  return useQuery<number | null>({
    queryKey: [...queryKeys.lease(route), 'lock-delay'],
    queryFn: async () => (await consoleClient().lockDelayUntil(route)) ?? null,
    enabled: free,
    retry: retryUnlessRefused,
  });
}

/** The route's checkpoint, `null` when it never had one. Checkpoint writes are not on the feed, hence the refresh on every change. */
export function useCheckpoint(route: string, enabled: boolean) {
  return useQuery<Checkpoint | null>({
    queryKey: queryKeys.checkpoint(route),
    queryFn: async () => (await consoleClient().readCheckpoint(route)) ?? null,
    retry: retryUnlessRefused,
    enabled,
  });
}

/** The audit key of this route's trail; without `cursor` it matches every page of it. */
function auditKey(route: string, cursor?: string | null) {
  return cursor === undefined ? queryKeys.audit({ scope: 'route', route }) : queryKeys.audit({ scope: 'route', route, cursor });
}

/** One page of the route's audit trail, newest first (the API's order). */
export function useAuditTrail(route: string, cursor: string | null, enabled: boolean) {
  return useQuery<AuditPage>({
    queryKey: auditKey(route, cursor),
    queryFn: () => consoleClient().listAudit({ route, limit: AUDIT_PAGE_SIZE, cursor: cursor ?? undefined }),
    retry: retryUnlessRefused,
    placeholderData: keepPreviousData,
    enabled,
  });
}

/** Re-read everything the page shows about `route`. */
export function invalidateLeaseDetail(queryClient: QueryClient, route: string): void {
  void queryClient.invalidateQueries({ queryKey: queryKeys.lease(route) });
  void queryClient.invalidateQueries({ queryKey: queryKeys.checkpoint(route) });
  void queryClient.invalidateQueries({ queryKey: auditKey(route) });
}

/**
 * Keeps the page's queries in step with the tab's feed: a change sets the
 * lease at once (the event says what happened) and has the lease, checkpoint
 * and audit trail re-read; a renewal hint moves the expiry and the renewal
 * count in place and calls `onRenewed` (for the highlight); a resync re-reads
 * everything, since events may have been missed (a resumed feed replays
 * them instead).
 */
export function useLiveLease(route: string, onRenewed: () => void): void {
  const queryClient = useQueryClient();
  const renewed = useRef(onRenewed);
  useEffect(() => {
    renewed.current = onRenewed;
  });

  useEffect(() => {
    const feed = consoleFeed();
    let auditTimer: ReturnType<typeof setTimeout> | undefined;
    const unwatch = feed.watch(
      route,
      (event) => {
        if (event.route !== route) return;
        if (event.type === 'renewed') {
          queryClient.setQueryData<LeaseView | null>(queryKeys.lease(route), (prev) =>
            prev ? { ...prev, expires_at: event.expires_at, renewal_count: event.renewal_count } : prev,
          );
          renewed.current();
          return;
        }
        if (event.type === 'release_requested') {
          // Not a change: re-read the lease for the request (and who asked).
          void queryClient.invalidateQueries({ queryKey: queryKeys.lease(route) });
          return;
        }
        queryClient.setQueryData<LeaseView | null>(queryKeys.lease(route), event.change === 'acquired' && event.lease ? event.lease : null);
        void queryClient.invalidateQueries({ queryKey: queryKeys.lease(route) });
        void queryClient.invalidateQueries({ queryKey: queryKeys.checkpoint(route) });
        clearTimeout(auditTimer);
        auditTimer = setTimeout(() => void queryClient.invalidateQueries({ queryKey: auditKey(route) }), AUDIT_SETTLE_MS);
      },
      { renewals: true },
    );
    const unresync = onFeedRelisted(() => invalidateLeaseDetail(queryClient, route));
    return () => {
      unwatch();
      unresync();
      clearTimeout(auditTimer);
    };
  }, [queryClient, route]);
}
