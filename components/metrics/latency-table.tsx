'use client';

import { useMemo, useState } from 'react';
import type { MetricsSummary } from '@/lib/client';
import { useUrlParams } from '@/components/console/use-url-params';
import { MetricChart, type ChartSeries } from '@/components/metrics/metric-chart';
import {
  DEFAULT_SORT,
  formatErrorRate,
  operationStats,
  sortFromParams,
  sortStats,
  type OperationStats,
  type SortKey,
} from '@/components/metrics/operations';
import { alignSeries, formatCount, formatMs, type ChartData } from '@/components/metrics/series';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { Table, TBody, Td, Th, THead } from '@/components/ui/table';

/** Rows shown before "Show all": the top of the chosen order. */
const TOP_N = 10;

const COLUMNS: ReadonlyArray<{ key: SortKey; label: string; numeric: boolean; title?: string }> = [
  { key: 'operation', label: 'Operation', numeric: false },
  { key: 'requests', label: 'Requests', numeric: true, title: 'Requests answered in the window' },
  { key: 'errors', label: 'Errors', numeric: true, title: 'Answers with status error (conflicts included), as a share of requests' },
  { key: 'p50', label: 'p50', numeric: true, title: 'Median latency: the median of the seconds’ medians, weighted by requests' },
  { key: 'p99', label: 'p99', numeric: true, title: '99th percentile latency: the worst second’s in the window' },
];

/**
 * Request latency by operation as a table (docs/console.md "Metrics: request
 * latency by operation"): operations ranked by
 * p99 (any column sorts), the top ten first, and the chosen row's p50 and
 * p99 drawn second by second below it, with its requests and errors. The
 * sort and the chosen operation live in the URL (`?sort=`, `?order=`,
 * `?op=`) beside the window, so a view can be shared.
 */
export function LatencyTable({ summary, windowLong }: { summary: MetricsSummary; windowLong: string }) {
  const { params, set } = useUrlParams();
  const sort = sortFromParams(params.get('sort'), params.get('order'));
  const [showAll, setShowAll] = useState(false);
  const stats = useMemo(() => operationStats(summary), [summary]);
  const rows = useMemo(() => sortStats(stats, sort.key, sort.order), [stats, sort.key, sort.order]);
  const chosen = rows.find((r) => r.operation === params.get('op')) ?? rows[0];
  let shown = showAll ? rows : rows.slice(0, TOP_N);
  // A chosen operation below the top ten (a shared link) stays in view.
  if (chosen && !shown.includes(chosen)) shown = [...shown, chosen];

  const sortBy = (key: SortKey) => {
    const order = sort.key === key ? (sort.order === 'asc' ? 'desc' : 'asc') : key === 'operation' ? 'asc' : 'desc';
    const isDefault = key === DEFAULT_SORT.key && order === DEFAULT_SORT.order;
    set({ sort: isDefault ? null : key, order: isDefault ? null : order });
  };

  return (
    <section aria-labelledby="latency-heading" className="space-y-3 rounded-xl border border-zinc-200 p-4 dark:border-zinc-800">
      <div className="flex flex-wrap items-baseline justify-between gap-x-4 gap-y-1">
        <h2 id="latency-heading" className="text-sm font-medium text-zinc-900 dark:text-zinc-100">
          Request latency by operation
        </h2>
        <p className="text-xs text-zinc-500 dark:text-zinc-400">
          {windowLong}; p50 is the seconds&rsquo; median weighted by requests, p99 the worst second&rsquo;s. Choose an operation to chart it.
        </p>
      </div>
      {rows.length === 0 ? (
        <p className="flex h-24 items-center justify-center rounded-lg border border-dashed border-zinc-300 text-sm text-zinc-500 dark:border-zinc-700 dark:text-zinc-400">
          No requests measured in this window.
        </p>
      ) : (
        <>
          <Table aria-label="Operations by latency">
            <THead>
              <tr>
                {COLUMNS.map((c) => {
                  const active = sort.key === c.key;
                  return (
                    <Th key={c.key} aria-sort={active ? (sort.order === 'asc' ? 'ascending' : 'descending') : undefined} className={cn(c.numeric && 'text-right')}>
                      <button
                        type="button"
                        title={c.title}
                        onClick={() => sortBy(c.key)}
                        className={cn(
                          'inline-flex items-center gap-1 rounded tracking-wide uppercase hover:text-zinc-900 dark:hover:text-zinc-100',
                          (c.key === 'p50' || c.key === 'p99') && 'normal-case',
                          active && 'text-zinc-900 dark:text-zinc-100',
                        )}
                      >
                        {c.label}
                        {c.numeric && c.key !== 'requests' && c.key !== 'errors' && <span className="normal-case">(ms)</span>}
                        <span aria-hidden="true" className={cn('w-3 text-[10px]', !active && 'invisible')}>
                          {active && sort.order === 'asc' ? '▲' : '▼'}
                        </span>
                      </button>
                    </Th>
                  );
                })}
              </tr>
            </THead>
            <TBody>
              {shown.map((r) => (
                <OperationRow key={r.operation} row={r} chosen={r === chosen} onChoose={() => set({ op: r.operation })} />
              ))}
            </TBody>
          </Table>
          {rows.length > TOP_N && (
            <div className="flex items-center justify-between text-xs text-zinc-500 dark:text-zinc-400">
              <span>{showAll ? `All ${rows.length} operations` : `Top ${TOP_N} of ${rows.length} operations`}</span>
              <Button size="sm" variant="ghost" onClick={() => setShowAll(!showAll)}>
                {showAll ? `Show the top ${TOP_N}` : `Show all ${rows.length} operations`}
              </Button>
            </div>
          )}
          {chosen && <OperationCharts summary={summary} operation={chosen.operation} windowLong={windowLong} />}
        </>
      )}
    </section>
  );
}

