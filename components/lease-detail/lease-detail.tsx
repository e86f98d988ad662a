'use client';

import { useQueryClient } from '@tanstack/react-query';
import Link from 'next/link';
import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { isLeaseholdError, type LeaseView } from '@/lib/client';
import { routeSegments } from '@/lib/selector';
import { can, useWhoami } from '@/components/console/use-whoami';
import { FeedStatus } from '@/components/feed/feed-status';
import { useFeedStore } from '@/components/feed/feed-store';
import { Button } from '@/components/ui/button';
import { DeniedPanel, ErrorAlert, isDenied } from '@/components/ui/states';
import { formatAgo } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';
import { useNow } from '@/components/ui/use-now';
import { ApplyingPolicy } from '@/components/lease-detail/applying-policy';
import { AuditTrail } from '@/components/lease-detail/audit-trail';
import { CheckpointPanel } from '@/components/lease-detail/checkpoint-panel';
import { DetailSkeleton, Panel } from '@/components/lease-detail/detail-list';
import { LeaseFields } from '@/components/lease-detail/lease-fields';
import { LeaseHistory } from '@/components/lease-detail/lease-history';
import { RouteStatus, secondsLeft } from '@/components/lease-detail/route-status';
import { OperatorActionDialog, type ActionDone, type OpenAction, type OperatorAction } from '@/components/lease-detail/operator-action-dialog';
import { FALLBACK_POLL_MS, invalidateLeaseDetail, useCheckpoint, useLease, useLiveLease, useLockDelay } from '@/components/lease-detail/use-lease-detail';

const RENEW_HIGHLIGHT_MS = 1_200;

/**
 * One lease route, live: who holds it (every field), its checkpoint and its
 * audit trail, and for admins the guarded force-release and revoke.
 */
export function LeaseDetail({ route }: { route: string }) {
  const queryClient = useQueryClient();
  const me = useWhoami().data;
  const admin = can(me, route, 'admin');
  const canAsk = can(me, route, 'write');
  const [realm, area] = routeSegments(route);
  const scope = ['lease://**', `lease://${realm}/**`, `lease://${realm}/${area}/*`].find((s) => can(me, s, 'read')) ?? route;
  const lease = useLease(route);
  const denied = isDenied(lease.error);
  const checkpoint = useCheckpoint(route, !denied);

  const [renewed, setRenewed] = useState(false);
  const renewTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const onRenewed = useCallback(() => {
    setRenewed(true);
    clearTimeout(renewTimer.current);
    renewTimer.current = setTimeout(() => setRenewed(false), RENEW_HIGHLIGHT_MS);
  }, []);
  useEffect(() => () => clearTimeout(renewTimer.current), []);
  useLiveLease(route, onRenewed);

  const [action, setAction] = useState<OpenAction | null>(null);
  const [done, setDone] = useState<ActionDone | null>(null);
  const open = (kind: OperatorAction, seen: LeaseView) => {
    setDone(null);
    setAction({ kind, seen, openedAt: Date.now() });
  };
  const refresh = useCallback(() => invalidateLeaseDetail(queryClient, route), [queryClient, route]);

  const held = lease.data ?? null;
  const loaded = lease.data !== undefined;
  const delay = useLockDelay(route, loaded && !held && !denied);

  return (
    <div className="space-y-6">
      <Header route={route} status={denied ? null : <RouteStatus lease={lease.data} delayUntil={held || delay.isError ? null : delay.data} />}>
        <FeedStatus />
        {canAsk && held && (
          <Button variant="primary" onClick={() => open('release-request', held)}>
            Ask holder to release
          </Button>
        )}
        {!admin && held && <span className="text-xs text-zinc-500 dark:text-zinc-400">Read-only: force release and revoke need admin on this route</span>}
        {admin && held && (
          <>
            <Button variant="secondary" onClick={() => open('force-release', held)}>
              Force release
            </Button>
            <Button variant="danger" onClick={() => open('revoke', held)}>
              Revoke
            </Button>
          </>
        )}
      </Header>

      {done && done.kind !== 'release-request' && <DoneNotice done={done} onDismiss={() => setDone(null)} />}
      {held?.release_request && <PendingReleaseRequest lease={held} />}
      {done?.kind === 'release-request' && !held && (
        <p role="status" className="rounded-lg border border-emerald-200 bg-emerald-50 px-4 py-3 text-sm text-emerald-900 dark:border-emerald-900 dark:bg-emerald-950/50 dark:text-emerald-200">
          {done.ownerId} let go of the lease (fencing token <span className="font-mono">{done.fencingToken}</span>) after your request.
        </p>
      )}
      <FeedNotice route={route} onRefresh={refresh} />

      {denied ? (
        <DeniedPanel error={lease.error} what="read this lease" />
      ) : (
        <>
          <div className="grid items-start gap-6 lg:grid-cols-5">
            <Panel
              title="Holder"
              description={held ? 'The lease as the server reports it; expiry counts down live' : undefined}
              className="lg:col-span-3"
            >
              {lease.error && !loaded ? (
                <div className="p-4">
                  <ErrorAlert
                    error={lease.error}
                    title={isLeaseholdError(lease.error, 'invalid_request') ? 'This is not a lease route' : 'Could not load this lease'}
                    action={<Button onClick={() => void lease.refetch()}>Try again</Button>}
                  />
                </div>
              ) : !loaded ? (
                <DetailSkeleton rows={8} />
              ) : held ? (
                <LeaseFields lease={held} renewed={renewed} scope={scope} />
              ) : (
                <FreeRoute delayUntil={delay.data ?? null} onDelayEnd={refresh} />
              )}
              {lease.error && loaded && <ErrorAlert error={lease.error} title="Could not refresh this lease" className="m-4" />}
            </Panel>
            <div className="space-y-6 lg:col-span-2">
              <CheckpointPanel checkpoint={checkpoint} holderToken={held?.fencing_token ?? null} />
              <ApplyingPolicy route={route} />
            </div>
          </div>
          <LeaseHistory route={route} allowed={admin} current={lease.data} />
          <AuditTrail route={route} allowed={admin} />
        </>
      )}

      {(admin || canAsk) && (
        <OperatorActionDialog
          action={action}
          current={lease.data}
          onClose={() => setAction(null)}
          onStale={refresh}
          onDone={(d) => {
            setAction(null);
            setDone(d);
            refresh();
          }}
        />
      )}
    </div>
  );
}

