/**
 * Canvas colours for the charts, per theme: uPlot draws on a canvas, so
 * Tailwind's `dark:` cannot reach it. Hex values of the zinc palette and of
 * the 600 (light) and 400 (dark) shades, as the rest of the console uses.
 */
interface ChartTheme {
  /** Axis values. */
  axis: string;
  /** Grid lines and ticks. */
  grid: string;
  /** Series colours; index 0 is the accent (teal). */
  palette: readonly string[];
}

const LIGHT_CHART: ChartTheme = {
  axis: '#52525b',
  grid: '#e4e4e7',
  palette: ['#0d9488', '#d97706', '#4f46e5', '#dc2626', '#0284c7', '#c026d3', '#65a30d', '#ea580c', '#7c3aed', '#db2777', '#059669', '#0891b2'],
};

const DARK_CHART: ChartTheme = {
  axis: '#a1a1aa',
  grid: '#3f3f46',
  palette: ['#2dd4bf', '#fbbf24', '#818cf8', '#f87171', '#38bdf8', '#e879f9', '#a3e635', '#fb923c', '#a78bfa', '#f472b6', '#34d399', '#22d3ee'],
};

export const chartTheme = (dark: boolean): ChartTheme => (dark ? DARK_CHART : LIGHT_CHART);

export function seriesColor(theme: ChartTheme, index: number): string {
  return theme.palette[index % theme.palette.length]!;
}
