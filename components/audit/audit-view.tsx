'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import { ERROR_CODES } from '@/lib/error-codes';
import { isLeaseholdError, type AuditEvent } from '@/lib/client';
import { leaseDetailHref } from '@/components/lease-detail/route-from-params';
import { AuditFilters, type AuditFilter } from '@/components/audit/audit-filters';
import { eventTypeLook, isAuditEventType } from '@/components/audit/event-types';
import { consoleClient } from '@/components/console/client';
import { parsedGrants, useWhoami } from '@/components/console/use-whoami';
import { useCursorTrail, useUrlParams } from '@/components/console/use-url-params';
import { queryKeys } from '@/components/query-keys';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { Timestamp } from '@/components/ui/timestamp';
import { TrailPager } from '@/components/ui/pager';
import { RefreshButton } from '@/components/ui/refresh-button';
import { ShortId } from '@/components/ui/short-id';
import { DeniedPanel, EmptyState, ListLoadError, SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';

const PAGE_SIZE = 50;
/**
 * Ten fields in seven columns, so a row fits the console's width without
 * scrolling: each pair stacks what is read together (what happened and its
 * answer; who and which incarnation; which token and which request).
 */
const AUDIT_COLUMNS = ['Time', 'Event / result', 'Route', 'Owner / incarnation', 'Fencing token', 'Reason', 'Token / correlation id'] as const;
const ERROR_CODE_SET: ReadonlySet<string> = new Set(ERROR_CODES);


/**
 * The audit trail, newest first, filtered by route or selector, event type
 * and time, a page at a time. Every filter and the cursor are in the URL.
 * Not live: audit rows are not in the feed; Refresh reads again.
 */
export function AuditView() {
  const { params, set } = useUrlParams();
  const rawType = params.get('type');
  const filter: AuditFilter = {
    route: params.get('route') ?? '',
    type: isAuditEventType(rawType) ? rawType : '',
    since: params.get('since') ?? '',
    until: params.get('until') ?? '',
  };
  const cursor = params.get('cursor');
  const filterKey = JSON.stringify(filter);
  const trail = useCursorTrail(filterKey, cursor, (c) => set({ cursor: c }, { push: true }));

  const query = useQuery({
    queryKey: queryKeys.audit({ ...filter, cursor }),
    queryFn: () =>
      consoleClient().listAudit({
        route: filter.route || undefined,
        eventType: isAuditEventType(filter.type) ? filter.type : undefined,
        since: filter.since || undefined,
        until: filter.until || undefined,
        limit: PAGE_SIZE,
        cursor: cursor ?? undefined,
      }),
    placeholderData: keepPreviousData,
    retry: (count, e) => !isLeaseholdError(e) && count < 1,
  });
  const page = query.data;
  const filtered = filterKey !== JSON.stringify({ route: '', type: '', since: '', until: '' });

  return (
    <div className="space-y-4">
      <AuditFilters key={filterKey} value={filter} onApply={(f) => set({ ...f, cursor: null })} />

      {query.error && !page ? (
        <AuditError error={query.error} route={filter.route} onRoute={(route) => set({ route, cursor: null })} onFirstPage={() => set({ cursor: null })} onRetry={() => void query.refetch()} />
      ) : page && page.items.length === 0 && cursor === null ? (
        <EmptyState title={filtered ? 'No audit events match these filters' : 'No audit events yet'}>
          {filtered ? 'Widen the route, choose another event type or move the time range.' : 'Sessions, leases, operator actions and token changes are recorded here as they happen.'}
        </EmptyState>
      ) : (
        <>
          {query.error && (
            <AuditError error={query.error} route={filter.route} onRoute={(route) => set({ route, cursor: null })} onFirstPage={() => set({ cursor: null })} onRetry={() => void query.refetch()} />
          )}
          <div className="flex items-center justify-between gap-3">
            <p className="text-sm text-zinc-600 dark:text-zinc-400">Newest first. Times in your time zone; hover a time for its UTC instant.</p>
            <RefreshButton busy={query.isFetching} onClick={() => void query.refetch()} />
          </div>
          <Table aria-label="Audit events" aria-busy={query.isFetching} className={cn(query.isPlaceholderData && 'opacity-60')}>
            <THead>
              <tr>
                {AUDIT_COLUMNS.map((c) => (
                  <Th key={c} className={c === 'Fencing token' ? 'w-20 text-right whitespace-normal!' : undefined}>
                    {c}
                  </Th>
                ))}
              </tr>
            </THead>
            <TBody>{page ? page.items.map((e) => <AuditRow key={e.id} event={e} />) : <SkeletonRows cols={AUDIT_COLUMNS.length} />}</TBody>
          </Table>
          {page && (
            <TrailPager
              summary={page.items.length === 0 ? 'No more events.' : `${trail.page ? `Page ${trail.page} · ` : ''}${page.items.length} event${page.items.length === 1 ? '' : 's'}`}
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

const dash = <span className="text-zinc-600 dark:text-zinc-400">—</span>;

function AuditRow({ event: e }: { event: AuditEvent }) {
  const look = eventTypeLook(e.event_type);
  const href = e.route ? leaseDetailHref(e.route) : undefined;
  const failed = ERROR_CODE_SET.has(e.result);
  return (
    <tr className={cn(look.notable && (look.tone === 'bad' ? 'bg-red-50/60 dark:bg-red-950/25' : 'bg-amber-50/70 dark:bg-amber-950/25'))}>
      <Td className="align-top text-xs whitespace-nowrap text-zinc-700 tabular-nums dark:text-zinc-300">
        <Timestamp at={e.time} format="date" />
      </Td>
      <Td className="align-top">
        <Badge tone={look.tone} title={e.event_type} className={cn('whitespace-nowrap', look.notable && 'font-semibold')}>
          {look.label}
        </Badge>
        <div className={cn('mt-1 font-mono text-xs whitespace-nowrap', failed ? 'text-red-700 dark:text-red-400' : 'text-zinc-500 dark:text-zinc-400')}>
          <span className="sr-only">result </span>
          {e.result}
        </div>
      </Td>
      <Td className="min-w-52 align-top font-mono text-xs wrap-anywhere">
        {e.route ? (
          href ? (
            <Link href={href} prefetch={false} className="rounded text-teal-700 underline-offset-2 hover:underline dark:text-teal-400">
              {e.route}
            </Link>
          ) : (
            e.route
          )
        ) : (
          dash
        )}
      </Td>
      <Td className="min-w-28 align-top">
        <div className="wrap-anywhere">{e.owner_id ?? dash}</div>
        {e.holder_incarnation && (
          <div className="mt-0.5">
            <span className="sr-only">incarnation </span>
            <ShortId id={e.holder_incarnation} />
          </div>
        )}
      </Td>
      <Td className="text-right align-top font-mono text-xs tabular-nums">{e.fencing_token ?? dash}</Td>
      <Td className="min-w-56 align-top break-words whitespace-pre-wrap">{e.reason ?? dash}</Td>
      <Td className="align-top text-xs whitespace-nowrap">
        {e.token_id ? <ShortId id={e.token_id} /> : dash}
        <div className="mt-0.5 font-mono text-zinc-500 select-all dark:text-zinc-400" title="Correlation id">
          <span className="sr-only">correlation id </span>
          {e.correlation_id}
        </div>
      </Td>
    </tr>
  );
}

function AuditError({
  error,
  route,
  onRoute,
  onFirstPage,
  onRetry,
}: {
  error: unknown;
  route: string;
  onRoute: (route: string) => void;
  onFirstPage: () => void;
  onRetry: () => void;
}) {
  const me = useWhoami().data;
  if (isLeaseholdError(error, 'access_denied')) {
    // Reading audit needs one admin grant containing the filter; offer the reader's own admin selectors.
    const adminSelectors = me ? parsedGrants(me).filter((g) => g.permission === 'admin' && g.selector !== route).map((g) => g.selector) : [];
    return (
      <div className="space-y-3">
        <DeniedPanel error={error} what={`read the audit trail of ${route || 'every route (lease://**)'}: that needs an admin grant containing it`} />
        {adminSelectors.length > 0 && (
          <div className="flex flex-wrap items-center gap-2 text-sm text-zinc-600 dark:text-zinc-400">
            Your admin grants cover:
            {adminSelectors.map((s) => (
              <Button key={s} size="sm" onClick={() => onRoute(s)} className="font-mono">
                {s}
              </Button>
            ))}
          </div>
        )}
      </div>
    );
  }
  return <ListLoadError error={error} what="Audit events" onFirstPage={onFirstPage} onRetry={onRetry} />;
}
