'use client';

import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { isLeaseholdError, type MetricsSummary } from '@/lib/client';
import { consoleClient } from '@/components/console/client';
import { queryKeys } from '@/components/query-keys';
import { DeniedPanel, describeError, ErrorAlert } from '@/components/ui/states';
import { Timestamp } from '@/components/ui/timestamp';
import { MetricChart, type ChartSeries } from '@/components/metrics/metric-chart';
import { useMetricsWindow, type MetricsWindow } from '@/components/metrics/metrics-window';
import { LatencyTable } from '@/components/metrics/latency-table';
import { alignSeries, formatCount } from '@/components/metrics/series';

/** Errors polling cannot cure: stop asking every second. */
function isFinal(e: unknown): boolean {
  return isLeaseholdError(e, 'not_found') || isLeaseholdError(e, 'access_denied') || isLeaseholdError(e, 'invalid_credential');
}

const THROUGHPUT: ChartSeries[] = [
  { key: 'acquisitions_per_s', label: 'Acquisitions', color: 0 },
  { key: 'conflicts_per_s', label: 'Conflicts', color: 1 },
  { key: 'releases_per_s', label: 'Releases', color: 2 },
];
const LEASES: ChartSeries[] = [{ key: 'active_leases', label: 'Active leases', color: 0 }];
const SESSIONS: ChartSeries[] = [{ key: 'active_sessions', label: 'Active sessions', color: 2 }];
const WAITERS: ChartSeries[] = [{ key: 'waiters', label: 'Waiters', color: 1 }];
const FANOUT: ChartSeries[] = [
  { key: 'notifications_per_s', label: 'Notifications', color: 4 },
  { key: 'notifications_dropped_per_s', label: 'Dropped', color: 3 },
];

/**
 * The /metrics charts: the summary polled every second (docs/console.md: the one
 * page that polls, its series being sampled), drawn for the window in the URL.
 */
export function MetricsDashboard() {
  const range = useMetricsWindow();
  const summary = useQuery<MetricsSummary>({
    queryKey: queryKeys.metricsSummary(range.seconds),
    queryFn: ({ signal }) => consoleClient().metricsSummary(range.seconds, { signal }),
    refetchInterval: (query) => (isFinal(query.state.error) ? false : 1000),
    // A new window keeps the old charts on screen until its first answer.
    placeholderData: keepPreviousData,
    retry: (count, e) => !isFinal(e) && count < 1,
  });

  if (summary.data === undefined) {
    if (summary.error) return <SummaryError error={summary.error} />;
    return <MetricsSkeleton />;
  }
  return (
    <div className="space-y-4">
      {summary.error && (
        <SummaryError error={summary.error} stale />
      )}
      <Charts summary={summary.data} range={range} updatedAt={summary.dataUpdatedAt} />
    </div>
  );
}

function Charts({ summary, range, updatedAt }: { summary: MetricsSummary; range: MetricsWindow; updatedAt: number }) {
  // The answer may still be the previous window's (placeholder): describe what is drawn.
  const windowLong = summary.window_s === range.seconds ? range.long : `last ${Math.round(summary.window_s / 60)} min`;
  const charts = useMemo(() => {
    const keys = (s: ChartSeries[]) => s.map((x) => x.key);
    return {
      throughput: alignSeries(summary, keys(THROUGHPUT), { complete: true }),
      leases: alignSeries(summary, keys(LEASES)),
      sessions: alignSeries(summary, keys(SESSIONS)),
      waiters: alignSeries(summary, keys(WAITERS)),
      fanout: alignSeries(summary, keys(FANOUT), { complete: true }),
    };
  }, [summary]);

  return (
    <>
      <p className="text-xs text-zinc-500 dark:text-zinc-400">
        One point per second over the {windowLong}; rates show complete seconds. Updated{' '}
        <Timestamp at={updatedAt} format="clock" />.
      </p>
      <MetricChart
        title="Acquisitions, conflicts and releases per second"
        series={THROUGHPUT}
        data={charts.throughput}
        format={formatCount}
        unit="/s"
        integer
        windowLong={windowLong}
        height={220}
      />
      <div className="grid gap-4 md:grid-cols-3">
        <MetricChart title="Active leases" series={LEASES} data={charts.leases} format={formatCount} integer windowLong={windowLong} height={150} />
        <MetricChart title="Active sessions" series={SESSIONS} data={charts.sessions} format={formatCount} integer windowLong={windowLong} height={150} />
        <MetricChart title="Waiters" series={WAITERS} data={charts.waiters} format={formatCount} integer windowLong={windowLong} height={150} />
      </div>
      <MetricChart
        title="Notification fanout and drops per second"
        series={FANOUT}
        data={charts.fanout}
        format={formatCount}
        unit="/s"
        integer
        windowLong={windowLong}
        height={180}
      />
      <LatencyTable summary={summary} windowLong={windowLong} />
      <p className="text-xs text-zinc-500 dark:text-zinc-400">
        Leases, sessions, waiters and notifications are your token family&rsquo;s; request latency is the whole server&rsquo;s. Prometheus
        scrapers read every family at <code className="font-mono">/api/metrics</code>.
      </p>
    </>
  );
}

function SummaryError({ error, stale = false }: { error: unknown; stale?: boolean }) {
  if (isLeaseholdError(error, 'access_denied')) return <DeniedPanel error={error} what="read the metrics, which need read on lease://**" />;
  if (isLeaseholdError(error, 'not_found')) return <MetricsOff error={error} />;
  return (
    <ErrorAlert
      error={error}
      title={stale ? 'The charts stopped updating: showing the last figures received' : 'The metrics could not be loaded'}
      action={<p className="text-xs">Trying again every second.</p>}
    />
  );
}

/** 404 from the summary: the server was started with metrics off. */
function MetricsOff({ error }: { error: unknown }) {
  const { correlationId } = describeError(error);
  return (
    <section aria-labelledby="metrics-off" className="rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center dark:border-zinc-700">
      <h2 id="metrics-off" className="font-medium">
        Metrics are off on this server
      </h2>
      <p className="mx-auto mt-2 max-w-xl text-sm text-zinc-600 dark:text-zinc-400">
        It was started with <code className="font-mono">LEASEHOLD_METRICS=off</code>, so it measures nothing and has no series to chart
        (the summary answered 404). Restart it with <code className="font-mono">LEASEHOLD_METRICS=on</code>, the default, to see them here.
      </p>
      {correlationId && (
        <p className="mt-2 text-xs text-zinc-500">
          Correlation id <span className="font-mono select-all">{correlationId}</span>
        </p>
      )}
    </section>
  );
}

/** The charts' shapes while the first answer is on its way. */
export function MetricsSkeleton() {
  const block = (h: number, key: number) => (
    <div key={key} className="rounded-xl border border-zinc-200 p-4 dark:border-zinc-800">
      <div className="h-4 w-40 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
      <div className="mt-2 h-6 w-24 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
      <div className="mt-3 animate-pulse rounded bg-zinc-100 dark:bg-zinc-900" style={{ height: h }} />
    </div>
  );
  return (
    <div role="status" aria-busy="true" className="space-y-4">
      <p className="sr-only">Loading metrics…</p>
      {block(220, 0)}
      <div className="grid gap-4 md:grid-cols-3">{[1, 2, 3].map((k) => block(150, k))}</div>
      {block(180, 4)}
      {block(260, 5)}
    </div>
  );
}
