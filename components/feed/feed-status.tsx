'use client';

import { useFeedStore } from '@/components/feed/feed-store';
import { cn } from '@/components/ui/cn';

// Connecting reads as `reconnecting`, the contract's word for "not live yet".
const LOOK = {
  idle: { text: 'reconnecting', dot: 'bg-zinc-400', ring: 'ring-zinc-200 dark:ring-zinc-700' },
  connecting: { text: 'reconnecting', dot: 'bg-sky-500 animate-pulse', ring: 'ring-sky-200 dark:ring-sky-800' },
  live: { text: 'live', dot: 'bg-emerald-500', ring: 'ring-emerald-200 dark:ring-emerald-800' },
  reconnecting: { text: 'reconnecting', dot: 'bg-amber-500 animate-pulse', ring: 'ring-amber-200 dark:ring-amber-800' },
  stale: { text: 'stale', dot: 'bg-red-500', ring: 'ring-red-200 dark:ring-red-800' },
} as const;

/** The Feed badge (docs/console.md): the stream's state and the newest revision it has seen. */
export function FeedStatus({ className }: { className?: string }) {
  const state = useFeedStore((s) => s.state);
  const revision = useFeedStore((s) => s.revision);
  const detail = useFeedStore((s) => s.detail);
  const look = LOOK[state];
  return (
    <span
      role="status"
      aria-label="Feed"
      title={detail ?? undefined}
      className={cn(
        'inline-flex items-center gap-2 rounded-full px-2.5 py-1 text-xs font-medium text-zinc-700 ring-1 ring-inset dark:text-zinc-300',
        look.ring,
        className,
      )}
    >
      <span aria-hidden="true" className={cn('size-2 rounded-full', look.dot)} />
      <span>Feed {look.text}</span>
      {revision !== null && <span className="font-mono text-zinc-500 dark:text-zinc-400">rev {revision}</span>}
      {detail && state !== 'live' && <span className="sr-only">: {detail}</span>}
    </span>
  );
}