function OperationRow({ row: r, chosen, onChoose }: { row: OperationStats; chosen: boolean; onChoose: () => void }) {
  return (
    <tr aria-current={chosen ? 'true' : undefined} className={cn(chosen ? 'bg-teal-50/70 dark:bg-teal-950/40' : 'hover:bg-zinc-50/60 dark:hover:bg-zinc-900/40')}>
      <Td>
        <button
          type="button"
          aria-pressed={chosen}
          onClick={onChoose}
          className={cn(
            'rounded font-mono text-xs underline-offset-2 hover:underline',
            chosen ? 'font-semibold text-teal-800 dark:text-teal-300' : 'text-zinc-800 dark:text-zinc-200',
          )}
        >
          {r.operation}
        </button>
      </Td>
      <Td className="text-right tabular-nums">{formatCount(r.requests)}</Td>
      <Td className="text-right tabular-nums" title={r.errors === undefined ? undefined : `${formatCount(r.errors)} error answers`}>
        {formatErrorRate(r.errors, r.requests)}
      </Td>
      <Td className="text-right tabular-nums">{formatMs(r.p50)}</Td>
      <Td className="text-right font-medium tabular-nums">{formatMs(r.p99)}</Td>
    </tr>
  );
}

/** The chosen operation's p50 and p99, and its requests and errors, second by second. */
function OperationCharts({ summary, operation, windowLong }: { summary: MetricsSummary; operation: string; windowLong: string }) {
  const charts = useMemo(() => {
    const latency: ChartSeries[] = [
      { key: `latency_p50_ms.${operation}`, label: 'p50', color: 0 },
      { key: `latency_p99_ms.${operation}`, label: 'p99', color: 3 },
    ];
    const load: ChartSeries[] = [
      { key: `requests_per_s.${operation}`, label: 'Requests', color: 2 },
      { key: `errors_per_s.${operation}`, label: 'Errors', color: 1 },
    ];
    const keys = (s: ChartSeries[]) => s.map((x) => x.key);
    // A second without requests had none: zero, not a gap. Complete seconds only, as every rate.
    return { latency, load, latencyData: alignSeries(summary, keys(latency)), loadData: zeroFilled(alignSeries(summary, keys(load), { complete: true })) };
  }, [summary, operation]);
  return (
    <div className="grid gap-4 lg:grid-cols-2">
      <MetricChart
        title={`Latency of ${operation}`}
        series={charts.latency}
        data={charts.latencyData}
        format={formatMs}
        unit="ms"
        minTop={0.1}
        windowLong={windowLong}
        height={200}
      />
      <MetricChart
        title={`Requests and errors of ${operation} per second`}
        series={charts.load}
        data={charts.loadData}
        format={formatCount}
        unit="/s"
        integer
        windowLong={windowLong}
        height={200}
      />
    </div>
  );
}

/** Counts with no point in a second are zero there; the latest is then the last second's. */
function zeroFilled(data: ChartData): ChartData {
  const ys = data.ys.map((y) => y.map((v) => v ?? 0));
  return { ...data, ys, latest: ys.map((y) => y.at(-1)), peak: ys.map((y, i) => data.peak[i] ?? (y.length > 0 ? 0 : undefined)) };
}
