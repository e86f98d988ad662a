import type { MetricsSummary } from '@/lib/client';
import { latencyOperations } from '@/components/metrics/series';

/** One operation's figures over the summary's window (a row of the latency table). */
export interface OperationStats {
  operation: string;
  /** Requests answered in the window (undefined from a server that does not count them). */
  requests: number | undefined;
  /** Of those, answers with status `error` (conflicts included). */
  errors: number | undefined;
  /** The median of the seconds' medians, each second weighted by its requests (ms). */
  p50: number;
  /** The worst second's p99 in the window (ms). */
  p99: number;
}

const SORT_KEYS = ['operation', 'requests', 'errors', 'p50', 'p99'] as const;
export type SortKey = (typeof SORT_KEYS)[number];
type SortOrder = 'asc' | 'desc';

/** What the table is sorted by when the URL says nothing: the slowest first. */
export const DEFAULT_SORT: { key: SortKey; order: SortOrder } = { key: 'p99', order: 'desc' };

/** `?sort=` and `?order=` as a sort (anything unknown falls back to the default, never an error). */
export function sortFromParams(sort: string | null, order: string | null): { key: SortKey; order: SortOrder } {
  const key = (SORT_KEYS as readonly string[]).includes(sort ?? '') ? (sort as SortKey) : DEFAULT_SORT.key;
  const fallback: SortOrder = key === 'operation' ? 'asc' : 'desc';
  return { key, order: order === 'asc' || order === 'desc' ? order : fallback };
}

const sum = (points: ReadonlyArray<readonly [number, number]> | undefined) => (points ? points.reduce((n, [, v]) => n + v, 0) : undefined);

/**
 * Every operation with latency in the window, with its requests, error
 * answers, p50 and p99 over the window. The summary has each second's
 * quantiles, not the window's samples, so the window's figures are made of
 * them: p50 the request-weighted median of the seconds' p50, p99 the worst
 * second's p99 (an upper bound of the window's p99: what on-call looks for).
 */
export function operationStats(summary: MetricsSummary): OperationStats[] {
  return latencyOperations(summary).map((operation) => {
    const p50s = summary.series[`latency_p50_ms.${operation}`] ?? [];
    const p99s = summary.series[`latency_p99_ms.${operation}`] ?? [];
    const counts = summary.series[`requests_per_s.${operation}`];
    const weightAt = new Map(counts?.map(([t, n]) => [t, n]));
    return {
      operation,
      requests: sum(counts),
      errors: sum(summary.series[`errors_per_s.${operation}`]),
      p50: weightedMedian(p50s.map(([t, v]) => [v, counts ? (weightAt.get(t) ?? 0) : 1])),
      p99: p99s.reduce((m, [, v]) => Math.max(m, v), 0),
    };
  });
}

/** The value below which half the weight lies ([value, weight] pairs; unweighted when every weight is 0). */
export function weightedMedian(pairs: ReadonlyArray<readonly [number, number]>): number {
  if (pairs.length === 0) return 0;
  const total = pairs.reduce((n, [, w]) => n + w, 0);
  const sorted = [...pairs].sort((a, b) => a[0] - b[0]);
  if (total <= 0) return sorted[Math.floor((sorted.length - 1) / 2)]![0];
  let acc = 0;
  for (const [v, w] of sorted) {
    acc += w;
    if (acc * 2 >= total) return v;
  }
  return sorted[sorted.length - 1]![0];
}

/** The rows in the chosen order; ties by operation name, so the order is stable from one second to the next. */
export function sortStats(rows: readonly OperationStats[], key: SortKey, order: SortOrder): OperationStats[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    if (key !== 'operation') {
      const d = ((a[key] ?? -1) - (b[key] ?? -1)) * sign;
      if (d !== 0) return d;
      return a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0;
    }
    return (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0) * sign;
  });
}

/** Error answers as a share of requests: "0 %", "2.5 %", "—" when nothing was counted. */
export function formatErrorRate(errors: number | undefined, requests: number | undefined): string {
  if (errors === undefined || !requests) return '—';
  const pct = (errors / requests) * 100;
  if (pct === 0) return '0 %';
  if (pct < 0.1) return '<0.1 %';
  return `${pct >= 10 ? Math.round(pct) : Math.round(pct * 10) / 10} %`;
}
