import type { ReactNode } from 'react';
import { isLeaseholdError } from '@/lib/client';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';

/** The parts of a failure a person needs: what the API said and the id to quote to whoever runs the server. */
export function describeError(error: unknown): { code: string; message: string; correlationId: string | undefined } {
  if (isLeaseholdError(error)) return { code: error.code, message: error.message, correlationId: error.correlationId };
  return { code: 'error', message: error instanceof Error ? error.message : String(error), correlationId: undefined };
}

export function isDenied(error: unknown): boolean {
  return isLeaseholdError(error, 'access_denied');
}

/** A failed call: the API's message and its correlation id (docs/console.md: any failed action is an alert). */
export function ErrorAlert({ error, title = 'Something went wrong', action, className }: { error: unknown; title?: string; action?: ReactNode; className?: string }) {
  const { code, message, correlationId } = describeError(error);
  return (
    <div
      role="alert"
      className={cn(
        'rounded-lg border border-red-200 bg-red-50 px-4 py-3 text-sm text-red-900 dark:border-red-900 dark:bg-red-950/60 dark:text-red-200',
        className,
      )}
    >
      <p className="font-medium">{title}</p>
      <p className="mt-1">{message}</p>
      <p className="mt-1 text-xs text-red-800/80 dark:text-red-300/80">
        <span className="font-mono">{code}</span>
        {correlationId && (
          <>
            {' · correlation id '}
            <span className="font-mono select-all">{correlationId}</span>
          </>
        )}
      </p>
      {action && <div className="mt-3">{action}</div>}
    </div>
  );
}

/** The caller's token does not allow this: say which, and what would. */
export function DeniedPanel({ error, what }: { error: unknown; what: string }) {
  const { message, correlationId } = describeError(error);
  return (
    <div
      role="alert"
      className="rounded-lg border border-amber-200 bg-amber-50 px-4 py-3 text-sm text-amber-900 dark:border-amber-900 dark:bg-amber-950/50 dark:text-amber-200"
    >
      <p className="font-medium">Access denied: your token cannot {what}.</p>
      <p className="mt-1">{message}</p>
      <p className="mt-1 text-xs opacity-80">
        A token reads only what one of its grants contains whole; a narrower selector inside your grants will work.
        {correlationId && (
          <>
            {' '}Correlation id <span className="font-mono select-all">{correlationId}</span>.
          </>
        )}
      </p>
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center dark:border-zinc-700">
      <p className="font-medium">{title}</p>
      {children && <div className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">{children}</div>}
    </div>
  );
}

/** Placeholder rows while a table loads, the table's own shape so nothing jumps. */
export function SkeletonRows({ rows = 6, cols }: { rows?: number; cols: number }) {
  return (
    <>
      {Array.from({ length: rows }, (_, r) => (
        <tr key={r} aria-hidden="true">
          {Array.from({ length: cols }, (_, c) => (
            <td key={c} className="px-3 py-2.5">
              <div className="h-3.5 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" style={{ width: `${40 + ((r * 7 + c * 13) % 50)}%` }} />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}

export function PageHeader({ title, description, children }: { title: string; description?: ReactNode; children?: ReactNode }) {
  return (
    <div className="flex flex-wrap items-end justify-between gap-4">
      <div className="min-w-0">
        <h1 className="text-2xl font-semibold tracking-tight">{title}</h1>
        {description && <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">{description}</p>}
      </div>
      {children && <div className="flex flex-wrap items-center gap-2">{children}</div>}
    </div>
  );
}

/**
 * A paged list that could not be read: a cursor from an old link (or another
 * server epoch) offers the first page; anything else offers a retry. Access
 * denied is each page's own panel, since what to offer instead differs.
 */
export function ListLoadError({ error, what, onFirstPage, onRetry }: { error: unknown; what: string; onFirstPage: () => void; onRetry: () => void }) {
  if (isLeaseholdError(error, 'cursor_invalid')) {
    return (
      <ErrorAlert
        error={error}
        title="This page link is no longer valid"
        action={
          <Button size="sm" onClick={onFirstPage}>
            Go to the first page
          </Button>
        }
      />
    );
  }
  return (
    <ErrorAlert
      error={error}
      title={`${what} could not be loaded`}
      action={
        <Button size="sm" onClick={onRetry}>
          Try again
        </Button>
      }
    />
  );
}
