'use client';

import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { startTransition, useOptimistic } from 'react';
import { METRICS_WINDOWS, windowFromParam } from '@/components/metrics/metrics-window';

/** The charts' time window, a radio group whose choice lives in the URL (`?window=`), so a view can be shared. */
export function WindowPicker() {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const current = windowFromParam(params.get('window')).key;
  // The choice shows at once; the URL (and with it the charts) follows when the navigation lands.
  const [selected, select] = useOptimistic<string>(current);

  const choose = (key: string) => {
    const next = new URLSearchParams(params);
    next.set('window', key);
    startTransition(() => {
      select(key);
      router.replace(`${pathname}?${next.toString()}`, { scroll: false });
    });
  };

  return (
    <fieldset className="inline-flex items-center gap-0.5 rounded-lg border border-zinc-300 p-0.5 dark:border-zinc-700">
      <legend className="sr-only">Time window</legend>
      {METRICS_WINDOWS.map((w) => (
        <label key={w.key} className="relative">
          {/* The input covers its pill, invisible: clicks, keys and the focus ring are the native radio's. */}
          <input
            type="radio"
            name="metrics-window"
            value={w.key}
            checked={w.key === selected}
            onChange={() => choose(w.key)}
            className="peer absolute inset-0 cursor-pointer appearance-none rounded-md"
          />
          <span className="block rounded-md px-3 py-1 text-sm font-medium text-zinc-600 transition-colors peer-checked:bg-zinc-100 peer-checked:text-zinc-900 peer-hover:text-zinc-900 dark:text-zinc-400 dark:peer-checked:bg-zinc-800 dark:peer-checked:text-zinc-50 dark:peer-hover:text-zinc-100">
            {w.label}
          </span>
        </label>
      ))}
    </fieldset>
  );
}
