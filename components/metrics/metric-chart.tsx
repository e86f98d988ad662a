'use client';

import { useId, useMemo, useState } from 'react';
import uPlot from 'uplot';
import { cn } from '@/components/ui/cn';
import { useDarkMode } from '@/components/ui/use-dark-mode';
import { chartTheme, seriesColor } from '@/components/metrics/chart-theme';
import type { ChartData } from '@/components/metrics/series';
import { UPlotChart, type PlotOptions } from '@/components/metrics/uplot-chart';
import { axisLabels, formatClock } from '@/components/ui/time';

export interface ChartSeries {
  /** The summary's series name. */
  key: string;
  label: string;
  /** Index into the theme's palette. */
  color: number;
}

interface MetricChartProps {
  /** The figure's caption, which names it. */
  title: string;
  series: readonly ChartSeries[];
  data: ChartData;
  /** Formats values for the readout. */
  format: (v: number | undefined | null) => string;
  /** After each value in the readout, e.g. `per second`, `ms`. */
  unit?: string;
  /** Whole numbers only on the y axis (counts). */
  integer?: boolean;
  /** The y axis reaches at least this, so a flat zero line sits at the bottom. */
  minTop?: number;
  /** Lines span seconds without a point (latency: seconds without requests). */
  spanGaps?: boolean;
  /** e.g. "last 5 minutes", for the chart's description. */
  windowLong: string;
  height?: number;
  /** Many series (one per operation): a smaller readout. */
  compact?: boolean;
  /** Shown instead of the chart when there are no series. */
  empty?: string;
  className?: string;
}

const FONT = '11px ui-sans-serif, system-ui, sans-serif';
/** Axis values: as few digits as the ticks need (0.25, 20, 1,000). */
const axisNumber = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 1_000_000];

/**
 * One chart as a `figure` named by its caption: the latest value of each
 * series (and its peak in the window) as text, one group per series named by
 * it, which is also the legend, and
 * the uPlot drawing. Hovering the drawing shows the values at that second.
 */
export function MetricChart(props: MetricChartProps) {
  const { title, series, data, format, unit, windowLong, height = 180, compact = false, empty, className } = props;
  const captionId = useId();
  const dark = useDarkMode();
  const [hover, setHover] = useState<number | null>(null);
  const theme = chartTheme(dark);
  const single = series.length === 1;

  const shape = series.map((s) => `${s.key}:${s.color}`).join('|');
  const options = useMemo(
    () => plotOptions(props, dark),
    // Rebuilt only when the look or the set of series changes (`shape`
    // stands for `props.series`); the data goes through setData.
    [dark, shape, props.integer, props.minTop, props.spanGaps],
  );
  const plotData = useMemo(() => [data.x, ...data.ys] as uPlot.AlignedData, [data]);

  const at = hover !== null && hover >= 0 && hover < data.x.length ? hover : null;
  const valueOf = (i: number) => (at === null ? data.latest[i] : (data.ys[i]![at] ?? undefined));
  const points = data.ys[0]?.filter((v) => v !== null).length ?? 0;

  return (
    <figure
      aria-labelledby={captionId}
      data-last-at={data.end}
      data-points={points}
      className={cn('min-w-0 rounded-xl border border-zinc-200 p-4 dark:border-zinc-800', className)}
    >
      <div className={cn('flex gap-x-6 gap-y-2', single ? 'items-start justify-between' : 'flex-col')}>
        <div className="min-w-0">
          <figcaption id={captionId} className="text-sm font-medium text-zinc-900 dark:text-zinc-100">
            {title}
          </figcaption>
          <p className="text-xs text-zinc-500 dark:text-zinc-400">
            {at === null ? `latest · ${windowLong}` : `at ${formatClock(data.x[at]! * 1000)}`}
          </p>
        </div>
        {series.length > 0 && (
          <div className={cn('flex flex-wrap', compact ? 'gap-x-4 gap-y-1.5' : 'gap-x-8 gap-y-2', single && 'text-right')}>
            {series.map((s, i) => {
              const labelId = `${captionId}-${i}`;
              // One group per series, named by it: its value now (or under the pointer) and its peak.
              return (
                <div key={s.key} role="group" aria-labelledby={labelId} className="min-w-0">
                  <p id={labelId} className={cn('flex items-center gap-1.5 text-xs text-zinc-600 dark:text-zinc-400', single && 'sr-only')}>
                    <span aria-hidden="true" className="size-2.5 shrink-0 rounded-full" style={{ backgroundColor: seriesColor(theme, s.color) }} />
                    <span className={cn('truncate', compact && 'font-mono')}>{s.label}</span>
                  </p>
                  <p className="mt-0.5 tabular-nums">
                    <span className={cn('font-semibold text-zinc-900 dark:text-zinc-50', compact ? 'text-sm' : single ? 'text-3xl' : 'text-2xl')}>
                      {format(valueOf(i))}
                    </span>
                    {unit && <span className="text-xs text-zinc-500 dark:text-zinc-400"> {unit}</span>}
                    <span className={cn('text-xs text-zinc-500 dark:text-zinc-400', (single || !compact) && 'block')}>
                      {compact ? ' · ' : ''}peak {format(data.peak[i])}
                    </span>
                  </p>
                </div>
              );
            })}
          </div>
        )}
      </div>
      {series.length === 0 ? (
        <p className="mt-4 flex items-center justify-center rounded-lg border border-dashed border-zinc-300 text-sm text-zinc-500 dark:border-zinc-700 dark:text-zinc-400" style={{ height }}>
          {empty ?? 'No data in this window.'}
        </p>
      ) : (
        <UPlotChart
          className="mt-3"
          options={options}
          data={plotData}
          height={height}
          onCursor={setHover}
          label={`${title}, one point per second over the ${windowLong}`}
        />
      )}
    </figure>
  );
}

