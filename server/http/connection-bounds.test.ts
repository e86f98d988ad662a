/**
 * What one connection can cost (docs/operations.md, "What an anonymous
 * caller can and cannot cost you"; server/http/connection-guard.ts): one
 * request in flight per connection, so pipelined requests on a socket that
 * never reads hold neither answers nor memory, and are cut by the queue
 * bound or the send timeout; refused and timed-out sockets give their slot
 * back even when the client never reads or closes; a 431 reaches a client
 * still sending; methods the console does not serve are a 405 from the
 * server, never the console's 500.
 *
 * Connection handling is the same code whatever the store: every test
 * talks to instance A only (on PostgreSQL B runs beside it, untouched).
 */

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { call, consoleLikeFallback, startTestServer, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';
import { waitFor } from '../testing/wait';
import { MAX_QUEUED_REQUESTS } from './connection-guard';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** What the process holds after a full collection: heap plus Buffers, and its RSS. */
function memory(): { retained: number; rss: number } {
  gc();
  const m = process.memoryUsage();
  return { retained: m.heapUsed + m.external, rss: m.rss };
}

/**
 * A raw client socket that never reads (until `collect`), and the server's
 * end of it. `allowHalfOpen`: the client does not close its side when the
 * server closes its own (it never closes on its own).
 */
async function openSocket(s: TestServer, allowHalfOpen = false): Promise<{ sock: Socket; server: () => Socket }> {
  const { hostname, port } = new URL(s.url);
  let serverSide: Socket | undefined;
  const sock = connect({ host: hostname, port: Number(port), allowHalfOpen });
  sock.pause();
  sock.on('error', () => undefined);
  const onConnection = (c: Socket) => {
    if (c.remotePort === sock.localPort) serverSide = c;
  };
  s.app.server.on('connection', onConnection);
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', resolve);
    sock.once('error', reject);
  });
  await waitFor('the server to accept the connection', () => serverSide !== undefined);
  s.app.server.off('connection', onConnection);
  return { sock, server: () => serverSide! };
}

/** Everything the client socket receives from now until the server closes its side. */
function collect(sock: Socket): { text: () => string; closed: Promise<void> } {
  let text = '';
  sock.setEncoding('latin1');
  sock.on('data', (d: string) => (text += d));
  const closed = new Promise<void>((r) => {
    sock.once('end', () => r());
    sock.once('close', () => r());
  });
  sock.resume();
  return { text: () => text, closed };
}

/** The status codes of the answers in this text, in order. */
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) [A-Z]/g)].map((m) => m[1]);

