/**
 * The content-security policy of every page (console and embed), with a
 * fresh nonce per request (proxy.ts): scripts run only from this origin and
 * only when they carry the nonce, which Next puts on its own scripts and
 * chunks ('strict-dynamic' lets those load the chunks they import). No
 * plugins, no <base> rewriting, forms only to this origin. Console pages may
 * not be framed; the embed pages may (that is what they are for).
 *
 * Styles allow 'unsafe-inline': React and uPlot set style attributes, and a
 * style cannot run code. See docs/operations.md, "Threat model".
 */

interface PolicyOptions {
  nonce: string;
  /** Development: React's debugging needs eval (never in production). */
  dev: boolean;
  /** The embed pages, which other sites frame. */
  framable: boolean;
}

export function contentSecurityPolicy({ nonce, dev, framable }: PolicyOptions): string {
  return [
    `default-src 'self'`,
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ''}`,
    `style-src 'self' 'unsafe-inline'`,
    `img-src 'self' blob: data:`,
    `font-src 'self'`,
    `connect-src 'self'`,
    `object-src 'none'`,
    `base-uri 'self'`,
    `form-action 'self'`,
    ...(framable ? [] : [`frame-ancestors 'none'`]),
  ].join('; ');
}

/** A fresh nonce: 128 random bits, base64. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes));
}
