/** A span of time as people say it: "45s", "90s", "2m 30s", "5m", "1h 05m", "1d 2h". */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120 && s % 60 !== 0) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${String(s % 60).padStart(2, '0')}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${String(m % 60).padStart(2, '0')}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}
