/**
 * Seeded random requests (methods, paths with odd and encoded segments,
 * headers, bodies of every shape) against the real server: none may be
 * answered with a 5xx, every error must be the envelope, and the server must
 * work normally afterwards. Raw request lines (asterisk-form, absolute-form,
 * empty and malformed targets, sent on a plain socket) get a 400 envelope
 * from the server itself, before any router or the console sees them.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { consoleLikeFallback, leasePath, prng, rid, startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

// Unicode spoofing (bidi override and isolate, zero-width, BOM, lone surrogates) percent-encoded in paths, raw in bodies.
const SPOOF = ['\u202Eexe.txt', 'a\u2066b', 'ad\u200Bmin', '\uFEFFx', 'a\u200Db', 'x\uD800', '\uDC00y'];
const SEGMENTS = ['acme', 'r', 'doc-1', '*', '**', '.', '..', '%2E%2E', '%2F', '%zz', '', 'a%20b', '%C3%A9', 'x'.repeat(130), 'ok~:@_.', '%E2%80%AE', '%E2%80%8B', '%ED%A0%80', '%EF%BB%BF'];
const ACTIONS = ['', '/acquire', '/renew', '/release', '/checkpoint', '/force', '/force-release', '/revoke', '/acquire/extra'];
const PREFIXES = ['/api/v1/leases/', '/api/v1/sessions', '/api/v1/sessions/keepalive', '/api/v1/sessions/close', '/api/v1/tokens', '/api/v1/tokens/', '/api/v1/auth/whoami', '/api/v1/auth/login', '/api/v1/auth/logout', '/api/v1/', '/api/', '/api/v1/health', '/api/v1/openapi.json', '/api/v1/embed-tokens', '/api/v1/audit', '/api/v1/inventory/streams/st_x/subscriptions', '/api/v1/inventory/streams/st_x/subscriptions/sb_x', '/api/v1/inventory/streams/'];
// (The stream itself is not fuzzed here: an accepted one never ends; its refusals are rows of bad-input.test.ts.)
const QUERIES = ['?owner_id=%E2%80%AEw', '?selector=lease://a/%E2%80%8B/*', '?cursor=%ED%A0%80', '?selector=lease://**', '?selector=lease://a/*', '?selector=bad', '?limit=0', '?limit=1000&limit=1', '?cursor=abc', '?x=1', '?selector=%zz', '?owner_id=%00', '?route=lease://**', '?route=lease://a/*/c&event_type=lease_revoke', '?event_type=nope', '?since=2026-01-01T00:00:00Z&until=bad', '?route=%00'];
const VALUES: unknown[] = [null, true, 0, -1, 1.5, 2 ** 60, '', 'x', 'lease://a/b/c', 'lease://a/**', 'a sufficiently long reason', [], {}, { a: { b: {} } }, 'ss_bad', 1_000, 30_000, '\u0000', '日本', ...SPOOF, { ['k\u202E']: 1 }, ['lease://a/\u200B/c#read']];
const FIELDS = ['session_id', 'request_id', 'ttl_ms', 'wait_ms', 'max_lifetime_ms', 'metadata', 'lease_id', 'fencing_token', 'value', 'owner_id', 'token', 'name', 'grants', 'family', 'root', 'expires_at', 'reason', 'expected_fencing_token', 'close_session', 'selector', 'extra'];

