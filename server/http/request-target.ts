/**
 * The request line's target, checked before anything routes on it. Only
 * origin-form (`/path?query`) is served: the asterisk-form (`OPTIONS *`),
 * the absolute-form (`GET http://host/path`, a proxy's form), the
 * authority-form and an empty target are answered 400 `invalid_request`
 * with the error envelope here (a line Node's parser rejects, and CONNECT,
 * on the raw socket), so neither the API router nor the console
 * (Next, which would fail to parse them and answer 500) ever sees them.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { correlationId } from '../engine/ids';
import { errorBody } from './envelope';

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

/**
 * A request Node's parser refused (a malformed request line or header) or a
 * CONNECT: 400 with the error envelope written on the socket, which is then
 * closed. A header section that is too large keeps its 431, a connection
 * reset or timeout gets nothing (there is no one to answer).
 */
export function refuseRawRequest(err: (Error & { code?: string }) | undefined, socket: Duplex): void {
  const code = err?.code;
  if (code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // A request head or body too slow (LEASEHOLD_HEADERS_TIMEOUT_MS, LEASEHOLD_REQUEST_TIMEOUT_MS): 408, then close.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  if (code === 'HPE_HEADER_OVERFLOW') {
    socket.end('HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  const cid = correlationId();
  const text = JSON.stringify(errorBody('invalid_request', code === undefined ? TARGET_MESSAGE : 'the request line or a header is malformed', cid, false));
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
      `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Correlation-Id: ${cid}\r\nConnection: close\r\n\r\n${text}`,
  );
}
