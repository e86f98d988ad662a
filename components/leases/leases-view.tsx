'use client';

import Link from 'next/link';
import { useSearchParams } from 'next/navigation';
import { isLeaseholdError } from '@/lib/client';
import { can, useWhoami } from '@/components/console/use-whoami';
import { FeedLostBanner } from '@/components/feed/feed-lost-banner';
import { FeedStatus } from '@/components/feed/feed-status';
import { LeasesTable } from '@/components/leases/leases-table';
import { SelectorForm } from '@/components/leases/selector-form';
import { startFirstPageEarly, useLiveLeases } from '@/components/leases/use-live-leases';
import { LeaseCounts, useLeaseSummary } from '@/components/leases/lease-counts';
import { useLiveLeasesStore } from '@/components/leases/live-store';
import { LockDelayTable, useLockDelays } from '@/components/leases/lock-delay-table';
import { OnCallFilters } from '@/components/leases/on-call-filters';
import { toSearch, useLeaseViewParams, viewKey, type LeaseViewParams } from '@/components/leases/view-params';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { TrailPager } from '@/components/ui/pager';
import { DeniedPanel, EmptyState, ListLoadError, PageHeader } from '@/components/ui/states';
import { useCursorTrail } from '@/components/console/use-url-params';

startFirstPageEarly();

/** The widest selector the caller may read: its first grant's, else everything (the server will say no). */
function defaultSelectorOf(grants: readonly string[]): string {
  const first = grants[0];
  return first ? first.slice(0, first.lastIndexOf('#')) : 'lease://**';
}

/** The on-call filters in words ("expiring within 30 s, with waiters"), or '' when none is on. */
function activeFilters(p: LeaseViewParams): string {
  return [p.expiring !== null && `expiring within ${p.expiring} s`, p.waiters && 'with waiters', p.asked && 'asked to release'].filter(Boolean).join(', ');
}

