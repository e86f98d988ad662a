import { formatRemaining } from '@/components/ui/time';

/**
 * The session's deadline as last read, counting down on the shared clock.
 * Keepalives move it without telling this page (sessions are not in the
 * feed), so a passed deadline reads as "deadline passed", not "expired":
 * Refresh tells which.
 */
export function SessionExpiry({ expiresAt, now }: { expiresAt: string; now: number }) {
  if (now === 0) return <time dateTime={expiresAt}>…</time>;
  const left = Date.parse(expiresAt) - now;
  if (left <= 0) {
    return (
      <time dateTime={expiresAt} title={`${expiresAt}: the deadline last read has passed; Refresh shows whether a keepalive moved it.`} className="text-amber-700 dark:text-amber-400">
        deadline passed
      </time>
    );
  }
  return (
    <time dateTime={expiresAt} title={expiresAt} className={left < 10_000 ? 'text-amber-700 tabular-nums dark:text-amber-400' : 'tabular-nums'}>
      in {formatRemaining(left)}
    </time>
  );
}
