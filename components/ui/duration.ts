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

/**
 * A configured span in milliseconds, exactly, as people say it: "250 ms",
 * "30s", "1.5s", "1m 30s", "1h", "24h". Unlike `formatDuration` nothing is
 * rounded away: a policy's 1,500 ms is "1.5s", not "2s".
 */
export function formatMillis(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  if (ms < 1000) return `${ms} ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  const sec = s === 0 ? '' : `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`;
  return [h && `${h}h`, m && `${m}m`, sec].filter(Boolean).join(' ');
}
