'use client';

import { useId, type ReactNode } from 'react';
import { cn } from '@/components/ui/cn';

/** A definition list with one aligned label column; each value is named by its label (role definition, name = label). */
export function DetailList({ children, className }: { children: ReactNode; className?: string }) {
  return <dl className={cn('divide-y divide-zinc-100 text-sm dark:divide-zinc-800/80', className)}>{children}</dl>;
}

export function DetailRow({ label, hint, highlight, children }: { label: string; hint?: string; highlight?: boolean; children: ReactNode }) {
  const id = useId();
  return (
    <div
      className={cn(
        'grid grid-cols-1 gap-x-4 gap-y-0.5 px-4 py-2.5 transition-colors duration-700 sm:grid-cols-[11rem_minmax(0,1fr)]',
        highlight ? 'bg-teal-50 dark:bg-teal-950/60' : 'bg-transparent',
      )}
    >
      <dt id={id} className="text-zinc-500 dark:text-zinc-400" title={hint}>
        {label}
      </dt>
      <dd aria-labelledby={id} className="min-w-0 text-zinc-900 dark:text-zinc-100">
        {children}
      </dd>
    </div>
  );
}

/** Placeholder rows in the list's own shape while it loads. */
export function DetailSkeleton({ rows }: { rows: number }) {
  return (
    <div aria-hidden="true" className="divide-y divide-zinc-100 dark:divide-zinc-800/80">
      {Array.from({ length: rows }, (_, r) => (
        <div key={r} className="grid grid-cols-[11rem_1fr] gap-4 px-4 py-3">
          <div className="h-3.5 w-24 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
          <div className="h-3.5 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" style={{ width: `${35 + ((r * 17) % 45)}%` }} />
        </div>
      ))}
    </div>
  );
}

/** A titled card: the page's sections share it, so the three read as one set. */
export function Panel({ title, description, actions, children, className }: { title: string; description?: ReactNode; actions?: ReactNode; children: ReactNode; className?: string }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className={cn('overflow-hidden rounded-lg border border-zinc-200 dark:border-zinc-800', className)}>
      <div className="flex flex-wrap items-center justify-between gap-x-4 gap-y-1 border-b border-zinc-200 bg-zinc-50/60 px-4 py-2.5 dark:border-zinc-800 dark:bg-zinc-900/50">
        <div className="min-w-0">
          <h2 id={id} className="text-sm font-semibold">
            {title}
          </h2>
          {description && <p className="text-xs text-zinc-500 dark:text-zinc-400">{description}</p>}
        </div>
        {actions && <div className="flex items-center gap-2">{actions}</div>}
      </div>
      {children}
    </section>
  );
}