const openConnections = (s: TestServer) => new Promise<number>((resolve, reject) => s.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

const OPENAPI = 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n';
const SEND_TIMEOUT_MS = 1_000;

describe('pipelined requests on a socket that never reads', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ http: { sendTimeoutMs: SEND_TIMEOUT_MS }, engine: { feed: { heartbeatMs: 1_000 } } });
    // Warm: the document built and its code compiled once, before anything is measured.
    assert.equal((await call(s.url, 'GET', '/api/v1/openapi.json', undefined, { headers: { Connection: 'close' } })).status, 200);
  });
  after(() => s.close());

  test('300 pipelined GET /api/v1/openapi.json: the connection is cut at once and the server holds nothing for it', async () => {
    const before = memory();
    const { sock, server } = await openSocket(s);
    sock.write(OPENAPI.repeat(300));
    // More than MAX_QUEUED_REQUESTS wait behind the first answer: cut, long before the send timeout.
    await waitFor('the server to destroy the pipelining socket', () => server().destroyed, Boolean, SEND_TIMEOUT_MS / 2);
    const after = memory();
    sock.destroy();
    // Unbounded, this was ~120 MiB (every answer buffered for a socket that never read).
    assert.ok(after.retained - before.retained < 16 * 2 ** 20, `retained grew by ${mib(after.retained - before.retained)}`);
    assert.ok(after.rss - before.rss < 16 * 2 ** 20, `RSS grew by ${mib(after.rss - before.rss)}`);
  });

  test(`${MAX_QUEUED_REQUESTS + 1} pipelined (the most that may wait): one answer at a time is held, and the send timeout cuts the socket`, async () => {
    const before = memory();
    const { sock, server } = await openSocket(s);
    sock.write(OPENAPI.repeat(MAX_QUEUED_REQUESTS + 1));
    // The client's and the server's kernel buffers fill (a few MiB on loopback), then an answer stays unsent.
    await waitFor('an answer stuck in the server socket', () => server().writableLength > 0 || server().destroyed);
    const stalledAt = Date.now();
    // What the server holds for the socket (not RSS: serializing the ~26 answers the kernel took grows V8's young generation, which is not given back at once).
    const held = memory();
    assert.ok(held.retained - before.retained < 16 * 2 ** 20, `retained grew by ${mib(held.retained - before.retained)} while the socket was held`);
    await waitFor('the send timeout to destroy the socket', () => server().destroyed);
    // Cut by the send timeout, not before: the sweep waits the whole timeout from the stall it sees.
    assert.ok(Date.now() - stalledAt >= SEND_TIMEOUT_MS / 2, `destroyed ${Date.now() - stalledAt} ms after the stall`);
    // What reached the client's kernel buffer is whole answers, in order, and then the close.
    const got = collect(sock);
    await got.closed;
    const answers = statuses(got.text());
    assert.ok(answers.length > 0 && answers.length <= MAX_QUEUED_REQUESTS + 1, `${answers.length} answers`);
    assert.ok(answers.every((a) => a === '200'), answers.join(', '));
    sock.destroy();
  });

  test('a client that reads gets every pipelined answer, in order, on one connection', async () => {
    const { sock } = await openSocket(s);
    const got = collect(sock);
    const paths = ['/api/v1/health', '/api/v1/nope', '/leases', '/api/v1/health', '/api/v1/openapi.json'];
    sock.write(paths.map((p, i) => `GET ${p} HTTP/1.1\r\nHost: x\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`).join(''));
    await got.closed;
    assert.deepEqual(statuses(got.text()), ['200', '404', '404', '200', '200']);
  });

  test('an SSE stream whose client reads lives on past the send timeout', async () => {
    const sse = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://**')}`, { token: s.token });
    try {
      // Heartbeats every second: four of them span four send timeouts.
      await waitFor('four heartbeats', () => sse.heartbeats >= 4 || sse.ended);
      assert.equal(sse.ended, false, 'the stream is still open');
    } finally {
      sse.close();
    }
  });
});

