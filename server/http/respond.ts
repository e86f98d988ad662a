/**
 * Writing answers: the JSON envelope with its fixed headers, and the one
 * place an error becomes an answer (a client's mistake its contract code;
 * anything else an `internal_error` 500 with the correlation id, whose
 * stack the access log writes in the request's one line).
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LeaseEngine } from '../engine';
import { LeaseholdError } from '../engine/core/errors';
import type { Cors } from './cors';
import { errorBody, STATUS_OF } from './envelope';

const JSON_TYPE = 'application/json; charset=utf-8';

export class Responder {
  constructor(
    private readonly engine: LeaseEngine,
    private readonly cors: Cors,
  ) {}

  /** A JSON answer with `body` (nothing once headers are sent or the socket is gone). */
  send(req: IncomingMessage, res: ServerResponse, status: number, body: object, cid: string, extra?: Record<string, string>): void {
    this.raw(req, res, status, JSON.stringify(body), JSON_TYPE, cid, extra);
  }

  /** A JSON answer already serialized. */
  json(req: IncomingMessage, res: ServerResponse, status: number, text: string, cid: string, extra?: Record<string, string>): void {
    this.raw(req, res, status, text, JSON_TYPE, cid, extra);
  }

  /**
   * Any text answer with the API's fixed headers, in this order: the five
   * fixed ones, `extra`'s, then CORS's, given to Node as one flat list (no
   * merged object per answer).
   */
  raw(req: IncomingMessage, res: ServerResponse, status: number, text: string, contentType: string, cid: string, extra?: Record<string, string>): void {
    if (res.headersSent || res.destroyed) return;
    const headers: (string | number)[] = [
      'Content-Type',
      contentType,
      'Content-Length',
      Buffer.byteLength(text),
      'Cache-Control',
      'no-store',
      'X-Content-Type-Options',
      'nosniff',
      'X-Correlation-Id',
      cid,
    ];
    if (extra !== undefined) for (const k in extra) headers.push(k, extra[k]!);
    // Only a request with an Origin can need CORS headers.
    if (req.headers.origin) {
      const cors = this.cors.headers(req);
      for (const k in cors) headers.push(k, cors[k]!);
    }
    res.writeHead(status, headers);
    res.end(req.method === 'HEAD' ? undefined : text);
  }

  /** The answer for a thrown error: its contract code, or a 500 (logged by the access log). */
  error(req: IncomingMessage, res: ServerResponse, e: unknown, cid: string): void {
    const allow = (e as { allow?: string }).allow;
    const extra: Record<string, string> | undefined = allow ? { Allow: allow } : undefined;
    if (e instanceof LeaseholdError) {
      if (e.code === 'invalid_credential') this.engine.audit.count('invalid_credential');
      const retryAfter = e.retryAfterMs === undefined ? undefined : String(Math.max(1, Math.ceil(e.retryAfterMs / 1000)));
      const headers = retryAfter === undefined ? extra : { ...extra, 'Retry-After': retryAfter };
      this.send(req, res, STATUS_OF[e.code], errorBody(e.code, e.message, cid, e.retryable, e.retryAfterMs, e.lockDelayUntil, e.held, e.queueTicket), cid, headers);
      return;
    }
    this.send(req, res, 500, errorBody('internal_error', 'internal error', cid, false), cid);
  }
}
