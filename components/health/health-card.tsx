'use client';

import type { ReactNode } from 'react';
import { cn } from '@/components/ui/cn';
import { Timestamp } from '@/components/ui/timestamp';
import { formatUptime, HealthError, type Health } from '@/components/health/fetch-health';
import { useHealth } from '@/components/health/use-health';

type Tone = 'pending' | 'ok' | 'warn' | 'down';

const toneStyles: Record<Tone, { pill: string; dot: string }> = {
  pending: {
    pill: 'bg-zinc-100 text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300',
    dot: 'bg-zinc-400 animate-pulse',
  },
  ok: {
    pill: 'bg-emerald-50 text-emerald-700 ring-emerald-600/20 dark:bg-emerald-400/10 dark:text-emerald-300 dark:ring-emerald-400/20',
    dot: 'bg-emerald-500',
  },
  warn: {
    pill: 'bg-amber-50 text-amber-800 ring-amber-600/20 dark:bg-amber-400/10 dark:text-amber-300 dark:ring-amber-400/20',
    dot: 'bg-amber-500',
  },
  down: {
    pill: 'bg-red-50 text-red-700 ring-red-600/20 dark:bg-red-400/10 dark:text-red-300 dark:ring-red-400/20',
    dot: 'bg-red-500',
  },
};

/** Live service health: loading, operational, store unavailable and unreachable are all designed states. */
export function HealthCard() {
  const query = useHealth();

  let tone: Tone = 'pending';
  let label = 'Checking…';
  let body: ReactNode = <HealthSkeleton />;

  if (query.data) {
    tone = query.data.status === 'ok' ? 'ok' : 'warn';
    label = query.data.status === 'ok' ? 'Operational' : 'Store unavailable';
    body = <HealthDetails health={query.data} />;
  } else if (query.error) {
    tone = 'down';
    label = 'Unreachable';
    body = (
      <HealthUnreachable
        error={query.error}
        retrying={query.isFetching}
        onRetry={() => void query.refetch()}
      />
    );
  }

  return (
    <section
      aria-labelledby="health-heading"
      className="rounded-2xl border border-zinc-200 bg-white shadow-sm shadow-zinc-950/5 dark:border-zinc-800 dark:bg-zinc-900/60 dark:shadow-none"
    >
      <header className="flex items-center justify-between gap-4 border-b border-zinc-200 px-5 py-4 dark:border-zinc-800">
        <h2 id="health-heading" className="text-sm font-semibold">
          Service health
        </h2>
        <p
          role="status"
          className={cn(
            'inline-flex items-center gap-1.5 rounded-full px-2.5 py-1 text-xs font-medium ring-1 ring-transparent ring-inset',
            toneStyles[tone].pill,
          )}
        >
          <span aria-hidden="true" className={cn('size-1.5 rounded-full', toneStyles[tone].dot)} />
          {label}
        </p>
      </header>
      <div className="px-5 py-5">{body}</div>
      <footer className="border-t border-zinc-200 px-5 py-3 text-xs text-zinc-500 dark:border-zinc-800 dark:text-zinc-400">
        {query.dataUpdatedAt > 0 ? (
          <>Checked at <Timestamp at={query.dataUpdatedAt} format="clock" /> · refreshes every 10 s</>
        ) : (
          <>
            From <code className="font-mono">GET /api/v1/health</code>
          </>
        )}
      </footer>
    </section>
  );
}

function HealthDetails({ health }: { health: Health }) {
  if (health.status === 'unavailable') {
    return (
      <div className="space-y-1">
        <p className="font-medium">The service is up, but its store is not answering.</p>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          Store: <span className="font-mono">{health.store}</span>. Leases cannot be granted until it is back.
        </p>
      </div>
    );
  }
  return (
    <dl className="grid grid-cols-2 gap-x-6 gap-y-5 sm:grid-cols-4">
      <Stat term="Store" value={health.store} />
      <Stat term="Version" value={health.version} />
      <Stat term="Uptime" value={formatUptime(health.uptimeMs)} />
      <Stat term="Epoch" value={health.epoch} mono title={health.epoch} />
    </dl>
  );
}

function Stat({ term, value, mono, title }: { term: string; value: string; mono?: boolean; title?: string }) {
  return (
    <div className="min-w-0">
      <dt className="text-xs font-medium tracking-wide text-zinc-500 uppercase dark:text-zinc-400">{term}</dt>
      <dd title={title} className={cn('mt-1 truncate text-base font-semibold', mono && 'font-mono text-sm leading-6')}>
        {value}
      </dd>
    </div>
  );
}

function HealthUnreachable({ error, retrying, onRetry }: { error: Error; retrying: boolean; onRetry: () => void }) {
  const correlationId = error instanceof HealthError ? error.correlationId : undefined;
  return (
    <div className="flex flex-wrap items-start justify-between gap-4">
      <div className="space-y-1">
        <p className="font-medium">Service unreachable</p>
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          {error instanceof HealthError ? error.message : 'The health check failed.'}
          {correlationId && (
            <>
              {' '}
              Correlation id <span className="font-mono">{correlationId}</span>.
            </>
          )}
        </p>
      </div>
      <button
        type="button"
        onClick={onRetry}
        disabled={retrying}
        className="rounded-lg border border-zinc-300 px-3 py-1.5 text-sm font-medium transition-colors hover:bg-zinc-50 disabled:opacity-50 dark:border-zinc-700 dark:hover:bg-zinc-800"
      >
        {retrying ? 'Retrying…' : 'Retry'}
      </button>
    </div>
  );
}

function HealthSkeleton() {
  return (
    <div aria-hidden="true" className="grid grid-cols-2 gap-x-6 gap-y-5 sm:grid-cols-4">
      {[0, 1, 2, 3].map((i) => (
        <div key={i} className="space-y-2">
          <div className="h-3 w-14 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
          <div className="h-5 w-20 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
        </div>
      ))}
    </div>
  );
}
