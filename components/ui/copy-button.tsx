'use client';

import { useState } from 'react';
import { cn } from '@/components/ui/cn';

/** Copy `value` to the clipboard; `copied` is true for 1.5 s after it worked. */
export function useCopy(value: string): { copied: boolean; copy: () => void } {
  const [copied, setCopied] = useState(false);
  return {
    copied,
    copy: () => {
      void navigator.clipboard?.writeText(value).then(
        () => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1_500);
        },
        // No clipboard (insecure context, denied permission): the value stays selectable.
        () => undefined,
      );
    },
  };
}

/** Copies `value`; the label says what is copied ("Copy incarnation"), the icon confirms. */
export function CopyButton({ value, label, className }: { value: string; label: string; className?: string }) {
  const { copied, copy } = useCopy(value);
  return (
    <button
      type="button"
      aria-label={label}
      title={label}
      onClick={copy}
      className={cn(
        'inline-flex size-6 shrink-0 items-center justify-center rounded text-zinc-400 transition-colors hover:bg-zinc-100 hover:text-zinc-700 dark:hover:bg-zinc-800 dark:hover:text-zinc-200',
        className,
      )}
    >
      {copied ? (
        <svg aria-hidden="true" viewBox="0 0 24 24" className="size-3.5 text-emerald-600" fill="none" stroke="currentColor" strokeWidth="2.5">
          <path d="M5 12l5 5L20 7" strokeLinecap="round" strokeLinejoin="round" />
        </svg>
      ) : (
        <svg aria-hidden="true" viewBox="0 0 24 24" className="size-3.5" fill="none" stroke="currentColor" strokeWidth="2">
          <rect x="9" y="9" width="12" height="12" rx="2" />
          <path d="M5 15V5a2 2 0 0 1 2-2h10" />
        </svg>
      )}
    </button>
  );
}
