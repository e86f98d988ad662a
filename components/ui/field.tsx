import { cva } from 'class-variance-authority';
import type { ReactNode } from 'react';
import { cn } from '@/components/ui/cn';

/** The one look of text inputs, selects and textareas; `invalid` turns the border red (pair it with aria-invalid). */
export const controlVariants = cva(
  'block w-full rounded-lg border bg-white px-3 text-sm shadow-xs placeholder:text-zinc-400 disabled:cursor-not-allowed disabled:opacity-50 dark:bg-zinc-900 dark:placeholder:text-zinc-500',
  {
    variants: {
      invalid: {
        true: 'border-red-500 dark:border-red-500',
        false: 'border-zinc-300 dark:border-zinc-700',
      },
      shape: {
        line: 'h-9',
        area: 'py-2 leading-6',
      },
      mono: { true: 'font-mono', false: '' },
    },
    defaultVariants: { invalid: false, shape: 'line', mono: false },
  },
);

/** The ids a control points at with aria-describedby, so its hint and its error are read with it. */
export function describedBy(id: string, parts: { hint?: boolean; error?: boolean }): string | undefined {
  const ids = [parts.error && `${id}-error`, parts.hint && `${id}-hint`].filter(Boolean);
  return ids.length ? ids.join(' ') : undefined;
}

/**
 * A labelled control with an optional hint and error below it. The control
 * itself carries `id={id}` and `aria-describedby={describedBy(id, …)}`.
 */
export function Field({
  id,
  label,
  hint,
  error,
  className,
  children,
}: {
  id: string;
  label: ReactNode;
  hint?: ReactNode;
  error?: ReactNode;
  className?: string;
  children: ReactNode;
}) {
  return (
    <div className={cn('min-w-0', className)}>
      <label htmlFor={id} className="mb-1.5 block text-sm font-medium text-zinc-800 dark:text-zinc-200">
        {label}
      </label>
      {children}
      {error && (
        <p id={`${id}-error`} className="mt-1.5 text-xs text-red-700 dark:text-red-400">
          {error}
        </p>
      )}
      {hint && (
        <p id={`${id}-hint`} className="mt-1.5 text-xs text-zinc-500 dark:text-zinc-400">
          {hint}
        </p>
      )}
    </div>
  );
}
