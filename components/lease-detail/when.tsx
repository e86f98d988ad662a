'use client';

import { formatAgo } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';

/** A moment: the console's clock time (components/ui/time.ts), how long ago, the exact ISO time on hover. */
export function When({ iso, now, relative = 'ago' }: { iso: string; now: number; relative?: 'ago' | 'none' }) {
  return (
    <span className="tabular-nums">
      <Timestamp at={iso} now={now} />
      {relative === 'ago' && now > 0 && <span className="text-zinc-500 dark:text-zinc-400"> · {formatAgo(iso, now)}</span>}
    </span>
  );
}
