'use client';

import { useMutation, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { isLeaseholdError, type EffectivePolicy, type LeaseView, type ReleaseRequest } from '@/lib/client';
import { routeSegments } from '@/lib/selector';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { Dialog } from '@/components/ui/dialog';
import { ErrorAlert } from '@/components/ui/states';
import { formatAgo } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';
import { useNow } from '@/components/ui/use-now';
import { SessionLeases } from '@/components/lease-detail/session-leases';

export type OperatorAction = 'force-release' | 'revoke' | 'release-request';

/** What the operator opened a dialog on: the lease as it was at that moment. */
export interface OpenAction {
  kind: OperatorAction;
  seen: LeaseView;
  openedAt: number;
}

export interface ActionDone {
  kind: OperatorAction;
  route: string;
  fencingToken: number;
  ownerId: string;
  sessionsClosed: number;
}

const REASON_MIN = 10;
const REASON_MAX = 500;
// The API refuses control characters other than line breaks and tabs.
const FORBIDDEN_CONTROL = /[^\P{Cc}\n\t]/u;

const TEXT = {
  'force-release': {
    title: 'Force release lease',
    confirm: 'Confirm force release',
    failed: 'Force release failed',
    explain:
      'Frees the route now: the holder’s next renew, release or checkpoint fails with lease_lost, and the first waiting client, if any, is granted the lease.',
  },
  'release-request': {
    title: 'Ask holder to release',
    confirm: 'Send request',
    failed: 'The request failed',
    explain:
      'Asks the holder to let go: it learns of it at its next renewal, and a well-behaved worker finishes its current item, checkpoints and releases. Nothing changes until it does; force release stays available.',
  },
  revoke: {
    title: 'Revoke lease',
    confirm: 'Confirm revoke',
    failed: 'Revoke failed',
    explain:
      'Ends the lease as a security measure, recorded as revoked: the holder’s next call with it fails with lease_lost.',
  },
} as const;

/** The title of the dialog for `kind` (its accessible name). */
/**
 * The guarded force-release and revoke (docs/console.md "Guarded operator
 * actions"): the lease as the operator saw it when opening, a reason of 10 to
 * 500 characters, for revoke the resource name typed to confirm. The request
 * carries the fencing token seen, so a lease that changed meanwhile is
 * refused (`lease_mismatch`) and explained, never retried.
 */
export function OperatorActionDialog({
  action,
  current,
  onClose,
  onDone,
  onStale,
}: {
  action: OpenAction | null;
  /** The page's live view of the route, to say what it is now after a refusal. */
  current: LeaseView | null | undefined;
  onClose: () => void;
  onDone: (done: ActionDone) => void;
  /** The lease changed under the operator: re-read the page's data. */
  onStale: () => void;
}) {
  return (
    <Dialog open={action !== null} title={action ? TEXT[action.kind].title : ''} onClose={onClose}>
      {action && <ActionForm key={action.openedAt} action={action} current={current} onClose={onClose} onDone={onDone} onStale={onStale} />}
    </Dialog>
  );
}

function isStale(e: unknown): boolean {
  return isLeaseholdError(e, 'lease_mismatch') || isLeaseholdError(e, 'lease_not_found');
}

function ActionForm({
  action,
  current,
  onClose,
  onDone,
  onStale,
}: {
  action: OpenAction;
  current: LeaseView | null | undefined;
  onClose: () => void;
  onDone: (done: ActionDone) => void;
  onStale: () => void;
}) {
  const { kind, seen } = action;
  const text = TEXT[kind];
  const resource = routeSegments(seen.route)[2];
  const [reason, setReason] = useState('');
  const [typedName, setTypedName] = useState('');
  const [closeSession, setCloseSession] = useState(false);
  const [skipDelay, setSkipDelay] = useState(false);
  const ids = { reason: useId(), reasonHelp: useId(), counter: useId(), name: useId(), nameHelp: useId(), close: useId(), closeHelp: useId(), skip: useId(), skipHelp: useId() };

  const trimmed = reason.trim();
  const length = [...trimmed].length;
  const badCharacter = FORBIDDEN_CONTROL.test(trimmed);
  const reasonOk = length >= REASON_MIN && length <= REASON_MAX && !badCharacter;
  const nameOk = kind !== 'revoke' || typedName === resource;

  // A release request starts no lock-delay; force release and revoke start the route's.
  const ends = kind !== 'release-request';
  const effective = useQuery({
    queryKey: [...queryKeys.policies(), 'effective', seen.route],
    queryFn: () => consoleClient().policies.explain(seen.route),
    enabled: ends,
  });
  const delayMs = effective.data?.limits.lock_delay_ms;
  // "Skip lock-delay" only where it acts: the route has a delay (or it could
  // not be read), or revoke closes the session, whose other leases may have one.
  const offerSkip = ends && (effective.isError || (delayMs !== undefined && delayMs > 0) || (kind === 'revoke' && closeSession));

  const act = useMutation({
    mutationFn: async (): Promise<ActionDone> => {
      const opts = { reason: trimmed, expectedFencingToken: seen.fencing_token, ...(skipDelay && offerSkip ? { lockDelayMs: 0 } : {}) };
      const base = { kind, route: seen.route, ownerId: seen.owner_id };
      if (kind === 'release-request') {
        const r = await consoleClient().requestRelease(seen.route, opts);
        return { ...base, fencingToken: r.fencing_token, sessionsClosed: 0 };
      }
      if (kind === 'revoke') {
        const r = await consoleClient().revoke(seen.route, { ...opts, closeSession });
        return { ...base, fencingToken: r.fencing_token, sessionsClosed: r.sessions_closed };
      }
      const r = await consoleClient().forceRelease(seen.route, opts);
      return { ...base, fencingToken: r.fencing_token, sessionsClosed: 0 };
    },
    onSuccess: onDone,
    onError: (e) => {
      if (isStale(e)) onStale();
    },
  });
  const stale = act.isError && isStale(act.error);
  const canConfirm = reasonOk && nameOk && !act.isPending && !stale;

  return (
    <form
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (canConfirm) act.mutate();
      }}
      className="space-y-4"
    >
      <p className="text-sm text-zinc-600 dark:text-zinc-400">{text.explain}</p>

      <section aria-label="The lease as you saw it" className="rounded-lg border border-zinc-200 bg-zinc-50 px-4 py-3 dark:border-zinc-800 dark:bg-zinc-950/40">
        <p className="text-xs font-medium tracking-wide text-zinc-500 uppercase dark:text-zinc-400">
          The lease as you saw it at <Timestamp at={action.openedAt} now={action.openedAt} />
        </p>
        <dl className="mt-2 grid grid-cols-[7.5rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-sm">
          <dt className="text-zinc-500 dark:text-zinc-400">Route</dt>
          <dd className="font-mono break-all">{seen.route}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Owner</dt>
          <dd className="font-mono break-all">{seen.owner_id}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Incarnation</dt>
          <dd className="font-mono break-all">{seen.holder_incarnation}</dd>
          <dt className="text-zinc-500 dark:text-zinc-400">Fencing token</dt>
          <dd className="font-mono tabular-nums">{seen.fencing_token}</dd>
          {seen.waiters > 0 && (
            <>
              <dt className="text-zinc-500 dark:text-zinc-400">Waiters</dt>
              <dd className="tabular-nums">
                {seen.waiters} <span className="text-zinc-500 dark:text-zinc-400">· the first is granted the lease{ends && delayMs ? ' when the lock-delay ends' : ''}</span>
              </dd>
            </>
          )}
          {seen.release_request && <PendingRequest request={seen.release_request} />}
          {ends && (
            <>
              <dt className="text-zinc-500 dark:text-zinc-400">Lock-delay</dt>
              <dd>
                <LockDelay query={effective} />
              </dd>
            </>
          )}
        </dl>
      </section>

      <div>
        <div className="flex items-baseline justify-between gap-3">
          <label htmlFor={ids.reason} className="text-sm font-medium">
            Reason
          </label>
          <span
            id={ids.counter}
            className={cn(
              'text-xs tabular-nums',
              length > REASON_MAX ? 'font-medium text-red-700 dark:text-red-400' : length >= REASON_MIN ? 'text-zinc-600 dark:text-zinc-400' : 'text-zinc-500 dark:text-zinc-400',
            )}
          >
            {length} / {REASON_MAX}
          </span>
        </div>
        <textarea
          id={ids.reason}
          name="reason"
          rows={2}
          required
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          aria-describedby={`${ids.reasonHelp} ${ids.counter}`}
          aria-invalid={reason !== '' && !reasonOk ? true : undefined}
          placeholder="e.g. renderer wedged after node drain, ticket OPS-1234"
          className="mt-1.5 block w-full resize-y rounded-lg border border-zinc-300 bg-white px-3 py-2 text-sm shadow-xs placeholder:text-zinc-400 dark:border-zinc-700 dark:bg-zinc-950"
        />
        <p id={ids.reasonHelp} className={cn('mt-1.5 text-xs', badCharacter || length > REASON_MAX ? 'text-red-700 dark:text-red-400' : 'text-zinc-500 dark:text-zinc-400')}>
          {badCharacter
            ? 'Remove control characters (line breaks and tabs are fine).'
            : length > REASON_MAX
              ? `At most ${REASON_MAX} characters: remove ${length - REASON_MAX}.`
              : length < REASON_MIN
                ? `At least ${REASON_MIN} characters${length > 0 ? `: ${REASON_MIN - length} more` : ''}. Recorded in the audit trail.`
                : 'Recorded in the audit trail with your token.'}
        </p>
      </div>

      {offerSkip && (
        <div className="flex items-start gap-2">
          <input id={ids.skip} type="checkbox" checked={skipDelay} onChange={(e) => setSkipDelay(e.target.checked)} aria-describedby={ids.skipHelp} className="mt-1" />
          <div>
            <label htmlFor={ids.skip} className="text-sm font-medium">
              Skip lock-delay
            </label>
            <p id={ids.skipHelp} className="text-xs text-zinc-500 dark:text-zinc-400">
              Only when you know the old holder is dead: the route
              {delayMs ? ` otherwise accepts no new holder for ${formatSeconds(delayMs)}` : '’s policy may otherwise keep it closed for a while'}, so a paused holder can notice its loss
              {kind === 'revoke' && closeSession ? '. Applies to every lease the session close ends, too.' : '.'}
            </p>
          </div>
        </div>
      )}

      {kind === 'revoke' && (
        <>
          <div>
            <label htmlFor={ids.name} className="text-sm font-medium">
              Type the resource name to confirm
            </label>
            <input
              id={ids.name}
              name="resource"
              type="text"
              autoComplete="off"
              autoCapitalize="off"
              spellCheck={false}
              value={typedName}
              onChange={(e) => setTypedName(e.target.value)}
              aria-describedby={ids.nameHelp}
              aria-invalid={typedName !== '' && !nameOk ? true : undefined}
              className="mt-1.5 block w-full rounded-lg border border-zinc-300 bg-white px-3 py-2 font-mono text-sm shadow-xs dark:border-zinc-700 dark:bg-zinc-950"
            />
            <p id={ids.nameHelp} className="mt-1.5 text-xs text-zinc-500 dark:text-zinc-400">
              Type <span className="rounded bg-zinc-100 px-1 font-mono text-zinc-800 dark:bg-zinc-800 dark:text-zinc-200">{resource}</span> exactly.
            </p>
          </div>
          <div className="flex items-start gap-3">
            <input
              id={ids.close}
              type="checkbox"
              checked={closeSession}
              onChange={(e) => setCloseSession(e.target.checked)}
              aria-describedby={ids.closeHelp}
              className="mt-0.5 size-4 rounded border-zinc-300 accent-red-700 dark:border-zinc-700 dark:accent-red-500"
            />
            <div>
              <label htmlFor={ids.close} className="text-sm font-medium">
                Also close the holder&apos;s session
              </label>
              <p id={ids.closeHelp} className="text-xs text-zinc-500 dark:text-zinc-400">
                Ends session <span className="font-mono">{seen.holder_incarnation}</span> of {seen.owner_id} and releases every lease it holds.
              </p>
              {closeSession && <SessionLeases seen={seen} />}
            </div>
          </div>
        </>
      )}

      {act.isError &&
        (stale ? (
          <ErrorAlert
            error={act.error}
            title="The lease changed since you opened this; review again"
            action={<StaleDetail seen={seen} current={current} onReview={onClose} />}
          />
        ) : (
          <ErrorAlert error={act.error} title={text.failed} />
        ))}

      <div className="flex flex-col-reverse gap-2 border-t border-zinc-200 pt-4 sm:flex-row sm:justify-end dark:border-zinc-800">
        <Button onClick={onClose}>Cancel</Button>
        <Button type="submit" variant={kind === 'release-request' ? 'primary' : 'danger'} disabled={!canConfirm} aria-busy={act.isPending || undefined}>
          {act.isPending && <Spinner />}
          {text.confirm}
        </Button>
      </div>
    </form>
  );
}

