/**
 * Next's proxy (the CSP-with-nonce pattern of Next's documentation): every
 * page request gets a fresh nonce, carried to the renderer in the request's
 * Content-Security-Policy header (Next puts it on its own scripts) and
 * `x-nonce` (the root layout puts it on the theme script), and sent to the
 * browser as the page's policy. /api/* never reaches Next.
 */

import { NextResponse, type NextRequest } from 'next/server';
import { contentSecurityPolicy, newNonce } from '@/components/console/csp';

export function proxy(request: NextRequest) {
  const nonce = newNonce();
  const path = request.nextUrl.pathname;
  const policy = contentSecurityPolicy({ nonce, dev: process.env.NODE_ENV === 'development', framable: path === '/embed' || path.startsWith('/embed/') });
  const headers = new Headers(request.headers);
  headers.set('x-nonce', nonce);
  headers.set('Content-Security-Policy', policy);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set('Content-Security-Policy', policy);
  return response;
}

export const config = {
  matcher: [
    {
      // Pages only: not static assets, not the icon, not prefetches (RSC payloads are not documents).
      source: '/((?!api|_next/static|_next/image|favicon.ico|icon.svg).*)',
      missing: [
        { type: 'header', key: 'next-router-prefetch' },
        { type: 'header', key: 'purpose', value: 'prefetch' },
      ],
    },
  ],
};
