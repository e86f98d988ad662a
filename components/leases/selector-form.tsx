'use client';

import { useEffect, useId, useState } from 'react';
import { parseSelector } from '@/lib/selector';
import { Button } from '@/components/ui/button';
import { cn } from '@/components/ui/cn';
import { PAGE_SIZES, type LeaseViewParams } from '@/components/leases/view-params';

const field =
  'block w-full rounded-lg border bg-white px-3 py-1.5 text-sm shadow-xs dark:bg-zinc-900 border-zinc-300 dark:border-zinc-700 aria-invalid:border-red-500 dark:aria-invalid:border-red-500';

/** Selector (checked against the grammar as it is typed), owner filter and page size; applying starts at the first page. */
export function SelectorForm({ params, onApply }: { params: LeaseViewParams; onApply: (next: LeaseViewParams) => void }) {
  const [selector, setSelector] = useState(params.selector);
  const [owner, setOwner] = useState(params.owner);
  const errorId = useId();
  useEffect(() => setSelector(params.selector), [params.selector]);
  useEffect(() => setOwner(params.owner), [params.owner]);
  const parsed = parseSelector(selector.trim());
  const error = parsed.ok ? null : parsed.reason;

  return (
    <form
      className="grid gap-3 sm:grid-cols-[minmax(0,1fr)_14rem_auto_auto] sm:items-start"
      onSubmit={(e) => {
        e.preventDefault();
        if (error) return;
        onApply({ ...params, selector: selector.trim(), owner: owner.trim(), cursor: null });
      }}
    >
      <div>
        <label htmlFor="selector" className="mb-1 block text-xs font-medium text-zinc-600 dark:text-zinc-400">
          Selector
        </label>
        <input
          id="selector"
          value={selector}
          onChange={(e) => setSelector(e.target.value)}
          spellCheck={false}
          autoComplete="off"
          aria-invalid={error ? true : undefined}
          aria-describedby={errorId}
          className={cn(field, 'font-mono')}
        />
        <p id={errorId} className={cn('mt-1 min-h-4 text-xs', error ? 'text-red-700 dark:text-red-400' : 'text-zinc-500 dark:text-zinc-400')} aria-live="polite">
          {error ? `Not a selector: ${error}` : 'lease://realm/area/resource; * matches one segment, ** the rest'}
        </p>
      </div>
      <div>
        <label htmlFor="owner" className="mb-1 block text-xs font-medium text-zinc-600 dark:text-zinc-400">
          Owner
        </label>
        <input id="owner" value={owner} onChange={(e) => setOwner(e.target.value)} placeholder="any owner" spellCheck={false} autoComplete="off" className={field} />
      </div>
      <div>
        <label htmlFor="page-size" className="mb-1 block text-xs font-medium text-zinc-600 dark:text-zinc-400">
          Page size
        </label>
        <select
          id="page-size"
          value={params.limit}
          onChange={(e) => onApply({ ...params, limit: Number(e.target.value), cursor: null })}
          className={cn(field, 'pr-8')}
        >
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <Button type="submit" variant="primary" className="sm:mt-5" disabled={!!error}>
        Show leases
      </Button>
    </form>
  );
}
