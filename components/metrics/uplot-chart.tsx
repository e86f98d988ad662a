'use client';

import { useEffect, useLayoutEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { cn } from '@/components/ui/cn';

/** uPlot's options without a size: the wrapper sizes the chart to its container. */
export type PlotOptions = Omit<uPlot.Options, 'width' | 'height'>;

interface UPlotChartProps {
  /** Keep its identity across renders: a new object rebuilds the chart (a theme change, new series). */
  options: PlotOptions;
  /** Aligned data, one array per series of `options` (x first). */
  data: uPlot.AlignedData;
  /** Height of the plot with its axes, in CSS pixels. */
  height: number;
  /** What the picture shows, for assistive technology (the figure holds the values as text). */
  label: string;
  /** The data index under the pointer, or null when it leaves the plot. */
  onCursor?: (idx: number | null) => void;
  className?: string;
}

/**
 * A uPlot chart as a React leaf. The instance is created once per `options`
 * and fed with `setData` on every update (no rebuild per poll), follows its
 * container's width through a ResizeObserver, and is destroyed on unmount.
 */
export function UPlotChart({ options, data, height, label, onCursor, className }: UPlotChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<{ u: uPlot; options: PlotOptions } | null>(null);
  const latest = useRef(data);
  const cursor = useRef(onCursor);
  const name = useRef(label);
  useEffect(() => {
    cursor.current = onCursor;
  }, [onCursor]);

  // Layout effects: a rebuild (a theme change) lands in the same frame as the
  // rest of the page's restyle. Declared before the effect that builds, so a
  // rebuild in the same commit uses this data.
  useLayoutEffect(() => {
    latest.current = data;
    // Only into a chart built from these options: after a change of series
    // the data has another shape, and the effect below rebuilds with it.
    if (plot.current?.options === options) plot.current.u.setData(data);
  }, [data, options]);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const hooks: uPlot.Hooks.Arrays = {
      ...options.hooks,
      setCursor: [...(options.hooks?.setCursor ?? []), (self) => cursor.current?.(self.cursor.idx ?? null)],
    };
    const u = new uPlot({ ...options, hooks, width: widthOf(el), height }, latest.current, el);
    // The picture is the canvas alone: what uPlot layers over it (the cursor,
    // focusable marks a caller adds to `u.over`) is its sibling, never inside
    // an element with role="img" (axe: nested-interactive).
    u.ctx.canvas.setAttribute('role', 'img');
    u.ctx.canvas.setAttribute('aria-label', name.current);
    plot.current = { u, options };
    const resize = new ResizeObserver(() => {
      const width = widthOf(el);
      if (width !== u.width) u.setSize({ width, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [options, height]);

  useLayoutEffect(() => {
    name.current = label;
    plot.current?.u.ctx.canvas.setAttribute('aria-label', label);
  }, [label]);

  return <div ref={box} className={cn('w-full min-w-0 overflow-hidden', className)} style={{ height }} />;
}

function widthOf(el: HTMLElement): number {
  return Math.max(120, Math.floor(el.clientWidth));
}
