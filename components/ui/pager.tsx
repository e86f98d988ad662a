import type { ReactNode } from 'react';
import { Button } from '@/components/ui/button';

/** Previous page / Next page under a cursor-paged table, with a short summary of where the reader is. */
function Pager({
  summary,
  hasPrevious,
  hasNext,
  busy,
  onPrevious,
  onNext,
}: {
  summary?: ReactNode;
  hasPrevious: boolean;
  hasNext: boolean;
  busy?: boolean;
  onPrevious: () => void;
  onNext: () => void;
}) {
  return (
    <div className="flex flex-wrap items-center justify-between gap-3 text-sm text-zinc-600 dark:text-zinc-400">
      <div aria-live="polite">{summary}</div>
      <div className="flex items-center gap-2">
        <Button size="sm" onClick={onPrevious} disabled={!hasPrevious || busy}>
          <span aria-hidden="true">←</span> Previous page
        </Button>
        <Button size="sm" onClick={onNext} disabled={!hasNext || busy}>
          Next page <span aria-hidden="true">→</span>
        </Button>
      </div>
    </div>
  );
}

/** A Pager driven by a cursor trail (`useCursorTrail`) and the page's `next_cursor`. */
export function TrailPager({
  trail,
  nextCursor,
  busy,
  summary,
}: {
  trail: { hasPrevious: boolean; previous: () => void; next: (cursor: string) => void };
  nextCursor: string | null;
  busy?: boolean;
  summary?: ReactNode;
}) {
  return (
    <Pager
      summary={summary}
      hasPrevious={trail.hasPrevious}
      hasNext={nextCursor !== null}
      busy={busy}
      onPrevious={trail.previous}
      onNext={() => nextCursor !== null && trail.next(nextCursor)}
    />
  );
}
