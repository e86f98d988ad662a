'use client';

import { useId, type ReactNode } from 'react';
import { Button } from '@/components/ui/button';
import { useCopy } from '@/components/ui/copy-button';

/**
 * A secret the server shows once: readable, selectable, copyable, and
 * plainly marked as never shown again. It lives only in the component's
 * state, never in the query cache or the URL.
 */
export function SecretValue({ label, value, copyLabel, multiline }: { label: string; value: string; copyLabel: string; multiline?: boolean }) {
  const id = useId();
  const field =
    'block w-full rounded-lg border border-zinc-300 bg-white px-3 py-2 font-mono text-xs text-zinc-900 dark:border-zinc-700 dark:bg-zinc-950 dark:text-zinc-100';
  return (
    <div>
      <div className="mb-1.5 flex items-center justify-between gap-2">
        <label htmlFor={id} className="text-sm font-medium">
          {label}
        </label>
        <CopyText value={value} label={copyLabel} />
      </div>
      {multiline ? (
        <textarea id={id} readOnly rows={4} value={value} onFocus={(e) => e.currentTarget.select()} className={`${field} resize-none break-all`} />
      ) : (
        <input id={id} type="text" readOnly value={value} onFocus={(e) => e.currentTarget.select()} className={field} />
      )}
    </div>
  );
}

/** The "copy it now" warning around one or more secret values. */
export function SecretOnce({ title, children, footer }: { title: string; children: ReactNode; footer?: ReactNode }) {
  return (
    <section
      aria-label={title}
      className="space-y-4 rounded-lg border border-amber-300 bg-amber-50 p-4 dark:border-amber-800 dark:bg-amber-950/40"
    >
      <div>
        <h3 className="font-semibold text-amber-950 dark:text-amber-100">{title}</h3>
        <p role="note" className="mt-1 text-sm text-amber-900 dark:text-amber-200">
          Copy it now: it won&apos;t be shown again. The server keeps only a hash; if the secret is lost, revoke the token and create another.
        </p>
      </div>
      {children}
      {footer}
    </section>
  );
}

/** A visible copy button ("Copy token"), for values the reader is asked to copy. */
function CopyText({ value, label }: { value: string; label: string }) {
  const { copied, copy } = useCopy(value);
  return (
    <Button size="sm" aria-label={label} onClick={copy}>
      <svg aria-hidden="true" viewBox="0 0 24 24" className="size-3.5" fill="none" stroke="currentColor" strokeWidth="2">
        {copied ? <path d="M5 12l5 5L20 7" strokeLinecap="round" strokeLinejoin="round" /> : <><rect x="9" y="9" width="12" height="12" rx="2" /><path d="M5 15V5a2 2 0 0 1 2-2h10" /></>}
      </svg>
      <span aria-live="polite">{copied ? 'Copied' : 'Copy'}</span>
    </Button>
  );
}
