/**
 * Connection limits and request timeouts (docs/operations.md, "Threat
 * model"): a handful of clients cannot hold the server's sockets forever,
 * neither by opening many connections nor by sending headers slowly; a live
 * SSE stream outlives the request timeout.
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { startTestServer, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';

/** A raw socket to the server; `closed` resolves with what the server sent before closing it. */
function open(url: string): Promise<{ sock: Socket; closed: Promise<string> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: hostname, port: Number(port) });
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => (text += d));
    const closed = new Promise<string>((r) => sock.on('close', () => r(text)));
    sock.once('error', () => undefined);
    sock.once('connect', () => resolve({ sock, closed }));
    sock.once('error', reject);
  });
}

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} not within ${ms} ms`)), ms).unref())]);

describe('slow headers and slow bodies', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ http: { headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, keepAliveTimeoutMs: 1_000, checkIntervalMs: 200 }, engine: { feed: { heartbeatMs: 1_000 } } });
  });
  after(() => s.close());

  test('a client that never finishes its request head is answered 408 and cut off', async () => {
    const { sock, closed } = await open(s.url);
    sock.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const drip = setInterval(() => sock.write('a'), 200);
    try {
      const text = await within(closed, 4_000, 'the slow-header socket closed');
      assert.match(text, /^HTTP\/1\.1 408/);
    } finally {
      clearInterval(drip);
    }
  });

  test('a client that never finishes its body is cut off by the request timeout', async () => {
    const { sock, closed } = await open(s.url);
    sock.write(`POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"owner_id":`);
    const drip = setInterval(() => sock.write(' '), 200);
    try {
      const text = await within(closed, 5_000, 'the slow-body socket closed');
      assert.doesNotMatch(text, /^HTTP\/1\.1 (2|5)\d\d/, 'no session was opened and no 5xx');
    } finally {
      clearInterval(drip);
    }
  });

  test('an SSE stream lives past the request timeout, with its heartbeats', async () => {
    const sse = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://**')}`, { token: s.token });
    try {
      await new Promise((r) => setTimeout(r, 3_200));
      assert.equal(sse.ended, false, 'the stream is still open after twice the request timeout');
      assert.ok(sse.heartbeats >= 2, `heartbeats arrived (${sse.heartbeats})`);
    } finally {
      sse.close();
    }
  });
});

describe('maximum concurrent connections', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ http: { maxConnections: 3 } });
  });
  after(() => s.close());

  test('beyond the cap a new connection is closed at once; once others leave, connections are accepted again', async () => {
    const held = await Promise.all([open(s.url), open(s.url), open(s.url)]);
    await new Promise((r) => setTimeout(r, 100));
    const extra = await open(s.url);
    extra.sock.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n');
    const text = await within(extra.closed, 2_000, 'the connection over the cap closed');
    assert.doesNotMatch(text, /^HTTP\/1\.1 200/, 'no answer over the cap');
    for (const h of held) h.sock.destroy();
    await Promise.all(held.map((h) => h.closed));
    // The server counts a connection gone when it has processed its close: try again for up to 3 s.
    let answer = '';
    for (const deadline = Date.now() + 3_000; !/^HTTP\/1\.1 200/.test(answer) && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      const again = await open(s.url);
      // write, not end: a half-closed client socket is closed by the server before a slower (PostgreSQL) answer.
      again.sock.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      answer = await within(again.closed, 2_000, 'an answer after the others left');
    }
    assert.match(answer, /^HTTP\/1\.1 200/, 'accepted again once the others left');
  });
});
