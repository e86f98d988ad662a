import type { MetricsSummary } from '@/lib/client';

/** One chart's data, aligned for uPlot: one x per step over the whole window, `null` where a series has no point. */
export interface ChartData {
  /** Unix seconds (uPlot's time unit), oldest first. */
  readonly x: number[];
  /** One array per series, each as long as `x`. */
  readonly ys: (number | null)[][];
  /** Per series: the most recent value in the window (undefined when it has none). */
  readonly latest: (number | undefined)[];
  /** Per series: the highest value in the window. */
  readonly peak: (number | undefined)[];
  /** Unix ms of the window's last second. */
  readonly end: number;
}

/** The second the summary was read in: the newest point of any series. */
export function summaryEnd(summary: MetricsSummary): number | undefined {
  let end: number | undefined;
  for (const points of Object.values(summary.series)) {
    const last = points.at(-1);
    if (last && (end === undefined || last[0] > end)) end = last[0];
  }
  return end;
}

/**
 * Align `names` over the summary's window. With `complete`, the current
 * second is left out: a rate's current second is a count still running, and
 * drawing it would show a drop at the right edge every second. Gauges (live
 * values) and latency (quantiles of the requests so far) keep it.
 */
export function alignSeries(summary: MetricsSummary, names: readonly string[], opts: { complete?: boolean } = {}): ChartData {
  const step = Math.max(1, summary.step_s) * 1000;
  const newest = summaryEnd(summary) ?? 0;
  const end = opts.complete ? newest - step : newest;
  const n = Math.max(1, Math.round(summary.window_s / Math.max(1, summary.step_s)));
  const start = end - (n - 1) * step;
  const x = Array.from({ length: n }, (_, i) => (start + i * step) / 1000);
  const ys: (number | null)[][] = [];
  const latest: (number | undefined)[] = [];
  const peak: (number | undefined)[] = [];
  for (const name of names) {
    const y: (number | null)[] = new Array<number | null>(n).fill(null);
    let last: number | undefined;
    let max: number | undefined;
    for (const [t, v] of summary.series[name] ?? []) {
      const i = Math.round((t - start) / step);
      if (i < 0 || i >= n) continue;
      y[i] = v;
      last = v;
      if (max === undefined || v > max) max = v;
    }
    ys.push(y);
    latest.push(last);
    peak.push(max);
  }
  return { x, ys, latest, peak, end };
}

/** The operations that have latency series in the summary, sorted by name. */
export function latencyOperations(summary: MetricsSummary): string[] {
  const prefix = 'latency_p50_ms.';
  return Object.keys(summary.series)
    .filter((k) => k.startsWith(prefix))
    .map((k) => k.slice(prefix.length))
    .sort();
}

const whole = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const one = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const two = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** Counts and rates: whole numbers (the series are counts per second). */
export function formatCount(v: number | undefined | null): string {
  return v === undefined || v === null ? '—' : whole.format(v);
}

/** Milliseconds with the precision their size deserves: 0.42, 3.1, 250. */
export function formatMs(v: number | undefined | null): string {
  if (v === undefined || v === null) return '—';
  if (v >= 100) return whole.format(v);
  if (v >= 10) return one.format(v);
  return two.format(v);
}
