'use client';

import { useId, type ReactNode } from 'react';
import { cn } from '@/components/ui/cn';
import { DEFAULT_EXPIRING_WINDOW, EXPIRING_WINDOWS, type LeaseViewParams } from '@/components/leases/view-params';

const chip =
  'inline-flex h-8 items-center gap-1.5 rounded-full border px-3 text-sm font-medium transition-colors focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-teal-600 ' +
  'border-zinc-300 bg-white text-zinc-700 hover:bg-zinc-50 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-200 dark:hover:bg-zinc-800 ' +
  'aria-pressed:border-teal-700 aria-pressed:bg-teal-50 aria-pressed:text-teal-900 dark:aria-pressed:border-teal-400 dark:aria-pressed:bg-teal-950 dark:aria-pressed:text-teal-100';

function Toggle({ pressed, onClick, children }: { pressed: boolean; onClick: () => void; children: ReactNode }) {
  return (
    <button type="button" aria-pressed={pressed} onClick={onClick} className={chip}>
      <span aria-hidden="true" className={cn('size-1.5 rounded-full', pressed ? 'bg-teal-700 dark:bg-teal-300' : 'bg-zinc-300 dark:bg-zinc-600')} />
      {children}
    </button>
  );
}

/**
 * The on-call filters (docs/console.md /leases): toggles the server applies
 * to LIST (expiring soon, with waiters, release requested) and the switch to
 * the free routes in lock-delay. Each change starts at the first page.
 */
export function OnCallFilters({ params, onApply }: { params: LeaseViewParams; onApply: (next: LeaseViewParams) => void }) {
  const windowId = useId();
  const apply = (change: Partial<LeaseViewParams>) => onApply({ ...params, ...change, cursor: null });
  const leaseFilters = !params.delay;
  // In lock-delay the lease filters read as off; choosing one leaves lock-delay with it on.
  const flip = (on: boolean) => (leaseFilters ? !on : true);
  return (
    <div role="group" aria-label="On-call filters" className="flex flex-wrap items-center gap-2">
      <Toggle pressed={params.expiring !== null && leaseFilters} onClick={() => apply({ expiring: flip(params.expiring !== null) ? (params.expiring ?? DEFAULT_EXPIRING_WINDOW) : null, delay: false })}>
        Expiring soon
      </Toggle>
      {params.expiring !== null && leaseFilters && (
        <span className="inline-flex items-center gap-1 text-sm">
          <label htmlFor={windowId} className="text-zinc-600 dark:text-zinc-400">
            within
          </label>
          <select
            id={windowId}
            value={params.expiring}
            onChange={(e) => apply({ expiring: Number(e.target.value) })}
            className="h-8 rounded-lg border border-zinc-300 bg-white px-2 text-sm dark:border-zinc-700 dark:bg-zinc-900"
          >
            {[...new Set([...EXPIRING_WINDOWS, params.expiring])]
              .sort((a, b) => a - b)
              .map((s) => (
                <option key={s} value={s}>
                  {s < 60 ? `${s} s` : `${s / 60} min`}
                </option>
              ))}
          </select>
        </span>
      )}
      <Toggle pressed={params.waiters && leaseFilters} onClick={() => apply({ waiters: flip(params.waiters), delay: false })}>
        With waiters
      </Toggle>
      <Toggle pressed={params.asked && leaseFilters} onClick={() => apply({ asked: flip(params.asked), delay: false })}>
        Release requested
      </Toggle>
      <span aria-hidden="true" className="mx-1 h-5 w-px bg-zinc-200 dark:bg-zinc-700" />
      <Toggle pressed={params.delay} onClick={() => apply({ delay: !params.delay })}>
        In lock-delay
      </Toggle>
    </div>
  );
}
