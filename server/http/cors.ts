/**
 * CORS for bearer-token callers in other browser origins
 * (`LEASEHOLD_CORS_ORIGINS`): never with credentials, so the console's
 * cookie is never usable cross-origin.
 */

import type { IncomingMessage } from 'node:http';

export class Cors {
  private readonly allowed: ReadonlySet<string>;

  constructor(origins: readonly string[] = []) {
    this.allowed = new Set(origins);
  }

  /** Answer headers for an allowed origin (none otherwise). */
  headers(req: IncomingMessage): Record<string, string> {
    const origin = req.headers.origin;
    if (!origin || !this.allowed.has(origin)) return {};
    return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': 'X-Correlation-Id, Idempotent-Replay, Retry-After', Vary: 'Origin' };
  }

  /** The headers of a preflight (`OPTIONS`) answer for a path taking `allow`. */
  preflight(req: IncomingMessage, allow: readonly string[]): Record<string, string> {
    const origin = req.headers.origin;
    const headers: Record<string, string> = { Allow: [...allow, 'OPTIONS'].join(', ') };
    if (origin && this.allowed.has(origin)) {
      headers['Access-Control-Allow-Origin'] = origin;
      headers['Access-Control-Allow-Methods'] = allow.join(', ');
      headers['Access-Control-Allow-Headers'] = 'Authorization, Content-Type';
      headers['Access-Control-Max-Age'] = '600';
      headers.Vary = 'Origin';
    }
    return headers;
  }
}
