'use client';

import type { ReactNode } from 'react';
import type { LeaseView } from '@/lib/client';
import { Badge } from '@/components/ui/badge';
import { isoOf } from '@/components/ui/time';
import { useNow } from '@/components/ui/use-now';

/** Whole seconds left until `until` (epoch ms), rounded up; 0 when past or unknown. */
export function secondsLeft(until: number | null | undefined, now: number): number {
  if (until === null || until === undefined || now === 0) return 0;
  return Math.max(0, Math.ceil((until - now) / 1_000));
}

/**
 * The badges beside a route's heading, each true of the route now: "Held",
 * or for a free route "Lock-delay 42 s" (live) while nobody can acquire it
 * and "Free" only once anybody can; "Release requested" and "N waiting" on a
 * held lease. Nothing until the route has been read (and, when free, its
 * delay), so a route in lock-delay never flashes "Free".
 */
export function RouteStatus({ lease, delayUntil }: { lease: LeaseView | null | undefined; delayUntil: number | null | undefined }) {
  const now = useNow();
  const badges: Array<[string, ReactNode]> = [];
  if (lease) {
    badges.push(['held', <Badge tone="good">Held</Badge>]);
    if (lease.release_request) badges.push(['asked', <Badge tone="info">Release requested</Badge>]);
    if (lease.waiters > 0) badges.push(['waiters', <Badge tone="warn">{lease.waiters} waiting</Badge>]);
  } else if (lease === null && delayUntil !== undefined) {
    const left = secondsLeft(delayUntil, now);
    badges.push(
      left > 0
        ? [
            'delay',
            <Badge tone="warn">
              <time dateTime={isoOf(delayUntil!)} title={isoOf(delayUntil!)} className="tabular-nums">
                Lock-delay {left} s
              </time>
            </Badge>,
          ]
        : ['free', <Badge>Free</Badge>],
    );
  }
  if (badges.length === 0) return null;
  return (
    <ul aria-label="Route status" className="flex flex-wrap items-center gap-2">
      {badges.map(([key, badge]) => (
        <li key={key}>{badge}</li>
      ))}
    </ul>
  );
}
