'use client';

import type { UseQueryResult } from '@tanstack/react-query';
import { useId } from 'react';
import type { Checkpoint } from '@/lib/client';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { CopyButton } from '@/components/ui/copy-button';
import { DeniedPanel, ErrorAlert, isDenied } from '@/components/ui/states';
import { useNow } from '@/components/ui/use-now';
import { DetailList, DetailRow, DetailSkeleton, Panel } from '@/components/lease-detail/detail-list';
import { When } from '@/components/lease-detail/when';

/**
 * The route's checkpoint: the value its holders saved, fenced by the token
 * that wrote it. It outlives the lease, so a free route still shows it.
 * Writes are not on the feed: the panel re-reads on every change of the
 * route, and on request.
 */
export function CheckpointPanel({ checkpoint, holderToken, className }: { checkpoint: UseQueryResult<Checkpoint | null>; holderToken: number | null; className?: string }) {
  const now = useNow();
  const refresh = (
    <Button size="sm" variant="ghost" aria-label="Refresh checkpoint" onClick={() => void checkpoint.refetch()} disabled={checkpoint.isFetching}>
      {checkpoint.isFetching && !checkpoint.isPending ? 'Refreshing…' : 'Refresh'}
    </Button>
  );
  return (
    <Panel title="Checkpoint" description="What the holder saved, fenced by its token" actions={refresh} className={className}>
      {checkpoint.isPending ? (
        <DetailSkeleton rows={4} />
      ) : checkpoint.error ? (
        <div className="p-4">
          {isDenied(checkpoint.error) ? (
            <DeniedPanel error={checkpoint.error} what="read this route's checkpoint" />
          ) : (
            <ErrorAlert error={checkpoint.error} title="Could not read the checkpoint" />
          )}
        </div>
      ) : checkpoint.data === null ? (
        <div className="px-4 py-8 text-center">
          <p className="font-medium">No checkpoint</p>
          <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">No holder of this route has written one yet.</p>
        </div>
      ) : (
        <>
          <DetailList>
            <DetailRow label="Version" hint="version: 1 for the first write, one more for each">
              <span className="font-mono tabular-nums">{checkpoint.data.version}</span>
            </DetailRow>
            <DetailRow label="Fencing token" hint="fencing_token of the lease that wrote it">
              <span className="font-mono tabular-nums">{checkpoint.data.fencing_token}</span>{' '}
              {holderToken !== null &&
                (holderToken === checkpoint.data.fencing_token ? (
                  <Badge tone="good" className="ml-1">current holder</Badge>
                ) : (
                  <Badge className="ml-1">an earlier holder</Badge>
                ))}
            </DetailRow>
            <DetailRow label="Written" hint="written_at">
              <When iso={checkpoint.data.written_at} now={now} />
            </DetailRow>
          </DetailList>
          <CheckpointValue value={checkpoint.data.value} />
        </>
      )}
    </Panel>
  );
}

function CheckpointValue({ value }: { value: unknown }) {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  const captionId = useId();
  return (
    <figure aria-labelledby={captionId} className="border-t border-zinc-100 px-4 py-3 dark:border-zinc-800/80">
      <figcaption className="flex items-center justify-between text-sm text-zinc-500 dark:text-zinc-400">
        <span id={captionId}>Value</span>
        <CopyButton value={text} label="Copy checkpoint value" />
      </figcaption>
      <pre
        tabIndex={0}
        className="mt-1.5 max-h-80 overflow-auto rounded-md bg-zinc-50 p-3 font-mono text-xs leading-5 text-zinc-800 dark:bg-zinc-900 dark:text-zinc-200"
      >
        {text}
      </pre>
    </figure>
  );
}
