import type { ReactNode } from 'react';
import { formatDuration } from '@/components/lease-detail/format';
import { formatTime } from '@/components/ui/time';
import { Timestamp } from '@/components/ui/timestamp';
import { endLabel, type Tenure } from '@/components/lease-detail/lease-history-model';

/** A piece of a tenure's description: words, or a moment (written the console's way). */
type Piece = string | { at: number };

/** When a held tenure ends for drawing and describing: now, as the tab's clock says. */
export function shownEnd(t: Tenure, now: number): number {
  return t.endKind === 'held' && now > t.end ? now : t.end;
}

/**
 * What a tenure was, in the order people ask: who (owner, token), when (from,
 * to, how long), how it ended (and the operator's reason), the lock-delay
 * that followed, renewals, release requests. One list of parts: the bar's
 * name and the list below read it as text, the hover and focus panel with
 * each moment as a `<time>` (ISO on hover).
 */
function pieces(t: Tenure, now: number): Piece[][] {
  const end = shownEnd(t, now);
  const parts: Piece[][] = [
    [`${t.ownerId}, token ${t.fencingToken ?? '?'}`],
    [
      t.startedBefore ? 'held before ' : 'from ',
      { at: t.start },
      ...(t.endKind === 'held' ? [' until now'] : t.endKind === 'unknown' ? [', last seen at ', { at: end }] : [' to ', { at: end }]),
      ` (${formatDuration(Math.max(0, end - t.start))})`,
    ],
  ];
  const how: Piece[] = [endLabel(t)];
  if (t.endedBy && (t.endKind === 'force_released' || t.endKind === 'revoked')) how.push(` by ${t.endedBy}`);
  if (t.reason) how.push(`: “${t.reason}”`);
  parts.push(how);
  if (t.lockDelayUntil !== null && t.lockDelayUntil > t.end) {
    parts.push(['lock-delay until ', { at: t.lockDelayUntil }, ` (${formatDuration(t.lockDelayUntil - t.end)})`]);
  }
  parts.push([`${t.renewals} renewal${t.renewals === 1 ? '' : 's'}`]);
  for (const r of t.requests) parts.push(['release requested at ', { at: r.time }, `: “${r.reason}”`]);
  return parts;
}

/** The tenure as one line of text (the bar's accessible name). */
export function describeTenure(t: Tenure, now: number): string {
  return pieces(t, now)
    .map((part) => part.map((p) => (typeof p === 'string' ? p : formatTime(p.at, now || undefined))).join(''))
    .join('; ');
}

/** The tenure as the hover and focus panel and the list show it: each moment a `<time>` with its ISO instant. */
export function TenureDescription({ tenure, now }: { tenure: Tenure; now: number }): ReactNode {
  return pieces(tenure, now).map((part, i) => (
    <span key={i}>
      {i > 0 && '; '}
      {part.map((p, j) => (typeof p === 'string' ? <span key={j}>{p}</span> : <Timestamp key={j} at={p.at} now={now} />))}
    </span>
  ));
}
