'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import type { LeaseSummary } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { leaseFiltersOf, type LeaseViewParams } from '@/components/leases/view-params';
import { queryKeys } from '@/components/query-keys';
import { cn } from '@/components/ui/cn';

/** Counts follow the feed's changes, re-read at most this often (a burst of changes is one re-read). */
const SUMMARY_MIN_GAP_MS = 5_000;

const n = (v: number) => v.toLocaleString('en-US');

/** "1,234", or "10,000+" when the server stopped counting at its budget. */
function totalText(s: Pick<LeaseSummary, 'total' | 'exact'>): string {
  return s.exact ? n(s.total) : `${n(s.total)}+`;
}

/**
 * The view's summary. No polling: a fresh registration's LIST re-reads it
 * (it shares the leases' query key), and so does a change the feed reports
 * for the view (`revision`, the newest change's), at most once per
 * `SUMMARY_MIN_GAP_MS`.
 */
export function useLeaseSummary(params: LeaseViewParams, enabled: boolean, revision: number | undefined) {
  const key = { selector: params.selector, owner: params.owner, holder: params.holder, expiring: params.expiring, waiters: params.waiters, asked: params.asked };
  const q = useQuery({
    queryKey: queryKeys.leaseSummary(key),
    queryFn: () => consoleClient().leaseSummary(params.selector, leaseFiltersOf(params)),
    enabled,
    placeholderData: keepPreviousData,
    staleTime: Infinity,
    refetchOnWindowFocus: false,
    retry: false,
  });
  const { dataUpdatedAt, refetch } = q;
  useEffect(() => {
    if (!enabled || revision === undefined || dataUpdatedAt === 0) return;
    // A throttle, not a debounce: the deadline is fixed by the last read, so a steady stream of changes still re-reads.
    const t = setTimeout(() => void refetch(), Math.max(0, dataUpdatedAt + SUMMARY_MIN_GAP_MS - Date.now()));
    return () => clearTimeout(t);
    // Only a new revision asks for a re-read; the rest says whether and when.
  }, [revision]);
  return q;
}

/**
 * The view's total and its owners (docs/console.md /leases, "Counts"): an
 * exact count of the matching leases, or "N+" past the server's budget,
 * and the owners holding the most of them; choosing one filters by it.
 */
export function LeaseCounts({ summary, failed, owner, onOwner }: { summary: LeaseSummary | undefined; failed: boolean; owner: string; onOwner: (owner: string) => void }) {
  if (!summary) return <p className="h-8 text-sm text-zinc-500 dark:text-zinc-400">{failed ? 'Counts are unavailable right now; the table below is not affected.' : 'Counting…'}</p>;
  return (
    <section aria-label="Lease counts" className="flex flex-wrap items-center gap-x-4 gap-y-2 text-sm">
      <p>
        <span className="text-lg font-semibold tabular-nums" data-testid="lease-total">
          {totalText(summary)}
        </span>{' '}
        <span className="text-zinc-600 dark:text-zinc-400">
          matching {summary.total === 1 && summary.exact ? 'lease' : 'leases'}
          {!summary.exact && <> (counted over the first {n(summary.examined)} routes)</>}
        </span>
      </p>
      {summary.owners.length > 0 && (
        <ul aria-label="Leases per owner" className="flex flex-wrap items-center gap-1.5">
          {summary.owners.map((o) => (
            <li key={o.owner_id}>
              <button
                type="button"
                aria-pressed={owner === o.owner_id}
                onClick={() => onOwner(owner === o.owner_id ? '' : o.owner_id)}
                title={owner === o.owner_id ? `Show every owner` : `Show only ${o.owner_id}'s leases`}
                className={cn(
                  'inline-flex max-w-[16rem] items-center gap-1.5 rounded-md border px-2 py-0.5 hover:bg-zinc-50 dark:hover:bg-zinc-800',
                  'border-zinc-200 dark:border-zinc-700 aria-pressed:border-teal-700 aria-pressed:bg-teal-50 dark:aria-pressed:border-teal-400 dark:aria-pressed:bg-teal-950',
                )}
              >
                <span className="truncate">{o.owner_id}</span>{' '}
                <span className="font-medium tabular-nums text-zinc-600 dark:text-zinc-300">{n(o.leases)}</span>
                <span className="sr-only"> {o.leases === 1 ? 'lease' : 'leases'}</span>
              </button>
            </li>
          ))}
          {summary.others > 0 && (
            <li className="px-1 text-zinc-600 dark:text-zinc-400">
              {summary.owner_count - summary.owners.length} other {summary.owner_count - summary.owners.length === 1 ? 'owner' : 'owners'}:{' '}
              <span className="tabular-nums">{n(summary.others)}</span>
            </li>
          )}
        </ul>
      )}
    </section>
  );
}