function Header({ route, status, children }: { route: string; status: ReactNode; children: ReactNode }) {
  const [realm, area] = routeSegments(route);
  const crumb = 'text-zinc-600 underline-offset-2 hover:text-zinc-900 hover:underline dark:text-zinc-400 dark:hover:text-zinc-100';
  return (
    <div className="flex flex-wrap items-end justify-between gap-4">
      <div className="min-w-0">
        <nav aria-label="Breadcrumb">
          <ol className="flex flex-wrap items-center gap-1.5 text-sm">
            <li>
              <Link href="/leases" className={crumb}>
                Leases
              </Link>
            </li>
            <li aria-hidden="true" className="text-zinc-400">/</li>
            <li>
              <Link href={`/leases?selector=${encodeURIComponent(`lease://${realm}/**`)}`} className={`${crumb} font-mono`}>
                {realm}
              </Link>
            </li>
            <li aria-hidden="true" className="text-zinc-400">/</li>
            <li>
              <Link href={`/leases?selector=${encodeURIComponent(`lease://${realm}/${area}/*`)}`} className={`${crumb} font-mono`}>
                {area}
              </Link>
            </li>
          </ol>
        </nav>
        <div className="mt-1 flex flex-wrap items-center gap-3">
          <h1 className="font-mono text-2xl font-semibold tracking-tight break-all">{route}</h1>
          {status}
        </div>
      </div>
      <div className="flex flex-wrap items-center gap-2">{children}</div>
    </div>
  );
}

function FreeRoute({ delayUntil, onDelayEnd }: { delayUntil: number | null; onDelayEnd: () => void }) {
  const now = useNow();
  const left = secondsLeft(delayUntil, now);
  const inDelay = delayUntil !== null && left > 0;
  useEffect(() => {
    // When the delay ends, the head waiter (if any) gets the route: look again.
    if (delayUntil === null) return;
    const t = setTimeout(onDelayEnd, Math.max(0, delayUntil - Date.now()) + 300);
    return () => clearTimeout(t);
  }, [delayUntil, onDelayEnd]);
  if (inDelay) {
    return (
      <div role="status" aria-label="Lock-delay" className="flex items-start gap-4 px-4 py-8">
        <div>
          <p className="font-medium">
            In lock-delay: <span className="text-2xl font-semibold tabular-nums">{left} s</span> left
          </p>
          <p className="mt-1 max-w-prose text-sm text-zinc-600 dark:text-zinc-400">
            The last lease ended without its holder&apos;s consent, so the route accepts no new holder for{' '}
            <span className="font-mono tabular-nums">{left} s</span> more (until{' '}
            <Timestamp at={delayUntil} now={now} />): a paused former holder has time to notice it lost the lease. Waiting clients get it when the delay ends.
          </p>
        </div>
      </div>
    );
  }
  return (
    <div className="flex items-start gap-4 px-4 py-8">
      <span aria-hidden="true" className="mt-0.5 flex size-9 shrink-0 items-center justify-center rounded-full bg-zinc-100 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400">
        <svg viewBox="0 0 24 24" className="size-4.5" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
          <rect x="4" y="11" width="16" height="10" rx="2" />
          <path d="M8 11V7a4 4 0 0 1 7.5-2" />
        </svg>
      </span>
      <div>
        <p className="font-medium">Nobody holds this route</p>
        <p className="mt-1 max-w-prose text-sm text-zinc-600 dark:text-zinc-400">
          It is free: released, expired or never acquired. Its checkpoint and history stay below, and this page shows the next holder the moment a client acquires it.
        </p>
      </div>
    </div>
  );
}

/** The holder was asked to let go: by whom, why, and how long ago (ticking); it disappears when the lease ends. */
function PendingReleaseRequest({ lease }: { lease: LeaseView }) {
  const now = useNow();
  const r = lease.release_request!;
  return (
    <section
      aria-label="Pending release request"
      className="rounded-lg border border-sky-200 bg-sky-50 px-4 py-3 text-sm text-sky-950 dark:border-sky-900 dark:bg-sky-950/50 dark:text-sky-100"
    >
      <p className="font-medium">
        Release requested <time dateTime={r.requested_at} title={r.requested_at}>{formatAgo(r.requested_at, now || Date.parse(r.requested_at))}</time> by{' '}
        <span className="font-mono">{r.token_id}</span>; waiting for {lease.owner_id} to let go.
      </p>
      <p className="mt-1 break-words">“{r.reason}”</p>
      <p className="mt-1 text-sky-900 dark:text-sky-200">The holder learns of it at its next renewal. Force release stays available if it does not respond.</p>
    </section>
  );
}

function DoneNotice({ done, onDismiss }: { done: ActionDone; onDismiss: () => void }) {
  const what = done.kind === 'revoke' ? 'revoked' : 'force-released';
  return (
    <div
      role="status"
      className="flex items-start justify-between gap-4 rounded-lg border border-emerald-200 bg-emerald-50 px-4 py-3 text-sm text-emerald-900 dark:border-emerald-900 dark:bg-emerald-950/50 dark:text-emerald-200"
    >
      <div>
        <p className="font-medium">
          Lease {what}: {done.ownerId} no longer holds <span className="font-mono">{done.route}</span>.
        </p>
        <p className="mt-1">
          Fencing token <span className="font-mono">{done.fencingToken}</span> is no longer valid
          {done.kind === 'revoke' && (done.sessionsClosed > 0 ? '; the holder’s session was closed, with every lease it held' : '; the holder’s session stays open')}. The reason is in
          the audit trail.
        </p>
      </div>
      <Button size="sm" variant="ghost" onClick={onDismiss} className="-my-1 text-emerald-900 dark:text-emerald-200">
        Dismiss
      </Button>
    </div>
  );
}

/** What the page cannot promise while the feed is not live, or when the feed refused this route. */
function FeedNotice({ route, onRefresh }: { route: string; onRefresh: () => void }) {
  const state = useFeedStore((s) => s.state);
  const refused = useFeedStore((s) => s.refused[route]);
  if (state !== 'stale' && refused === undefined) return null;
  return (
    <div className="flex flex-wrap items-center justify-between gap-3 rounded-lg border border-amber-200 bg-amber-50 px-4 py-3 text-sm text-amber-900 dark:border-amber-900 dark:bg-amber-950/50 dark:text-amber-200">
      <p>
        {refused !== undefined ? `Live updates for this route are unavailable: ${refused}.` : 'Live updates are paused: the feed is stale.'} What you see may be out of
        date; it is re-read every {FALLBACK_POLL_MS / 1000} seconds.
      </p>
      <Button size="sm" onClick={onRefresh}>
        Refresh now
      </Button>
    </div>
  );
}
