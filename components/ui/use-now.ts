'use client';

import { useSyncExternalStore } from 'react';

// One ticking clock per tab, shared by every countdown on the page: a
// thousand rows cost one timer, and they all change in the same frame.
let now = Date.now();
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (!timer) {
    now = Date.now();
    timer = setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 1_000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** Wall-clock time, updated once a second while a component shows it (0 during SSR: nothing renders a countdown on the server). */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now, () => 0);
}
