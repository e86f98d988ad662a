'use client';

import Link from 'next/link';
import type { LeaseView } from '@/lib/client';
import { CopyButton } from '@/components/ui/copy-button';
import { formatRemaining } from '@/components/ui/time';
import { useNow } from '@/components/ui/use-now';
import { cn } from '@/components/ui/cn';
import { DetailList, DetailRow } from '@/components/lease-detail/detail-list';
import { formatDuration } from '@/components/lease-detail/format';
import { When } from '@/components/lease-detail/when';

const linkClass = 'text-teal-700 underline-offset-2 hover:underline dark:text-teal-400';

/**
 * Every field of the held lease, as the API reports it; expiry counts down
 * live. `scope` is the widest selector the reader may list, for the links to
 * the owner's and the session's other leases.
 */
export function LeaseFields({ lease, renewed, scope }: { lease: LeaseView; renewed: boolean; scope: string }) {
  const now = useNow();
  const leasesHref = (q: Record<string, string>) => `/leases?${new URLSearchParams({ selector: scope, ...q }).toString()}`;
  const remaining = Date.parse(lease.expires_at) - now;
  const capped = lease.expires_at === lease.max_expires_at;
  return (
    <DetailList>
      <DetailRow label="Route" hint="route">
        <span className="font-mono break-all">{lease.route}</span>
      </DetailRow>
      <DetailRow label="Owner" hint="owner_id">
        <span className="font-mono break-all">{lease.owner_id}</span>{' '}
        <Link href={leasesHref({ owner: lease.owner_id })} className={cn(linkClass, 'ml-2 text-xs')}>
          leases of this owner
        </Link>
      </DetailRow>
      <DetailRow label="Holder incarnation" hint="holder_incarnation: the holder's session">
        <span className="inline-flex max-w-full items-center gap-1 align-middle">
          <span className="font-mono break-all">{lease.holder_incarnation}</span>
          <CopyButton value={lease.holder_incarnation} label="Copy holder incarnation" />
        </span>{' '}
        <Link href={leasesHref({ holder: lease.holder_incarnation })} className={cn(linkClass, 'ml-1 text-xs')}>
          leases of this session
        </Link>
      </DetailRow>
      <DetailRow label="Fencing token" hint="fencing_token">
        <span className="font-mono tabular-nums">{lease.fencing_token}</span>
      </DetailRow>
      <DetailRow label="Acquired" hint="acquired_at">
        <When iso={lease.acquired_at} now={now} />
      </DetailRow>
      <DetailRow label="Last renewed" hint="renewed_at">
        <When iso={lease.renewed_at} now={now} />
      </DetailRow>
      <DetailRow label="Expires" hint="expires_at" highlight={renewed}>
        {now > 0 && (
          <span className={cn('mr-2 font-medium tabular-nums', remaining <= 0 ? 'text-red-700 dark:text-red-400' : remaining < 5_000 && 'text-amber-700 dark:text-amber-400')}>
            {remaining > 0 ? `in ${formatRemaining(remaining)}` : 'expired'}
          </span>
        )}
        <span className="text-zinc-500 dark:text-zinc-400">
          at <When iso={lease.expires_at} now={now} relative="none" />
          {capped && ' · at its lifetime limit'}
        </span>
      </DetailRow>
      <DetailRow label="Lifetime limit" hint="max_expires_at: renewals cannot extend the lease past this">
        <When iso={lease.max_expires_at} now={now} relative="none" />
        {now > 0 && <span className="text-zinc-500 dark:text-zinc-400"> · {formatRemaining(Date.parse(lease.max_expires_at) - now)} left</span>}
      </DetailRow>
      <DetailRow label="TTL" hint="ttl_ms">
        {formatDuration(lease.ttl_ms)} <span className="font-mono text-xs text-zinc-500 dark:text-zinc-400">({lease.ttl_ms} ms)</span>
      </DetailRow>
      <DetailRow label="Renewals" hint="renewal_count" highlight={renewed}>
        <span className="font-mono tabular-nums">{lease.renewal_count}</span>
      </DetailRow>
      <DetailRow label="Revision" hint="revision: of the change that created this lease">
        <span className="font-mono tabular-nums">{lease.revision}</span>
      </DetailRow>
      <DetailRow label="Waiters" hint="waiters: clients queued for this route">
        <span className="font-mono tabular-nums">{lease.waiters}</span>
        {lease.waiters > 0 && <span className="text-zinc-500 dark:text-zinc-400"> · the first is granted the lease when it is freed</span>}
      </DetailRow>
      <DetailRow label="Metadata" hint="metadata">
        <Metadata value={lease.metadata} />
      </DetailRow>
    </DetailList>
  );
}

function Metadata({ value }: { value: LeaseView['metadata'] }) {
  const entries = value ? Object.entries(value) : [];
  if (entries.length === 0) return <span className="text-zinc-500 dark:text-zinc-400">none</span>;
  return (
    <ul className="flex flex-wrap gap-1.5">
      {entries.map(([k, v]) => (
        <li key={k} className="rounded-md bg-zinc-100 px-2 py-0.5 font-mono text-xs dark:bg-zinc-800">
          <span className="text-zinc-500 dark:text-zinc-400">{k}</span>
          {' = '}
          {JSON.stringify(v)}
        </li>
      ))}
    </ul>
  );
}