export function LeasesView() {
  const me = useWhoami().data;
  const defaultSelector = defaultSelectorOf(me?.grants ?? []);
  const [params, go] = useLeaseViewParams(defaultSelector);
  // A selector in the URL needs no whoami first: list at once, in parallel with it.
  const explicit = useSearchParams().has('selector');
  const ready = !!me || explicit;
  const { query, live, nextCursor, refresh } = useLiveLeases(params, ready && !params.delay);
  // Counted once the page is on screen: the first page is what an operator waits for.
  // Re-counted when the feed reports a change for the view (not on a page turn: the counts do not depend on the page).
  const lastChange = useLiveLeasesStore((s) => s.events.at(-1)?.revision);
  const summary = useLeaseSummary(params, ready && !params.delay && query.data !== undefined && !query.isError, lastChange);
  const delays = useLockDelays(params, ready && params.delay);
  const view = viewKey(params);
  const trail = useCursorTrail(view, params.cursor, (cursor) => go({ ...params, cursor }));
  const readable = can(me, params.selector, 'read');

  const error = params.delay ? delays.error : query.error;
  const denied = isLeaseholdError(error, 'access_denied');
  const rows = live?.rows;

  return (
    <div className="space-y-6">
      <PageHeader
        title="Leases"
        description="Held leases matching a selector, live: rows appear, renew and disappear as the feed reports them."
      >
        <FeedStatus />
      </PageHeader>

      <SelectorForm params={params} onApply={go} />
      <OnCallFilters params={params} onApply={go} />

      <FeedLostBanner onRefresh={refresh} />

      {params.holder && (
        <div className="flex items-center gap-2 text-sm">
          <span className="text-zinc-600 dark:text-zinc-400">Holder incarnation</span>
          <Badge className="font-mono">{params.holder}</Badge>
          <Button size="sm" variant="ghost" onClick={() => go({ ...params, holder: '', cursor: null })}>
            Clear holder filter
          </Button>
        </div>
      )}

      {denied ? (
        <div className="space-y-3">
          <DeniedPanel error={error} what={`list ${params.selector}`} />
          {me && me.grants.length > 0 && (
            <div className="text-sm">
              <p className="text-zinc-600 dark:text-zinc-400">Selectors your grants cover whole:</p>
              <ul className="mt-1 flex flex-wrap gap-2">
                {me.grants.map((g) => {
                  const sel = g.slice(0, g.lastIndexOf('#'));
                  return (
                    <li key={g}>
                      <Link className="font-mono text-teal-800 underline-offset-2 hover:underline dark:text-teal-300" href={`/leases${toSearch({ ...params, selector: sel, cursor: null }, defaultSelector)}`}>
                        {sel}
                      </Link>
                    </li>
                  );
                })}
              </ul>
            </div>
          )}
        </div>
      ) : error ? (
        <ListLoadError
          error={error}
          what={params.delay ? 'Routes in lock-delay' : 'Leases'}
          onFirstPage={() => go({ ...params, cursor: null })}
          onRetry={params.delay ? () => void delays.refetch() : refresh}
        />
      ) : params.delay ? (
        <>
          <p className="text-sm text-zinc-600 dark:text-zinc-400">
            Free routes under <span className="font-mono">{params.selector}</span> that accept no new holder until their lock-delay ends. They are not leases, so the
            lease filters do not apply; the list is re-read every few seconds.
          </p>
          {delays.data && delays.data.items.length === 0 && !delays.isFetching ? (
            <EmptyState title="No route is in lock-delay">
              Nothing under <span className="font-mono">{params.selector}</span> is waiting out a lock-delay{params.cursor ? ' past this point.' : ' right now.'}
            </EmptyState>
          ) : (
            <LockDelayTable items={delays.data?.items} loading={delays.isPending} dimmed={delays.isPlaceholderData} />
          )}
          <TrailPager
            summary={delays.data && trail.page !== undefined && <span>Page {trail.page}</span>}
            trail={trail}
            nextCursor={delays.isPlaceholderData ? null : (delays.data?.next_cursor ?? null)}
            busy={delays.isPlaceholderData}
          />
        </>
      ) : (
        <>
          <LeaseCounts summary={summary.data} failed={summary.isError} owner={params.owner} onOwner={(owner) => go({ ...params, owner, cursor: null })} />
          <div className="flex min-h-8 flex-wrap items-center justify-between gap-3 text-sm">
            <p className="text-zinc-600 dark:text-zinc-400" aria-live="polite">
              {rows ? `${rows.length} ${rows.length === 1 ? 'lease' : 'leases'} on this page, in route order` : 'Loading…'}
              {!readable && me && ' · your grants may not cover this selector'}
            </p>
            {live && live.newElsewhere > 0 && (
              <Button size="sm" variant="secondary" onClick={refresh} aria-label={`${live.newElsewhere} new leases: refresh`}>
                <Badge tone="info">{live.newElsewhere} new</Badge>
                leases outside this page · refresh
              </Button>
            )}
          </div>
          {rows && rows.length === 0 && !query.isFetching ? (
            <EmptyState title="No held leases match">
              Nothing holds a lease under <span className="font-mono">{params.selector}</span>
              {params.owner && (
                <>
                  {' '}for owner <span className="font-mono">{params.owner}</span>
                </>
              )}
              {activeFilters(params) && <> that is {activeFilters(params)}</>}
              {params.cursor ? ' past this point.' : ' right now. New acquisitions will appear here.'}
            </EmptyState>
          ) : (
            <LeasesTable rows={rows} loading={query.isPending} dimmed={query.isPlaceholderData} />
          )}
          <TrailPager
            summary={
              live && (
                <span>
                  {trail.page !== undefined && `Page ${trail.page} · `}
                  <span className="font-mono text-xs">revision {live.revision}</span>
                </span>
              )
            }
            trail={trail}
            nextCursor={nextCursor}
            busy={query.isPlaceholderData}
          />
        </>
      )}
    </div>
  );
}
