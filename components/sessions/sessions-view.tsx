'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { useState, type ReactNode } from 'react';
import { isLeaseholdError, type SessionView } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { useCursorTrail, useUrlParams } from '@/components/console/use-url-params';
import { queryKeys } from '@/components/query-keys';
import { SessionExpiry } from '@/components/sessions/session-expiry';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { formatDuration } from '@/components/ui/duration';
import { controlVariants } from '@/components/ui/field';
import { TrailPager } from '@/components/ui/pager';
import { RefreshButton } from '@/components/ui/refresh-button';
import { ShortId } from '@/components/ui/short-id';
import { DeniedPanel, EmptyState, ListLoadError, SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { formatAgo, isoOf } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';
import { useNow } from '@/components/ui/use-now';

const PAGE_SIZE = 50;
const COLS = 8;

/**
 * A listed session: the view plus its last batched calls (CONTRACT §20), which
 * the server sends in the sessions list (`ListedSession`); absent from an older server.
 */
export type ListedSession = SessionView & {
  last_batch_renewal?: { at: string; renewed: number; lost: number } | null;
  last_batch_acquire?: { at: string; acquired: number } | null;
};

/** Where an incarnation's leases are listed: LIST over everything, narrowed to that holder. */
function leasesOfHolderHref(holderIncarnation: string): string {
  return `/leases?selector=${encodeURIComponent('lease://**')}&holder=${encodeURIComponent(holderIncarnation)}`;
}

/**
 * The family's open sessions, a page at a time. Sessions are not in the feed,
 * so this view does not pretend to be live: it refetches when the tab regains
 * focus and on Refresh, and says when it was read.
 */
export function SessionsView() {
  const { params, set } = useUrlParams();
  const owner = params.get('owner') ?? '';
  const cursor = params.get('cursor');
  const trail = useCursorTrail(owner, cursor, (c) => set({ cursor: c }, { push: true }));

  const query = useQuery({
    queryKey: queryKeys.sessions({ owner, cursor }),
    queryFn: () => consoleClient().listSessions({ ownerId: owner || undefined, limit: PAGE_SIZE, cursor: cursor ?? undefined }),
    placeholderData: keepPreviousData,
    retry: (count, e) => !isLeaseholdError(e) && count < 1,
  });

  const page = query.data;
  const busy = query.isFetching;

  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <OwnerFilter key={owner} owner={owner} onApply={(o) => set({ owner: o, cursor: null })} />
        <div className="flex items-center gap-3">
          {query.dataUpdatedAt > 0 && <ReadAt at={query.dataUpdatedAt} />}
          <RefreshButton busy={busy} onClick={() => void query.refetch()} />
        </div>
      </div>

      {query.error && !page ? (
        <SessionsError error={query.error} onFirstPage={() => set({ cursor: null })} onRetry={() => void query.refetch()} />
      ) : page && page.items.length === 0 && cursor === null ? (
        <EmptyState title="No open sessions">
          {owner ? (
            <>
              No session of owner <span className="font-mono">{owner}</span> is open in this family.{' '}
              <button type="button" className="font-medium text-teal-700 underline-offset-2 hover:underline dark:text-teal-400" onClick={() => set({ owner: null, cursor: null })}>
                Show every owner
              </button>
            </>
          ) : (
            'Workers open a session before they acquire leases; none is open right now.'
          )}
        </EmptyState>
      ) : (
        <>
          {query.error && <SessionsError error={query.error} onFirstPage={() => set({ cursor: null })} onRetry={() => void query.refetch()} />}
          <Table aria-label="Sessions" aria-busy={busy} className={cn(query.isPlaceholderData && 'opacity-60')}>
            <THead>
              <tr>
                <Th>Owner</Th>
                <Th>Incarnation</Th>
                <Th className="text-right">Leases</Th>
                <Th>Last batched renewal</Th>
                <Th>Last batch acquire</Th>
                <Th>Created</Th>
                <Th>Expires</Th>
                <Th className="text-right">TTL</Th>
              </tr>
            </THead>
            <TBody>
              {page ? page.items.map((s) => <SessionRow key={s.holder_incarnation} session={s as ListedSession} />) : <SkeletonRows cols={COLS} />}
            </TBody>
          </Table>
          {page && (
            <TrailPager
              summary={
                page.items.length === 0
                  ? 'No more sessions.'
                  : `${trail.page ? `Page ${trail.page} · ` : ''}${page.items.length} session${page.items.length === 1 ? '' : 's'}${owner ? ` of ${owner}` : ''}`
              }
              trail={trail}
              nextCursor={page.next_cursor}
              busy={query.isPlaceholderData}
            />
          )}
        </>
      )}
    </div>
  );
}