test('400 random requests: never a 5xx, always an envelope, and the server still works', async () => {
  const rnd = prng(20261129);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const { sessionId } = await s.openSession('fuzz');
  for (let i = 0; i < 400; i++) {
    const method = pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
    let path = pick(PREFIXES);
    if (path === '/api/v1/leases/') {
      const n = 1 + Math.floor(rnd() * 4);
      path += Array.from({ length: n }, () => pick(SEGMENTS)).join('/') + pick(ACTIONS);
    } else if (path === '/api/v1/tokens/') path += pick(SEGMENTS);
    path += pick(QUERIES);
    const headers: Record<string, string> = {};
    const ct = pick(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/json; charset=latin1', '']);
    if (ct) headers['Content-Type'] = ct;
    const auth = rnd();
    const token = auth < 0.6 ? s.token : auth < 0.8 ? null : 'lh_wrong';
    if (auth > 0.95) headers.Authorization = 'Basic abc';
    let raw: string | Buffer | undefined;
    const shape = rnd();
    if (shape < 0.5) {
      const body: Record<string, unknown> = {};
      for (const k of FIELDS) if (rnd() < 0.3) body[k] = k === 'session_id' && rnd() < 0.5 ? sessionId : k === 'request_id' && rnd() < 0.5 ? rid() : pick(VALUES);
      raw = JSON.stringify(body);
    } else if (shape < 0.6) raw = '{"session_id":';
    else if (shape < 0.7) raw = Buffer.from(Array.from({ length: 64 }, () => Math.floor(rnd() * 256)));
    else if (shape < 0.75) raw = '['.repeat(40) + ']'.repeat(40);
    else if (shape < 0.8) raw = JSON.stringify({ value: 'x'.repeat(140 * 1024) });
    const r = await s.call(method, path, undefined, { token, headers, raw });
    assert.ok(r.status < 500, `#${i} ${method} ${path} → ${r.status} ${r.text.slice(0, 200)}`);
    if (r.status >= 400 && method !== 'HEAD') {
      assert.equal(r.body?.status, 'error', `#${i} ${method} ${path} → not an envelope: ${r.text.slice(0, 200)}`);
      assert.equal(r.headers['x-correlation-id'], r.body.correlation_id);
    }
  }
  const health = await s.call('GET', '/api/v1/health', undefined, { token: null });
  assert.equal(health.status, 200);
  const ok = await s.call('POST', leasePath('lease://fuzz/after/ok', 'acquire'), { session_id: sessionId, request_id: rid() });
  assert.equal(ok.status, 200, ok.text);
});

/** Send raw bytes on a fresh socket; resolves with the status code of the first answer (0 when the server closes without one). */
function rawStatus(url: string, bytes: Buffer): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // write, not end: a half-closed client socket is closed by the server before a slower (PostgreSQL) answer.
    const sock = connect({ host: hostname, port: Number(port) }, () => sock.write(bytes));
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => (text += d));
    sock.on('error', reject);
    sock.on('close', () => resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0)));
  });
}

test('raw request lines carrying Unicode spoofing bytes are refused, never with a 5xx', async () => {
  const utf8 = (s: string) => Buffer.from(s, 'utf8');
  const targets: Buffer[] = [
    utf8('/api/v1/leases/acme/\u202Eexe/x'),
    utf8('/api/v1/sessions?owner_id=\u200Bw'),
    Buffer.concat([utf8('/api/v1/leases/a/'), Buffer.from([0xed, 0xa0, 0x80]), utf8('/c')]),
    Buffer.concat([utf8('/api/v1/tokens/'), Buffer.from([0xef, 0xbb, 0xbf]), utf8('tk_x')]),
    utf8('/api/v1/leases/a/%E2%80%AE/c'),
    utf8('/api/v1/leases/a/%ED%A0%80/c'),
  ];
  for (const target of targets) {
    for (const method of ['GET', 'POST']) {
      const req = Buffer.concat([utf8(`${method} `), target, utf8(` HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${s.token}\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}`)]);
      const status = await rawStatus(s.url, req);
      assert.ok(status >= 400 && status < 500, `${method} ${target.toString('latin1')} → ${status}`);
    }
  }
  assert.equal((await s.call('GET', '/api/v1/health', undefined, { token: null })).status, 200);
});

/** Send these exact bytes on a fresh connection; resolves with the status, headers and body the server wrote before closing. */
function rawExchange(baseUrl: string, bytes: string | Buffer): Promise<{ status: number; headers: Record<string, string>; body: string; raw: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(url.port), url.hostname, () => sock.write(bytes));
    const chunks: Buffer[] = [];
    sock.setTimeout(5_000, () => sock.destroy(new Error(`no answer to ${JSON.stringify(String(bytes).slice(0, 80))}`)));
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body, raw });
    });
  });
}

function assertRefusedTarget(r: Awaited<ReturnType<typeof rawExchange>>, what: string): void {
  assert.equal(r.status, 400, `${what} → ${r.raw.slice(0, 200)}`);
  assert.ok(r.body !== "" || what.includes("HEAD"), `${what}: no body`);
  assert.match(r.headers["x-correlation-id"] ?? "", /./, what);
  if (r.body === "") return; // HEAD: the same status and headers, no body
  const body = JSON.parse(r.body) as Record<string, unknown>;
  assert.deepEqual([body.status, body.code, body.retryable], ['error', 'invalid_request', false], what);
  assert.equal(r.headers['x-correlation-id'], body.correlation_id, what);
}

