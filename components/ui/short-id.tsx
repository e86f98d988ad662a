import { CopyButton } from '@/components/ui/copy-button';
import { cn } from '@/components/ui/cn';

/** The head of a long random id (prefix plus 8 characters); the whole id is in the title and the copy button. */
function shortId(id: string): string {
  const us = id.indexOf('_');
  const keep = (us >= 0 && us < 6 ? us + 1 : 0) + 8;
  return id.length > keep + 1 ? `${id.slice(0, keep)}…` : id;
}

/** An id shortened for a table cell, with a copy button named after what it copies ("Copy incarnation"). */
export function ShortId({ id, copyLabel, className }: { id: string; copyLabel?: string; className?: string }) {
  return (
    <span className={cn('inline-flex items-center gap-1', className)}>
      <span className="font-mono text-xs text-zinc-700 dark:text-zinc-300" title={id}>
        {shortId(id)}
      </span>
      {copyLabel && <CopyButton value={id} label={copyLabel} />}
    </span>
  );
}
