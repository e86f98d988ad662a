/**
 * Where the console goes after login, from `?next=`: a path of the
 * console's own origin, never another origin. The value is resolved by the
 * WHATWG URL parser against a fixed origin (exactly as the browser will
 * resolve the link), so every trick a browser normalises (`/\evil`,
 * `/\t/evil`, `//evil`, `https://evil`, tabs and newlines inside the
 * scheme) is judged by where it really lands. Anything that would leave
 * the origin, or that points back at the login page, falls back to /leases.
 */

const FALLBACK = '/leases';
const BASE = 'http://console.invalid';

export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith('/')) return FALLBACK;
  let url: URL;
  try {
    url = new URL(next, BASE);
  } catch {
    return FALLBACK;
  }
  if (url.origin !== BASE) return FALLBACK;
  // Only what the parser produced: a normalised path, query and fragment on this origin.
  const path = `${url.pathname}${url.search}${url.hash}`;
  if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return FALLBACK;
  if (url.pathname === '/login' || url.pathname.startsWith('/login/')) return FALLBACK;
  return path;
}
