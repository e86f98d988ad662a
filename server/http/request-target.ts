/**
 * The request line's target, checked before anything routes on it. Only
 * origin-form (`/path?query`) is served: the asterisk-form (`OPTIONS *`),
 * the absolute-form (`GET http://host/path`, a proxy's form), the
 * authority-form and an empty target are answered 400 `invalid_request`
 * with the error envelope here (a line Node's parser rejects, and CONNECT,
 * on the raw socket), so neither the API router nor the console
 * (Next, which would fail to parse them and answer 500) ever sees them.
 * Outside /api/, a method the console does not serve is answered 405 here.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { correlationId } from '../engine';
import { errorBody } from './envelope';
import { answerAndClose } from './connection-guard';

const TARGET_MESSAGE = 'the request target must be a path starting with "/"';

/** Is this request target origin-form (starts with `/`)? */
export function isOriginForm(target: string | undefined): target is string {
  return typeof target === 'string' && target.startsWith('/');
}

/**
 * Does this origin-form target belong to the API? `/api` and `/api/…`, and
 * also every path that a router collapsing `//` and `\` would turn into one
 * (`//api/v1/sessions`, `/api\v1/sessions`): those reach the API's router,
 * which answers 404 `not_found`, instead of the console's, which would
 * redirect them onto the API path (a client following the redirect would
 * replay its call on a route it never named).
 */
export function isApiPath(target: string): boolean {
  if (target.startsWith('/api/') || target === '/api') return true;
  const q = target.indexOf('?');
  const path = (q < 0 ? target : target.slice(0, q)).replace(/[\\/]+/g, '/');
  return path === '/api' || path.startsWith('/api/');
}

/** Answer a request whose target is not origin-form: 400 with the error envelope, then close the connection. */
export function refuseRequestTarget(req: IncomingMessage, res: ServerResponse): void {
  const cid = correlationId();
  const text = JSON.stringify(errorBody('invalid_request', TARGET_MESSAGE, cid, false));
  res.writeHead(400, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Correlation-Id': cid,
    Connection: 'close',
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** What the console (Next, every path outside /api/) is read with: it has no server actions, its forms call the API. */
const CONSOLE_ALLOW = 'GET, HEAD';

/**
 * Does the console serve this method? GET and HEAD; Next's development
 * server (`dev`) also takes POST on its own `/__nextjs_…` endpoints (the
 * error overlay, its restart button).
 */
export function consoleTakes(method: string | undefined, target: string, dev: boolean): boolean {
  return method === 'GET' || method === 'HEAD' || (dev && method === 'POST' && target.startsWith('/__nextjs_'));
}

/**
 * Answer a console request with a method the console does not serve: 405
 * with `Allow` and the error envelope, before Next sees it (Next answers
 * TRACE and TRACK 500: the fetch Request it builds refuses those methods).
 */
export function refuseConsoleMethod(req: IncomingMessage, res: ServerResponse): void {
  const cid = correlationId();
  const text = JSON.stringify(errorBody('method_not_allowed', `this path takes ${CONSOLE_ALLOW}`, cid, false));
  res.writeHead(405, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    Allow: CONSOLE_ALLOW,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Correlation-Id': cid,
  });
  res.end(text);
}

/**
 * A request Node's parser refused (a malformed request line or header), one
 * too slow, or a CONNECT: the answer is written on the socket, which then
 * lingers briefly, discarding input, and is destroyed (connection-guard.ts
 * `answerAndClose`: the slot is freed even for a client that never reads,
 * and a client still sending reads the answer rather than a reset). 400
 * carries the error envelope; a header section that is too large keeps its
 * 431, a request too slow its 408; a connection reset gets nothing (there is
 * no one to answer), nor does a socket whose answer is already under way.
 */
export function refuseRawRequest(err: (Error & { code?: string }) | undefined, socket: Duplex): void {
  const code = err?.code;
  if (code === 'ECONNRESET' || (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true) {
    socket.destroy();
    return;
  }
  // A request head or body too slow (LEASEHOLD_HEADERS_TIMEOUT_MS, LEASEHOLD_REQUEST_TIMEOUT_MS): 408, then close.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    answerAndClose(socket, 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    answerAndClose(socket, 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const cid = correlationId();
  const text = JSON.stringify(errorBody('invalid_request', code === undefined ? TARGET_MESSAGE : 'the request line or a header is malformed', cid, false));
  answerAndClose(
    socket,
    `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
      `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Correlation-Id: ${cid}\r\nConnection: close\r\n\r\n${text}`,
  );
}
