import { cn } from '@/components/ui/cn';
import { formatClock, formatDateTime, formatTime, isoOf, type Instant } from '@/components/ui/time';

interface TimestampProps {
  at: Instant;
  /** `auto`: the clock today, with the date otherwise; `clock`: the clock alone; `date`: always with the date. */
  format?: 'auto' | 'clock' | 'date';
  /** The tab's clock (`useNow`), for `auto` and `date` (which day is today); 0 or absent: the moment of rendering. */
  now?: number;
  className?: string;
}

/**
 * A moment as the console shows every moment (components/ui/time.ts): the
 * 24-hour clock in the operator's time zone, the exact ISO instant in
 * `dateTime` and on hover.
 */
export function Timestamp({ at, format = 'auto', now, className }: TimestampProps) {
  const iso = isoOf(at);
  const text = format === 'clock' ? formatClock(at) : format === 'date' ? formatDateTime(at, now || undefined) : formatTime(at, now || undefined);
  return (
    <time dateTime={iso} title={iso} className={cn('tabular-nums', className)}>
      {text}
    </time>
  );
}
