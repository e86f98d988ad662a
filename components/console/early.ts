'use client';

/**
 * Reads started while the page's code is still loading, before React has
 * hydrated anything: the first query that asks for the same key takes the
 * promise instead of sending its own request. Each is taken at most once, so
 * later refetches always go to the server.
 */
const started = new Map<string, Promise<unknown>>();

export function startEarly(key: string, read: () => Promise<unknown>): void {
  if (typeof window === 'undefined' || started.has(key)) return;
  const p = read();
  // Unhandled until a query takes it; the query reports the failure then.
  p.catch(() => undefined);
  started.set(key, p);
}

export function takeEarly<T>(key: string): Promise<T> | undefined {
  const p = started.get(key) as Promise<T> | undefined;
  started.delete(key);
  return p;
}
