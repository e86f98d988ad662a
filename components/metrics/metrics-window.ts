'use client';

import { useSearchParams } from 'next/navigation';

/** The time windows the charts offer; `key` is the `?window=` value in the URL. */
export const METRICS_WINDOWS = [
  { key: '1m', label: '1 min', long: 'last minute', seconds: 60 },
  { key: '5m', label: '5 min', long: 'last 5 minutes', seconds: 300 },
  { key: '15m', label: '15 min', long: 'last 15 minutes', seconds: 900 },
] as const;

export type MetricsWindow = (typeof METRICS_WINDOWS)[number];

const DEFAULT_WINDOW: MetricsWindow = METRICS_WINDOWS[1];

/** The window named by `?window=` (an unknown value falls back to 5 minutes, never an error). */
export function windowFromParam(value: string | null): MetricsWindow {
  return METRICS_WINDOWS.find((w) => w.key === value) ?? DEFAULT_WINDOW;
}

export function useMetricsWindow(): MetricsWindow {
  return windowFromParam(useSearchParams().get('window'));
}
