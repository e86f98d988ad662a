'use client';

import { useSyncExternalStore } from 'react';

function subscribe(onChange: () => void): () => void {
  window.addEventListener('hashchange', onChange);
  return () => window.removeEventListener('hashchange', onChange);
}

const readToken = (): string => new URLSearchParams(window.location.hash.slice(1)).get('token') ?? '';

/**
 * The embed token from the address's fragment (`#token=…`): a fragment is
 * never sent to a server, so the token stays out of access logs and Referer
 * headers (docs/console.md). Never read from the query string. Follows
 * `hashchange`, so a host page can hand over a fresh token without a reload.
 * Undefined until the page has hydrated (the server cannot know it), then
 * `''` when there is none.
 */
export function useFragmentToken(): string | undefined {
  return useSyncExternalStore(subscribe, readToken, () => undefined);
}
