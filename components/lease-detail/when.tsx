'use client';

import { formatAgo, formatTime } from '@/components/ui/time';

/** A moment: local clock time, how long ago (or how far ahead), the exact ISO time on hover. */
export function When({ iso, now, relative = 'ago' }: { iso: string; now: number; relative?: 'ago' | 'none' }) {
  return (
    <time dateTime={iso} title={iso} className="tabular-nums">
      {formatTime(iso, now || undefined)}
      {relative === 'ago' && now > 0 && <span className="text-zinc-500 dark:text-zinc-400"> · {formatAgo(iso, now)}</span>}
    </time>
  );
}
