'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { isLeaseholdError, type LockDelayView } from '@/lib/client';
import { parseSelector } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { leaseDetailHref } from '@/components/lease-detail/route-from-params';
import { Countdown } from '@/components/leases/countdown';
import type { LeaseViewParams } from '@/components/leases/view-params';
import { queryKeys } from '@/components/query-keys';
import { cn } from '@/components/ui/cn';
import { SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { Timestamp } from '@/components/ui/timestamp';

/** Delays are not on the feed: the page is re-read this often while visible, and a delay that ran out leaves it then. */
const LOCK_DELAY_REFRESH_MS = 5_000;

const FINAL = new Set(['access_denied', 'invalid_selector', 'invalid_request', 'invalid_credential', 'cursor_invalid']);

/** One page of the free routes in lock-delay under the view's selector (GET /api/v1/lock-delays). */
export function useLockDelays(params: LeaseViewParams, enabled: boolean) {
  return useQuery({
    queryKey: queryKeys.lockDelays({ selector: params.selector, cursor: params.cursor, limit: params.limit }),
    queryFn: () => consoleClient().lockDelays(params.selector, { limit: params.limit, cursor: params.cursor ?? undefined }),
    enabled: enabled && parseSelector(params.selector).ok,
    placeholderData: keepPreviousData,
    refetchInterval: LOCK_DELAY_REFRESH_MS,
    retry: (count, e) => !(isLeaseholdError(e) && FINAL.has(e.code)) && count < 2,
  });
}

const COLUMNS = ['Route', 'Lock-delay ends in', 'Until'] as const;

/** Free routes that accept no new holder yet: each ends its delay on its own deadline (docs/policies.md). */
export function LockDelayTable({ items, loading, dimmed }: { items: readonly LockDelayView[] | undefined; loading: boolean; dimmed: boolean }) {
  return (
    <Table aria-label="Routes in lock-delay" aria-busy={loading || dimmed} className={cn(dimmed && 'opacity-60')}>
      <THead>
        <tr>
          {COLUMNS.map((c) => (
            <Th key={c}>{c}</Th>
          ))}
        </tr>
      </THead>
      <TBody>
        {items
          ? items.map((d) => (
              <tr key={d.route} className="hover:bg-zinc-50 dark:hover:bg-zinc-900/60">
                <Td className="max-w-[28rem] font-mono text-[13px]">
                  <Link href={leaseDetailHref(d.route) ?? '/leases'} prefetch={false} className="block truncate text-teal-800 hover:underline dark:text-teal-300" title={d.route}>
                    {d.route}
                  </Link>
                </Td>
                <Td className="whitespace-nowrap">
                  <Countdown expiresAt={d.lock_delay_until} />
                </Td>
                <Td className="whitespace-nowrap text-zinc-600 dark:text-zinc-400">
                  <Timestamp at={d.lock_delay_until} />
                </Td>
              </tr>
            ))
          : loading && <SkeletonRows cols={COLUMNS.length} rows={4} />}
      </TBody>
    </Table>
  );
}