test('raw request targets that are not a path (asterisk, absolute, authority, empty) are a 400 envelope from the server, never the console', async () => {
  for (const line of [
    'OPTIONS * HTTP/1.1',
    'GET * HTTP/1.1',
    'POST * HTTP/1.1',
    'GET http://example.com/api/v1/health HTTP/1.1',
    'GET https://example.com/ HTTP/1.1',
    'GET example.com:443 HTTP/1.1',
    'CONNECT example.com:443 HTTP/1.1',
    'GET  HTTP/1.1',
    'GET HTTP/1.1',
    'GET /a b HTTP/1.1',
  ]) {
    assertRefusedTarget(await rawExchange(s.url, `${line}\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n`), line);
  }
  // A path is still served (the test server answers non-API paths 404 itself).
  const ok = await rawExchange(s.url, `GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  assert.equal(ok.status, 200, ok.raw.slice(0, 200));
});

test('300 random raw request lines: never a 5xx, a refused target is always the envelope, and the server still works', async () => {
  const rnd = prng(20261201);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const METHODS = ['GET', 'POST', 'OPTIONS', 'HEAD', 'DELETE', 'PUT', 'CONNECT', 'TRACE', 'get', 'G ET', ''];
  const TARGETS = ['*', '/', '/api', '/api/v1/health', '/leases', 'http://h/api/v1/health', 'http://h', 'HTTP://H/', 'h:80', '', '//x', '/%zz', '/a?b=%00', '?x', '#frag', '\\', 'lease://a/b/c', '/api/v1/leases/a/b/c/acquire'];
  const VERSIONS = ['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1', 'http/1.1', ''];
  for (let i = 0; i < 300; i++) {
    const method = pick(METHODS);
    const target = rnd() < 0.1 ? Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => String.fromCharCode(33 + Math.floor(rnd() * 94))).join('') : pick(TARGETS);
    const line = [method, target, pick(VERSIONS)].join(rnd() < 0.9 ? ' ' : '  ');
    const r = await rawExchange(s.url, `${line}\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.ok(r.status < 500, `#${i} ${JSON.stringify(line)} → ${r.raw.slice(0, 200)}`);
    if (!target.startsWith('/') || r.status === 400) {
      if (r.status !== 0 && r.status !== 431) assertRefusedTarget(r, `#${i} ${JSON.stringify(line)}`);
    }
  }
  const health = await s.call('GET', '/api/v1/health', undefined, { token: null });
  assert.equal(health.status, 200);
});

test('every method, known or not, on every kind of path (console, API, raw or percent-encoded) is a 4xx or an answer, never a 5xx; an oversized head is a 431', async () => {
  // A console that, like Next, answers 500 to a method fetch's Request refuses (TRACE, TRACK, CONNECT): the server must never hand it one.
  const consoleLike = await startTestServer({ fallback: consoleLikeFallback() });
  try {
    const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'TRACK', 'CONNECT', 'PROPFIND', 'M-SEARCH', 'FOO', 'QUERY'];
    const PATHS = ['/', '/leases', '/nonexistent', '/%61pi/v1/health', '/%2Fapi/v1/health', '/api/v1/health', '/api%2Fv1/health', '/api/v1/leases/a/b/c', '/api/v1/leases/a/b/c/acquire', '/api/v1/no-such-path', '/api/metrics', '/_next/static/x.js', '/leases/%E2%82%AC'];
    for (const method of METHODS) {
      for (const path of PATHS) {
        const what = `${method} ${path}`;
        const r = await rawExchange(consoleLike.url, `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
        assert.ok(r.status >= 200 && r.status < 500, `${what} → ${r.raw.slice(0, 200)}`);
        // A 405 names what is allowed (GET, HEAD outside the API; the route's own methods in it).
        if (r.status === 405) assert.match(r.headers.allow ?? '', /^[A-Z]+(, [A-Z]+)*$/, `${what}: Allow`);
      }
    }
    // A head over the limit (a cookie and a long query): a 431 the client reads, never a silent close.
    const long = `GET /leases?q=${'x'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nCookie: ${'c=1; '.repeat(10_000)}\r\nConnection: close\r\n\r\n`;
    assert.equal((await rawExchange(consoleLike.url, long)).status, 431);
    assert.equal((await consoleLike.call('GET', '/api/v1/health', undefined, { token: null })).status, 200, 'the server still works');
  } finally {
    await consoleLike.close();
  }
});
