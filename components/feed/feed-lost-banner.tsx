'use client';

import { useFeedStore } from '@/components/feed/feed-store';

/** Said once per page when live updates have stopped, so nobody trusts a frozen table. */
export function FeedLostBanner({ onRefresh }: { onRefresh?: () => void }) {
  const state = useFeedStore((s) => s.state);
  const detail = useFeedStore((s) => s.detail);
  if (state !== 'stale' && state !== 'reconnecting') return null;
  const stale = state === 'stale';
  return (
    <div
      className={
        stale
          ? 'flex flex-wrap items-center justify-between gap-3 rounded-lg border border-red-200 bg-red-50 px-4 py-2.5 text-sm text-red-900 dark:border-red-900 dark:bg-red-950/50 dark:text-red-200'
          : 'flex flex-wrap items-center justify-between gap-3 rounded-lg border border-amber-200 bg-amber-50 px-4 py-2.5 text-sm text-amber-900 dark:border-amber-900 dark:bg-amber-950/50 dark:text-amber-200'
      }
    >
      <p>
        <span className="font-medium">{stale ? 'Live updates stopped.' : 'Reconnecting to the live feed…'}</span>{' '}
        {stale ? 'What you see may be out of date' : 'The table shows the last state received'}
        {detail ? ` (${detail}).` : '.'}
      </p>
      {onRefresh && (
        <button type="button" onClick={onRefresh} className="font-medium underline underline-offset-2">
          Refresh now
        </button>
      )}
    </div>
  );
}