function plotOptions(props: MetricChartProps, dark: boolean): PlotOptions {
  const theme = chartTheme(dark);
  const { integer = false, minTop = 1, spanGaps = false } = props;
  const axis: uPlot.Axis = {
    stroke: theme.axis,
    font: FONT,
    grid: { stroke: theme.grid, width: 1 },
    ticks: { stroke: theme.grid, width: 1, size: 4 },
  };
  return {
    legend: { show: false },
    // Zooming would be undone by the next second's data: hover only.
    cursor: { drag: { x: false, y: false, setScale: false }, points: { size: 7 } },
    // Room on the right for the last x-axis label, centred on the plot's edge (else it is clipped).
    padding: [8, 32, 0, 0],
    scales: {
      x: { time: true },
      y: { range: (_u, _min, max) => uPlot.rangeNum(0, Math.max(max ?? 0, minTop), 0.1, true) },
    },
    axes: [
      // Time labels the console's way (24 h, the operator's zone), not uPlot's "6:55pm 12/2/26".
      { ...axis, space: 60, values: (_u, splits, _axis, _space, incr) => axisLabels(splits.map((s) => s * 1000), incr * 1000) },
      {
        ...axis,
        size: 52,
        space: 28,
        incrs: integer ? COUNT_INCRS : undefined,
        values: (_u, splits) => splits.map((v) => axisNumber.format(v)),
      },
    ],
    series: [
      {},
      ...props.series.map((s): uPlot.Series => {
        const stroke = seriesColor(theme, s.color);
        return {
          label: s.label,
          stroke,
          width: 1.75,
          spanGaps,
          // A lone gauge gets a faint area; overlapping series stay lines.
          fill: props.series.length === 1 ? `${stroke}${dark ? '26' : '1a'}` : undefined,
          points: { show: sparse, size: 4, fill: stroke },
        };
      }),
    ],
  };
}

/** Draw points only where they are few enough to tell apart (sparse latency, a window just started). */
function sparse(u: uPlot, seriesIdx: number, idx0: number, idx1: number): boolean {
  const ys = u.data[seriesIdx]!;
  let n = 0;
  for (let i = idx0; i <= idx1; i++) if (ys[i] !== null && ys[i] !== undefined) n++;
  return n * 10 < u.width;
}
