'use client';

import { useSyncExternalStore } from 'react';

function subscribe(onChange: () => void): () => void {
  const observer = new MutationObserver(onChange);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['class'] });
  return () => observer.disconnect();
}

const isDark = (): boolean => document.documentElement.classList.contains('dark');

/**
 * Whether the page is dark now: the `dark` class on the root element, which
 * the pre-paint script sets and the theme store's toggle flips. Watched on
 * the element itself rather than through the store, so drawings that cannot
 * use Tailwind's `dark:` (canvas charts, the embed widget's theme) follow it
 * whoever flipped it. False on the server.
 */
export function useDarkMode(): boolean {
  return useSyncExternalStore(subscribe, isDark, () => false);
}
