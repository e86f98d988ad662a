/**
 * Terminal output for the command line: aligned tables, relative times,
 * durations, and colour only on a terminal and never with NO_COLOR
 * (docs/cli.md "Output").
 */

/** The environment variables a function reads (process.env by default). */
export type Env = Readonly<Record<string, string | undefined>>;

export interface Out {
  write(text: string): void;
  readonly isTTY?: boolean | undefined;
}

/** Colour is for people: only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function useColour(out: Out, env: Env = process.env): boolean {
  return out.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
}

/** No styling: what a pipe, a file or NO_COLOR gets. */
export const plain: Style = { bold: (s) => s, dim: (s) => s, red: (s) => s, green: (s) => s };
const ansi: Style = {
  bold: (s) => `\x1b[1m${s}\x1b[22m`,
  dim: (s) => `\x1b[2m${s}\x1b[22m`,
  red: (s) => `\x1b[31m${s}\x1b[39m`,
  green: (s) => `\x1b[32m${s}\x1b[39m`,
};

export function styleFor(out: Out, env?: Env): Style {
  return useColour(out, env) ? ansi : plain;
}

/** Rows under a header, each column padded to its widest cell (numbers right-aligned). */
export function table(header: readonly string[], rows: readonly (readonly string[])[], style: Style = plain, numeric: ReadonlySet<number> = new Set()): string {
  return tableWriter(header, style, numeric)(rows);
}

/**
 * A table printed a batch at a time, for output that keeps coming (`audit
 * --follow`): the header comes with the first batch only, and each column is
 * as wide as its widest cell so far, so rows line up with the ones above
 * them until a wider cell arrives.
 */
export function tableWriter(header: readonly string[], style: Style = plain, numeric: ReadonlySet<number> = new Set()): (rows: readonly (readonly string[])[]) => string {
  const widths = header.map((h) => h.length);
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 && !numeric.has(i) ? c : numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  let headed = false;
  return (rows) => {
    for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
    const lines = rows.map(line);
    if (!headed) lines.unshift(style.bold(line(header)));
    headed = true;
    return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  };
}

/** `12s`, `4m 05s`, `2h 03m`, `3d 04h`: a duration for a table cell. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${String(h % 24).padStart(2, '0')}h`;
}

/** `in 12s` or `3m 05s ago`, relative to `now`. */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const delta = Date.parse(iso) - now;
  if (Number.isNaN(delta)) return iso;
  return delta >= 0 ? `in ${shortDuration(delta)}` : `${shortDuration(-delta)} ago`;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `30s`, `5m`, `2h`, `1d`, or a bare number of milliseconds; undefined when it is none of those. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']!);
}

/** An ISO time, or a duration meaning that long ago (`10m`, `2h`). */
export function parseSince(text: string, now = Date.now()): string | undefined {
  const ms = parseDuration(text);
  if (ms !== undefined && /[a-z]$/.test(text.trim())) return new Date(now - ms).toISOString();
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

/** One JSON document per line: what `--json` prints for lists and live output, so a script can stream it. */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}
