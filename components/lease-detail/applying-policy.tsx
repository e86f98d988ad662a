'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { EffectivePolicy } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { DetailList, DetailRow, DetailSkeleton, Panel } from '@/components/lease-detail/detail-list';
import { queryKeys } from '@/components/query-keys';
import { ErrorAlert, isDenied } from '@/components/ui/states';

const ms = (n: number) => `${n.toLocaleString('en-US')} ms`;

/** The policies page narrowed to one policy's selector, with the route it was followed from. */
function policiesHref(route: string, selector: string | null): string {
  const q = new URLSearchParams();
  if (selector !== null) q.set('selector', selector);
  q.set('route', route);
  return `/policies?${q.toString()}`;
}

/**
 * The policy that applies to the route (the most specific matching selector
 * of the family, docs/policies.md) and the bounds its leases get, from
 * GET /api/v1/policies/effective; a link opens the policies page on it.
 */
export function ApplyingPolicy({ route, className }: { route: string; className?: string }) {
  const q = useQuery<EffectivePolicy>({
    queryKey: [...queryKeys.policies(), 'effective', route],
    queryFn: () => consoleClient().policies.explain(route),
    staleTime: 30_000,
  });
  const policy = q.data?.policy ?? null;
  const limits = q.data?.limits;
  return (
    <Panel
      title="Applying policy"
      description={q.data ? (policy ? 'The most specific policy whose selector matches this route' : 'No policy matches: the server’s global bounds apply') : undefined}
      actions={
        q.data && (
          <Link href={policiesHref(route, policy?.selector ?? null)} className="text-sm text-teal-800 underline-offset-2 hover:underline dark:text-teal-300">
            {policy ? 'Open in Policies' : 'Policies'}
          </Link>
        )
      }
      className={className}
    >
      {q.error ? (
        <div className="p-4">
          <ErrorAlert error={q.error} title={isDenied(q.error) ? 'Your grants do not let you read this route’s policy' : 'Could not load the applying policy'} />
        </div>
      ) : !limits ? (
        <DetailSkeleton rows={4} />
      ) : (
        <DetailList>
          <DetailRow label="Policy">
            <span className="font-mono break-all">{policy ? policy.selector : 'none (global bounds)'}</span>
          </DetailRow>
          <DetailRow label="TTL">
            <span className="tabular-nums">
              {ms(limits.ttl_min_ms)} to {ms(limits.ttl_max_ms)}, default {ms(limits.ttl_default_ms)}
            </span>
          </DetailRow>
          <DetailRow label="Max lifetime">
            <span className="tabular-nums">
              up to {ms(limits.max_lifetime_ms)}, default {ms(limits.max_lifetime_default_ms)}
            </span>
          </DetailRow>
          <DetailRow label="Lock-delay">
            <span className="tabular-nums">{limits.lock_delay_ms === 0 ? 'none' : ms(limits.lock_delay_ms)}</span>
          </DetailRow>
          <DetailRow label="Max waiters">
            <span className="tabular-nums">{limits.max_waiters.toLocaleString('en-US')}</span>
          </DetailRow>
        </DetailList>
      )}
    </Panel>
  );
}
