/**
 * `<input type="datetime-local">` speaks the reader's local wall time without
 * a zone; the URL and the API speak ISO instants. These convert between them.
 */

/** "2026-11-29T21:40" (local) → "2026-11-29T20:40:00.000Z"; undefined when incomplete or invalid. */
export function localInputToIso(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** An ISO instant → the datetime-local value showing it in local time ("" when absent or invalid). */
export function isoToLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  const base = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
  return d.getSeconds() ? `${base}:${p(d.getSeconds())}` : base;
}