describe('refused and timed-out sockets give their slot back', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ http: { maxConnections: 4, headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, keepAliveTimeoutMs: 1_000, checkIntervalMs: 200 } });
  });
  after(() => s.close());

  test('with the cap full of half-headers and silent sockets that never read, they are destroyed after the timeout and a new client is served', async () => {
    const held = await Promise.all([openSocket(s), openSocket(s), openSocket(s), openSocket(s)]);
    held[0]!.sock.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    held[1]!.sock.write('GET /leases HTTP/1.1\r\nHost: ');
    // held[2] and held[3] send nothing at all.
    assert.equal(await openConnections(s), 4);
    await waitFor('every held socket destroyed by the server', () => held.every((h) => h.server().destroyed));
    await waitFor('the server to count them gone', () => openConnections(s), (n) => n === 0);
    // The half-header clients were answered 408 before the close (read now, from their kernel buffers).
    for (const h of held.slice(0, 2)) {
      const got = collect(h.sock);
      await got.closed;
      assert.match(got.text(), /^HTTP\/1\.1 408 /);
    }
    const ok = await call(s.url, 'GET', '/api/v1/health', undefined, { headers: { Connection: 'close' } });
    assert.equal(ok.status, 200);
    for (const h of held) h.sock.destroy();
  });

  test('a header section over the limit (a cookie and a long query) gets a 431 the client reads, and a clean close, although it was still sending', async () => {
    const { sock, server } = await openSocket(s, true);
    const errors: string[] = [];
    sock.on('error', (e: Error & { code?: string }) => errors.push(e.code ?? e.message));
    // 4 MiB of head, far beyond Node's 16 KiB: the server refuses it after its first read, while most is still to come.
    const head = `GET /leases?filter=${'q'.repeat(2 * 2 ** 20)} HTTP/1.1\r\nHost: x\r\nCookie: lh_session=${'c'.repeat(2 * 2 ** 20)}\r\n`;
    // Read only once everything is sent (a client writing its request first). Cut while
    // the client was still sending, it got a reset, which can cost it the unread answer.
    await new Promise<void>((resolve) => sock.write(head, () => resolve()));
    const got = collect(sock);
    await got.closed;
    assert.match(got.text(), /^HTTP\/1\.1 431 /);
    assert.deepEqual(errors, [], 'no reset: the server read what the client sent before closing');
    // The client never closes: the server does, after its short linger.
    await waitFor('the server to destroy the refused socket', () => server().destroyed);
    sock.destroy();
  });

  test('a malformed request line is still a 400 envelope, and its socket is freed though the client keeps it open', async () => {
    const { sock, server } = await openSocket(s, true);
    const got = collect(sock);
    sock.write('GET /a b HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor('the server to destroy the refused socket', () => server().destroyed);
    await got.closed;
    assert.match(got.text(), /^HTTP\/1\.1 400 /);
    const body = JSON.parse(got.text().split('\r\n\r\n')[1]!) as Record<string, unknown>;
    assert.deepEqual([body.status, body.code], ['error', 'invalid_request']);
    sock.destroy();
  });
});

describe('methods the console does not serve', () => {
  let s: TestServer;
  const seen: string[] = [];
  before(async () => {
    // A console that, like Next, would answer 500 to a method fetch's Request refuses (TRACE, TRACK, CONNECT).
    s = await startTestServer({ fallback: consoleLikeFallback(seen) });
  });
  after(() => s.close());

  const raw = (method: string, path: string) => call(s.url, method, path, undefined, { token: null, headers: { Connection: 'close' } });

  test('TRACE on /leases, /nonexistent and /%61pi/v1/health is a 405 with Allow from the server, never the console', async () => {
    for (const path of ['/leases', '/nonexistent', '/%61pi/v1/health']) {
      const r = await raw('TRACE', path);
      assert.equal(r.status, 405, `TRACE ${path} → ${r.status} ${r.text}`);
      assert.equal(r.headers.allow, 'GET, HEAD');
      assert.deepEqual([r.body.status, r.body.code], ['error', 'method_not_allowed']);
      assert.equal(r.headers['x-correlation-id'], r.body.correlation_id);
    }
    assert.deepEqual(seen, []);
  });

  test('other methods outside /api/ are a 405 too; GET and HEAD reach the console as before; the API keeps its own answers', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const r = await raw(method, '/leases');
      assert.equal(r.status, 405, `${method} /leases → ${r.status}`);
      assert.equal(r.headers.allow, 'GET, HEAD');
    }
    // TRACK is no method Node's parser knows: a 400 envelope from the server, before any router.
    assert.equal((await raw('TRACK', '/leases')).status, 400);
    assert.deepEqual(seen, []);
    for (const [method, path] of [['GET', '/leases'], ['HEAD', '/nonexistent'], ['GET', '/%61pi/v1/health']] as const) {
      const r = await raw(method, path);
      assert.equal(r.status, 200, `${method} ${path} → ${r.status}`);
    }
    assert.deepEqual(seen, ['GET /leases', 'HEAD /nonexistent', 'GET /%61pi/v1/health']);
    const api = await raw('TRACE', '/api/v1/health');
    assert.deepEqual([api.status, api.headers.allow, api.body.code], [405, 'GET, HEAD', 'method_not_allowed']);
    assert.equal((await raw('TRACE', '/api/v1/no-such-path')).status, 404);
  });
});