function SessionRow({ session: s }: { session: ListedSession }) {
  const now = useNow();
  return (
    <tr className="hover:bg-zinc-50/60 dark:hover:bg-zinc-900/40">
      <Td className="font-medium">{s.owner_id}</Td>
      <Td>
        <ShortId id={s.holder_incarnation} copyLabel="Copy incarnation" />
      </Td>
      <Td className="text-right whitespace-nowrap">
        <Link
          href={leasesOfHolderHref(s.holder_incarnation)}
          prefetch={false}
          title={`Leases held by ${s.holder_incarnation}`}
          className="rounded font-medium text-teal-700 tabular-nums underline-offset-2 hover:underline dark:text-teal-400"
        >
          {s.lease_count} {s.lease_count === 1 ? 'lease' : 'leases'}
        </Link>
      </Td>
      <Td className="whitespace-nowrap">
        <LastBatch
          batch={s.last_batch_renewal}
          now={now}
          what={(b) => (
            <>
              {b.renewed} renewed
              {' · '}
              <span className={cn(b.lost > 0 && 'font-medium text-amber-800 dark:text-amber-300')}>{b.lost} lost</span>
            </>
          )}
        />
      </Td>
      <Td className="whitespace-nowrap">
        <LastBatch batch={s.last_batch_acquire} now={now} what={(b) => `${b.acquired} ${b.acquired === 1 ? 'lease' : 'leases'}`} />
      </Td>
      <Td className="whitespace-nowrap">
        <Timestamp at={s.created_at} now={now} />
        {now > 0 && <span className="ml-2 text-xs text-zinc-500 dark:text-zinc-400">{formatAgo(s.created_at, now)}</span>}
      </Td>
      <Td className="whitespace-nowrap">
        <SessionExpiry expiresAt={s.expires_at} now={now} />
      </Td>
      <Td className="text-right text-zinc-600 tabular-nums dark:text-zinc-400">{formatDuration(s.ttl_ms)}</Td>
    </tr>
  );
}

/** A batched call's outcome over its time ("3s ago"); "never" before the first. */
function LastBatch<B extends { at: string }>({ batch, now, what }: { batch: B | null | undefined; now: number; what: (b: B) => ReactNode }) {
  if (!batch) return <span className="text-zinc-500 dark:text-zinc-400">never</span>;
  return (
    <div className="leading-tight">
      <div className="tabular-nums">{what(batch)}</div>
      <div className="text-xs text-zinc-500 dark:text-zinc-400">
        <Timestamp at={batch.at} now={now} />
        {now > 0 && <span className="ml-2">{formatAgo(batch.at, now)}</span>}
      </div>
    </div>
  );
}

function OwnerFilter({ owner, onApply }: { owner: string; onApply: (owner: string) => void }) {
  const [draft, setDraft] = useState(owner);
  return (
    <form
      role="search"
      aria-label="Filter sessions"
      className="flex items-end gap-2"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(draft.trim());
      }}
    >
      <div>
        <label htmlFor="sessions-owner" className="mb-1.5 block text-sm font-medium text-zinc-800 dark:text-zinc-200">
          Owner
        </label>
        <input
          id="sessions-owner"
          type="search"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          placeholder="Any owner"
          autoComplete="off"
          spellCheck={false}
          className={controlVariants({ className: 'w-64' })}
        />
      </div>
      <Button type="submit">Filter</Button>
      {owner && (
        <Button variant="ghost" onClick={() => onApply('')}>
          Clear
        </Button>
      )}
    </form>
  );
}

function ReadAt({ at }: { at: number }) {
  const now = useNow();
  return (
    <span className="text-xs text-zinc-500 dark:text-zinc-400" title={isoOf(at)}>
      Read {now > 0 ? formatAgo(at, now) : 'just now'}
    </span>
  );
}

function SessionsError({ error, onFirstPage, onRetry }: { error: unknown; onFirstPage: () => void; onRetry: () => void }) {
  if (isLeaseholdError(error, 'access_denied')) return <DeniedPanel error={error} what="list sessions (that needs read on lease://**)" />;
  return <ListLoadError error={error} what="Sessions" onFirstPage={onFirstPage} onRetry={onRetry} />;
}
