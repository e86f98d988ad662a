/**
 * Credentials: the bearer token or the console's login cookie a request
 * carries, the principal behind them, and the same-origin rule for
 * cookie-authenticated changes (docs/operations.md, "Threat model").
 */

import type { IncomingMessage } from 'node:http';
import type { LeaseEngine } from '../engine';
import type { Principal } from '../engine/core/model';
import { fail } from '../engine/core/errors';

export const LOGIN_COOKIE = 'leasehold_login';

/** The bearer token of the Authorization header, if any (`invalid_credential` when malformed). */
export function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  // `/^Bearer ([!-~]{1,512})$/i`, checked by hand (no match array per request).
  if (h.length < 8 || h.length > 519 || h.charCodeAt(6) !== 0x20 || h.slice(0, 6).toLowerCase() !== 'bearer') {
    fail('invalid_credential', 'Authorization must be "Bearer <token>"');
  }
  for (let i = 7; i < h.length; i++) {
    const c = h.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) fail('invalid_credential', 'Authorization must be "Bearer <token>"');
  }
  return h.slice(7);
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/**
 * Cookie-authenticated mutations must come from the console's own origin:
 * `Sec-Fetch-Site: same-origin`, or an `Origin` equal to the public origin.
 */
export function sameOrigin(req: IncomingMessage, publicOrigin: string | undefined): boolean {
  if (req.headers['sec-fetch-site'] === 'same-origin') return true;
  const origin = req.headers.origin;
  if (!origin) return false;
  if (publicOrigin) return origin === publicOrigin;
  const host = req.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}

/**
 * A browser says this request comes from a page of another origin: its
 * `Sec-Fetch-Site` is neither `same-origin` nor `none` (typed by the user),
 * or, without that header, it sends an `Origin` other than the console's.
 * A request with neither header (curl, the SDK, the CLI) is not a browser's.
 */
export function fromAnotherOrigin(req: IncomingMessage, publicOrigin: string | undefined): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site !== 'same-origin' && site !== 'none';
  return req.headers.origin !== undefined && !sameOrigin(req, publicOrigin);
}

export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The caller of a call that needs no token (login, logout): no family, no grants. */
export const NO_PRINCIPAL: Principal = { tokenId: '', name: '', family: '', grants: [], root: false, kind: 'api', expiresAt: null };

/** The principal of a bearer token, else of the console's login cookie, else `invalid_credential`. */
export async function authenticate(engine: LeaseEngine, token: string | undefined, loginCookie: string | undefined): Promise<Principal> {
  if (token !== undefined) return engine.tokens.authenticate(token);
  if (loginCookie !== undefined) return engine.tokens.authenticateLogin(loginCookie);
  fail('invalid_credential', 'a bearer token or a console login is required');
}

/** Whether the browser is on https: the public origin says so, the socket is TLS, or a TLS-terminating proxy says so. */
export function onHttps(req: IncomingMessage, publicOrigin: string | undefined): boolean {
  return (
    (publicOrigin?.startsWith('https:') ?? false) ||
    (req.socket as { encrypted?: boolean }).encrypted === true ||
    req.headers['x-forwarded-proto'] === 'https'
  );
}