/** After a refusal: nothing was changed, what the route holds now, and the way back to the page. */
function StaleDetail({ seen, current, onReview }: { seen: LeaseView; current: LeaseView | null | undefined; onReview: () => void }) {
  const now =
    current === undefined
      ? 'Reading the route again…'
      : current === null
        ? 'Nobody holds it now.'
        : current.fencing_token === seen.fencing_token
          ? `It still shows token ${seen.fencing_token}; the page is reading it again.`
          : `It is now held by ${current.owner_id} with fencing token ${current.fencing_token}.`;
  return (
    <div className="space-y-3">
      <p>
        Nothing was changed. You opened this on token {seen.fencing_token} held by {seen.owner_id}. {now} Review the lease, then act again if it still needs it.
      </p>
      <Button size="sm" onClick={onReview}>
        Review the lease
      </Button>
    </div>
  );
}

function Spinner() {
  return <span aria-hidden="true" className="size-3.5 animate-spin rounded-full border-2 border-white/40 border-t-white" />;
}

/** `42 s`, `1.5 s`: a lock-delay, which policies give in milliseconds (0–60,000). */
function formatSeconds(ms: number): string {
  return `${(ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 })} s`;
}

/** The route's lock-delay, as its policy sets it now: what ending this lease starts. */
function LockDelay({ query }: { query: { data?: EffectivePolicy; isError: boolean } }) {
  if (query.isError) return <span>unknown (the route&apos;s policy could not be read)</span>;
  if (!query.data) return <span className="text-zinc-500 dark:text-zinc-400">reading the route&apos;s policy…</span>;
  const ms = query.data.limits.lock_delay_ms;
  const from = query.data.policy ? (
    <>
      {' '}
      (policy <span className="font-mono break-all">{query.data.policy.selector}</span>)
    </>
  ) : null;
  if (ms === 0) return <span>none: the route accepts a new holder at once{from}</span>;
  return (
    <span>
      <span className="font-medium tabular-nums">{formatSeconds(ms)}</span> after this ends, nobody can acquire the route{from}; waiting clients get it then
    </span>
  );
}

/** A pending release request on the lease: asked how long ago, by which token, and why. */
function PendingRequest({ request }: { request: ReleaseRequest }) {
  const now = useNow();
  return (
    <>
      <dt className="text-zinc-500 dark:text-zinc-400">Release request</dt>
      <dd>
        pending, asked{' '}
        <time dateTime={request.requested_at} title={request.requested_at}>
          {formatAgo(request.requested_at, now || Date.parse(request.requested_at))}
        </time>{' '}
        by <span className="font-mono">{request.token_id}</span>: <span className="break-words">“{request.reason}”</span>
      </dd>
    </>
  );
}
