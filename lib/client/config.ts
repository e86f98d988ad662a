/**
 * The client's options, checked once when it is made. A wrong `baseUrl` or
 * token is a programming or deployment mistake that no retry can fix, so it
 * is thrown at once as `invalid_config` (status 0, not retryable) rather than
 * surfacing later as a `network_error` after a second of retries.
 */

import { LeaseholdError } from './errors';

export interface CheckedConfig {
  /** The origin without trailing slashes; '' for the page's own origin (browsers only). */
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly fetch: typeof fetch;
}

interface RawConfig {
  readonly baseUrl?: unknown;
  readonly token?: unknown;
  readonly fetch?: unknown;
}

function configError(message: string): LeaseholdError {
  return new LeaseholdError({ code: 'invalid_config', message, retryable: false });
}

/** Is there a page origin that a relative URL resolves against (a browser)? */
function hasPageOrigin(): boolean {
  const loc = (globalThis as { location?: { origin?: unknown } }).location;
  return typeof loc?.origin === 'string' && loc.origin !== 'null';
}

/**
 * Without a baseUrl the client can only talk to the page's own origin. Made
 * outside a browser (a server render of the widget, say) it may exist, but its
 * first call throws this at once instead of failing as a network error.
 */
export function assertPageOrigin(): void {
  if (!hasPageOrigin()) throw configError("baseUrl is required outside a browser: give the server's origin, such as 'http://127.0.0.1:3000'");
}

/**
 * Userinfo (`user:password@`) at the start of a URL-ish string: after an
 * optional `scheme://`, anything up to the last `@` before the first `/`, `?`
 * or `#` (what a URL parser takes as userinfo, and also `user:secret@host`
 * with no scheme, which a parser reads as a scheme and a path).
 */
const USERINFO = /^(\s*(?:[a-z][a-z\d+.-]*:)?\/\/)?[^/?#]*@/i;

/** Anything shaped like a Leasehold secret (`lh_` bearer token, `lc_` console cookie). */
const SECRET_SHAPED = /\bl[hc]_[A-Za-z0-9_-]{8,}/g;

/**
 * A baseUrl as a configuration error may show it, with no credential left:
 * userinfo becomes `***@`, a query or fragment (which may carry a token, e.g.
 * `?access_token=…`) becomes `?…` or `#…`, and the configured token, or
 * anything shaped like one (a token passed as the baseUrl by mistake),
 * becomes `***`.
 */
function redactUrl(raw: string, token: unknown): string {
  let shown = raw.trim().replace(USERINFO, (_m, scheme: string | undefined) => `${scheme?.trimStart() ?? ''}***@`);
  shown = shown.replace(/[?#][\s\S]*$/, (m) => `${m[0]}…`);
  if (typeof token === 'string' && token !== '') shown = shown.split(token).join('***');
  return shown.replace(SECRET_SHAPED, '***');
}

/**
 * Checks `baseUrl`, `token` and `fetch`; throws `invalid_config` naming the
 * option and what is wrong. No message carries a credential: a baseUrl is
 * shown redacted (`redactUrl`), a token's value never, and no error keeps
 * the URL parser's own error (whose message echoes the input) as its cause.
 */
export function validateConfig(opts: RawConfig): CheckedConfig {
  const { baseUrl: rawUrl, token, fetch: rawFetch } = opts;
  let baseUrl = '';
  if (rawUrl !== undefined && typeof rawUrl !== 'string') {
    throw configError(`baseUrl must be a string such as 'http://127.0.0.1:3000', not ${typeof rawUrl}`);
  }
  if (rawUrl !== undefined && rawUrl.trim() !== '') {
    const shown = redactUrl(rawUrl, token);
    // Before parsing: `user:secret@host` parses as the scheme `user:`, and an
    // error about the scheme would name the user.
    if (USERINFO.test(rawUrl)) {
      throw configError(
        `baseUrl '${shown}' carries credentials (user:password@), which are not allowed: give the server's origin without credentials, such as 'http://127.0.0.1:3000', and the bearer token as options.token`,
      );
    }
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw configError(`baseUrl '${shown}' is not an absolute URL: give the server's origin, such as 'http://127.0.0.1:3000'`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw configError(`baseUrl '${shown}' must use http: or https:, not ${redactUrl(url.protocol, token)}`);
    }
    if (url.username !== '' || url.password !== '') {
      // A form USERINFO missed (the parser is more lenient): still never echoed.
      throw configError(`baseUrl must be an origin (and optional path prefix) without credentials: give the server's origin, such as 'http://127.0.0.1:3000', and the bearer token as options.token`);
    }
    if (url.search !== '' || url.hash !== '') {
      throw configError(`baseUrl '${shown}' must be an origin (and optional path prefix) without credentials, query or fragment`);
    }
    baseUrl = rawUrl.trim().replace(/\/+$/, '');
  } else if (rawUrl !== undefined && rawUrl !== '') {
    throw configError('baseUrl is blank: give the server\'s origin, such as \'http://127.0.0.1:3000\'');
  }
  if (token !== undefined) {
    if (typeof token !== 'string') throw configError(`token must be a string (or left out), not ${token === null ? 'null' : typeof token}`);
    if (token === '') throw configError('token is empty: leave it out to send no token, or give the bearer token');
    if (!/^[\x21-\x7e]+$/.test(token)) throw configError('token holds whitespace or characters a bearer token cannot carry (a stray newline from a file?)');
  }
  const f = rawFetch ?? globalThis.fetch;
  if (typeof f !== 'function') throw configError('no fetch implementation: pass one as options.fetch');
  return { baseUrl, token, fetch: f as typeof fetch };
}
