/**
 * The console's one way of writing a moment (docs/console.md "Times"): the
 * 24-hour clock in the operator's own time zone (the browser's), with the
 * date in front when it is not today, and the exact ISO instant in the
 * `title` of the `<time>` element that shows it (components/ui/timestamp.tsx).
 * Every time the console prints, axes included, comes through here, so no
 * page mixes "06:54:14 PM", "6:55pm 12/2/26" and "18:54".
 */

/** A moment as the API gives it (ISO text) or as the page computes it (epoch ms). */
export type Instant = string | number | Date;

/** "in 12s", "3m 04s", "expired"; the remaining time of a lease, to the second. */
export function formatRemaining(ms: number): string {
  if (ms <= 0) return 'expired';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${String(m % 60).padStart(2, '0')}m`;
}

// Formatters are built once: `toLocaleString(…, options)` builds a new
// Intl.DateTimeFormat on every call (milliseconds each), which a table of
// hundreds of rows cannot afford. `hourCycle: 'h23'`, not `hour12: false`:
// the latter writes midnight as "24:00:00" in some engines.
const CLOCK = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
const CLOCK_MINUTES = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const DAY = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const DAY_YEAR = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });

function dateOf(at: Instant): Date {
  return at instanceof Date ? at : new Date(at);
}

function sameLocalDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}

function day(d: Date, now: Date): string {
  return (d.getFullYear() === now.getFullYear() ? DAY : DAY_YEAR).format(d);
}

/** The exact instant, for `dateTime` and the hover title: "2026-12-02T18:54:14.120Z" ("" when invalid). */
export function isoOf(at: Instant): string {
  const d = dateOf(at);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** "18:54:14": the 24-hour clock in the operator's time zone, to the second. */
export function formatClock(at: Instant): string {
  const d = dateOf(at);
  return Number.isNaN(d.getTime()) ? String(at) : CLOCK.format(d);
}

/** "18:54:14" today, else "Dec 1 18:54:14" (the year too when it is not this year). */
export function formatTime(at: Instant, now: number = Date.now()): string {
  const d = dateOf(at);
  if (Number.isNaN(d.getTime())) return String(at);
  const today = new Date(now);
  return sameLocalDay(d, today) ? CLOCK.format(d) : `${day(d, today)} ${CLOCK.format(d)}`;
}

/** "Dec 2 18:54:14": always with the date (audit rows and token expiries are compared across days). */
export function formatDateTime(at: Instant, now: number = Date.now()): string {
  const d = dateOf(at);
  return Number.isNaN(d.getTime()) ? String(at) : `${day(d, new Date(now))} ${CLOCK.format(d)}`;
}

/** "12s ago", "5m ago", "3h ago", "2d ago". */
export function formatAgo(at: Instant, now: number = Date.now()): string {
  const s = Math.max(0, Math.round((now - dateOf(at).getTime()) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** The operator's time zone as the browser names it ("Europe/Berlin"), which every time shown is in. */
export function timeZoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Tick spacings of a time axis, smallest first. */
const STEPS = [
  1_000, 2_000, 5_000, 10_000, 15_000, 30_000,
  60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
  3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
  86_400_000, 172_800_000, 604_800_000,
];

interface TimeTick {
  at: number;
  label: string;
}

/**
 * Ticks for a time axis over [from, to] at most `maxTicks` of them, on round
 * local times (every 10 s, every 15 min, each local midnight…), labelled by
 * `axisLabels` (`now`: which day is today).
 */
export function timeTicks(from: number, to: number, maxTicks: number, now: number = Date.now()): TimeTick[] {
  const span = Math.max(1, to - from);
  const step = STEPS.find((s) => span / s <= Math.max(1, maxTicks)) ?? STEPS[STEPS.length - 1]!;
  const at: number[] = [];
  // Rounded in local time: a step of an hour or a day falls on the local hour or midnight.
  const offset = (t: number) => -new Date(t).getTimezoneOffset() * 60_000;
  for (let t = Math.ceil((from + offset(from)) / step) * step - offset(from); t <= to; t += step) at.push(t);
  const labels = axisLabels(at, step, now);
  return at.map((t, i) => ({ at: t, label: labels[i]! }));
}

/**
 * Labels for axis ticks `step` ms apart (epoch ms): "18:54:10" under a
 * minute, "18:54" under a day, "Dec 2" for days; the date goes in front of
 * the first tick and of each tick on a new local day. uPlot's own time axis
 * would write "6:55pm 12/2/26"; the charts pass their splits through this.
 */
export function axisLabels(ticks: readonly number[], step: number, nowMs: number = Date.now()): string[] {
  const now = new Date(nowMs);
  let prev: Date | undefined;
  return ticks.map((t, i) => {
    const d = new Date(t);
    // The first tick is dated unless it is today; a later one when the day turns.
    const dated = i === 0 ? !sameLocalDay(d, now) : !sameLocalDay(d, prev!);
    prev = d;
    if (step >= 86_400_000) return day(d, now);
    const clock = step < 60_000 ? CLOCK.format(d) : CLOCK_MINUTES.format(d);
    return dated ? `${day(d, now)} ${clock}` : clock;
  });
}
