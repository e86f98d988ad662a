'use client';

import { cn } from '@/components/ui/cn';
import { formatRemaining } from '@/components/ui/time';
import { useNow } from '@/components/ui/use-now';

/** Time left until `expiresAt`, ticking with the tab's one clock; amber in the last ten seconds. */
export function Countdown({ expiresAt, className }: { expiresAt: string; className?: string }) {
  const now = useNow();
  if (now === 0) return <span className={className}>…</span>;
  const left = Date.parse(expiresAt) - now;
  return (
    <time
      dateTime={expiresAt}
      title={expiresAt}
      className={cn('tabular-nums', left <= 0 ? 'text-red-600 dark:text-red-400' : left < 10_000 && 'text-amber-600 dark:text-amber-400', className)}
    >
      {formatRemaining(left)}
    </time>
  );
}
