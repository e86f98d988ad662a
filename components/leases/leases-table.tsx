'use client';

import Link from 'next/link';
import { memo, useEffect } from 'react';
import type { LeaseView } from '@/lib/client';
import { leaseDetailHref } from '@/components/lease-detail/route-from-params';
import { Countdown } from '@/components/leases/countdown';
import { useLiveLeasesStore } from '@/components/leases/live-store';
import { Badge } from '@/components/ui/badge';
import { cn } from '@/components/ui/cn';
import { CopyButton } from '@/components/ui/copy-button';
import { SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { Timestamp } from '@/components/ui/timestamp';

const COLUMNS = ['Route', 'Owner', 'Holder', 'Acquired', 'Expires in', 'Renewals', 'Fencing token', 'Waiters'] as const;


/** Marks the first time a page of rows is on screen (`leasehold:leases-rows`), for the e2e figures and anyone profiling. */
function useFirstRowsMark(shown: boolean): void {
  useEffect(() => {
    if (shown && performance.getEntriesByName('leasehold:leases-rows').length === 0) performance.mark('leasehold:leases-rows');
  }, [shown]);
}

export function LeasesTable({ rows, loading, dimmed }: { rows: readonly LeaseView[] | undefined; loading: boolean; dimmed: boolean }) {
  useFirstRowsMark(!!rows && rows.length > 0);
  return (
    <Table aria-label="Leases" aria-busy={loading || dimmed} className={cn(dimmed && 'opacity-60')}>
      <THead>
        <tr>
          {/* Route order is the server's keyset order (docs/design.md "On-call views"): the one order that pages stably while expiries move. */}
          {COLUMNS.map((c) =>
            c === 'Route' ? (
              <Th key={c} aria-sort="ascending" title="Sorted by route, as the server pages leases">
                {c} <span aria-hidden="true">↑</span>
              </Th>
            ) : (
              <Th key={c} className={c === 'Renewals' || c === 'Fencing token' || c === 'Waiters' ? 'text-right' : undefined}>
                {c}
              </Th>
            ),
          )}
        </tr>
      </THead>
      <TBody>{rows ? rows.map((l) => <LeaseRow key={l.route} lease={l} />) : loading && <SkeletonRows cols={COLUMNS.length} rows={8} />}</TBody>
    </Table>
  );
}

const LeaseRow = memo(function LeaseRow({ lease }: { lease: LeaseView }) {
  const flashedAt = useLiveLeasesStore((s) => s.flashes.get(lease.route));
  // From LIST, or heard on the feed since (for this lease, not an earlier one of the route).
  const asked = useLiveLeasesStore((s) => s.releaseRequests.get(lease.route)) === lease.fencing_token || !!lease.release_request;
  return (
    <tr className="hover:bg-zinc-50 dark:hover:bg-zinc-900/60">
      <Td className="max-w-[28rem] font-mono text-[13px]">
        <span className="flex min-w-0 items-center gap-2">
          <Link href={leaseDetailHref(lease.route) ?? '/leases'} prefetch={false} className="truncate text-teal-800 hover:underline dark:text-teal-300" title={lease.route}>
            {lease.route}
          </Link>
          {asked && (
            <Badge tone="info" className="shrink-0 font-sans">
              Release requested
            </Badge>
          )}
        </span>
      </Td>
      <Td className="max-w-[12rem] truncate" title={lease.owner_id}>
        {lease.owner_id}
      </Td>
      <Td>
        <span className="inline-flex items-center gap-1">
          <span className="font-mono text-xs text-zinc-600 dark:text-zinc-400" title={lease.holder_incarnation}>
            {lease.holder_incarnation.slice(0, 8)}
          </span>
          <CopyButton value={lease.holder_incarnation} label={`Copy holder incarnation of ${lease.route}`} />
        </span>
      </Td>
      <Td className="whitespace-nowrap text-zinc-600 dark:text-zinc-400">
        <Timestamp at={lease.acquired_at} />
      </Td>
      <Td className="whitespace-nowrap">
        {/* Keyed by the renewal's arrival, so each renewal replays the highlight. */}
        <span key={flashedAt ?? 0} className={cn('rounded px-1 -mx-1', flashedAt !== undefined && 'animate-lh-flash')}>
          <Countdown expiresAt={lease.expires_at} />
        </span>
      </Td>
      <Td className="text-right tabular-nums">{lease.renewal_count}</Td>
      <Td className="text-right font-mono tabular-nums">{lease.fencing_token}</Td>
      <Td className={cn('text-right tabular-nums', lease.waiters > 0 && 'font-medium text-amber-700 dark:text-amber-400')}>{lease.waiters}</Td>
    </tr>
  );
});
