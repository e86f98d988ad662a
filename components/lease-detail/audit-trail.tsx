'use client';

import { useState } from 'react';
import type { AuditEvent } from '@/lib/client';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { DeniedPanel, ErrorAlert, isDenied, SkeletonRows } from '@/components/ui/states';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';
import { useNow } from '@/components/ui/use-now';
import { Panel } from '@/components/lease-detail/detail-list';
import { eventLabel, isOperatorEvent, resultTone } from '@/components/lease-detail/format';
import { AUDIT_PAGE_SIZE, useAuditTrail } from '@/components/lease-detail/use-lease-detail';
import { When } from '@/components/lease-detail/when';

const COLUMNS = 7;

/**
 * The route's audit trail, newest first as the API gives it, a page at a
 * time through its cursors. Reading it needs `admin` on the route: without
 * it the panel says so instead of asking (a refused read is itself audited).
 */
export function AuditTrail({ route, allowed }: { route: string; allowed: boolean }) {
  // The cursors of the pages seen, so Newer goes back the way Older came.
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const audit = useAuditTrail(route, cursor, allowed);
  const now = useNow();
  const page = audit.data;
  const older = audit.isPlaceholderData ? null : (page?.next_cursor ?? null);

  return (
    <Panel
      title="Audit trail"
      description={allowed ? 'Every call on this route, newest first' : undefined}
      actions={
        allowed && (
          <Button size="sm" variant="ghost" aria-label="Refresh audit trail" onClick={() => void audit.refetch()} disabled={audit.isFetching}>
            {audit.isFetching && !audit.isPending ? 'Refreshing…' : 'Refresh'}
          </Button>
        )
      }
    >
      {!allowed ? (
        <p className="px-4 py-6 text-sm text-zinc-600 dark:text-zinc-400">
          The audit trail needs an <span className="font-mono">admin</span> grant on this route; your token can read the lease but not its history.
        </p>
      ) : audit.error && !page ? (
        <div className="p-4">
          {isDenied(audit.error) ? <DeniedPanel error={audit.error} what="read this route's audit trail" /> : <ErrorAlert error={audit.error} title="Could not read the audit trail" />}
        </div>
      ) : (
        <>
          {audit.error && <ErrorAlert error={audit.error} title="Could not refresh the audit trail" className="m-4" />}
          <div className="[&_td:first-child]:pl-4 [&_td:last-child]:pr-4 [&_th:first-child]:pl-4 [&_th:last-child]:pr-4 [&>div]:rounded-none [&>div]:border-0">
            <Table aria-label="Audit trail" aria-busy={audit.isFetching}>
              <THead>
                <tr>
                  <Th>Time</Th>
                  <Th>Event</Th>
                  <Th>Result</Th>
                  <Th>Fencing token</Th>
                  <Th>Reason</Th>
                  <Th>Actor token</Th>
                  <Th>Correlation id</Th>
                </tr>
              </THead>
              <TBody className={cn(audit.isPlaceholderData && 'opacity-60')}>
                {!page ? (
                  <SkeletonRows rows={5} cols={COLUMNS} />
                ) : page.items.length === 0 ? (
                  <tr>
                    <Td colSpan={COLUMNS} className="py-8 text-center text-zinc-600 dark:text-zinc-400">
                      No audit events for this route{cursor ? ' on this page' : ' yet'}.
                    </Td>
                  </tr>
                ) : (
                  page.items.map((e) => <AuditRow key={e.id} event={e} now={now} />)
                )}
              </TBody>
            </Table>
          </div>
          <nav aria-label="Audit trail pages" className="flex items-center justify-between gap-3 border-t border-zinc-200 px-4 py-2.5 text-sm dark:border-zinc-800">
            <span className="text-zinc-500 dark:text-zinc-400">
              Page {cursors.length}
              {page && ` · ${page.items.length} event${page.items.length === 1 ? '' : 's'}`}
              {` · ${AUDIT_PAGE_SIZE} a page`}
            </span>
            <span className="flex gap-2">
              <Button size="sm" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
                Newer events
              </Button>
              <Button size="sm" disabled={older === null} onClick={() => older !== null && setCursors((c) => [...c, older])}>
                Older events
              </Button>
            </span>
          </nav>
        </>
      )}
    </Panel>
  );
}

function AuditRow({ event: e, now }: { event: AuditEvent; now: number }) {
  const operator = isOperatorEvent(e.event_type);
  return (
    <tr className={cn(operator && 'bg-amber-50/60 dark:bg-amber-950/20')}>
      <Td className="whitespace-nowrap">
        <When iso={e.time} now={now} />
      </Td>
      <Td className="whitespace-nowrap" title={e.event_type}>
        <span className={cn(operator && 'font-medium')}>{eventLabel(e.event_type)}</span>
        {e.owner_id && <span className="block text-xs text-zinc-500 dark:text-zinc-400">{e.owner_id}</span>}
      </Td>
      <Td>
        <Badge tone={resultTone(e.result)} className="font-mono">
          {e.result}
        </Badge>
      </Td>
      <Td className="font-mono tabular-nums">{e.fencing_token ?? <span className="text-zinc-600 dark:text-zinc-400">—</span>}</Td>
      <Td className="max-w-xs min-w-48 break-words whitespace-pre-wrap">{e.reason ?? <span className="text-zinc-600 dark:text-zinc-400">—</span>}</Td>
      <Td className="font-mono text-xs whitespace-nowrap">{e.token_id ?? <span className="text-zinc-600 dark:text-zinc-400">—</span>}</Td>
      <Td className="font-mono text-xs whitespace-nowrap select-all">{e.correlation_id}</Td>
    </tr>
  );
}
