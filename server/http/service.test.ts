import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { ROUTES } from './routes';

let s: TestServer;
before(async () => {
  s = await startTestServer({ corsOrigins: ['https://app.example'] });
});
after(async () => {
  await s.close();
});

test('health answers without a token: store, epoch, version, uptime, and the correlation header', async () => {
  const r = await s.call('GET', '/api/v1/health', undefined, { token: null });
  assert.equal(r.status, 200);
  assert.equal(r.body.status, 'ok');
  assert.equal(r.body.store, s.backend);
  assert.equal(r.body.epoch, s.app.store.epoch());
  assert.equal(typeof r.body.uptime_ms, 'number');
  assert.equal(typeof r.body.version, 'string');
  assert.match(String(r.headers['x-correlation-id']), /^c_/);
});

test('the OpenAPI document describes every route of the table with its schemas', async () => {
  const r = await s.call('GET', '/api/v1/openapi.json', undefined, { token: null });
  assert.equal(r.status, 200);
  assert.equal(r.body.openapi, '3.1.0');
  const ids = new Set<string>();
  for (const def of ROUTES) {
    const op = r.body.paths[def.path]?.[def.method.toLowerCase()];
    assert.ok(op, `${def.method} ${def.path} is documented`);
    assert.equal(ids.has(op.operationId), false, 'operation ids are unique');
    ids.add(op.operationId);
  }
  const acquire = r.body.paths['/api/v1/leases/{realm}/{area}/{resource}/acquire'].post;
  const ref = acquire.requestBody.content['application/json'].schema.$ref as string;
  const schema = r.body.components.schemas[ref.slice('#/components/schemas/'.length)];
  assert.deepEqual([...schema.required].sort(), ['request_id', 'session_id']);
  assert.equal(schema.additionalProperties, false, 'unknown fields are rejected, and documented so');
  assert.equal(schema.properties.ttl_ms.minimum, 1000);
  assert.equal(schema.properties.ttl_ms.maximum, 600000);
  const list = r.body.paths['/api/v1/leases'].get;
  assert.ok(list.parameters.some((p: { name: string; required: boolean }) => p.name === 'selector' && p.required));
});

test('HEAD behaves as GET without a body', async () => {
  const { sessionId } = await s.openSession();
  await s.call('POST', leasePath('lease://head/a/b', 'acquire'), { session_id: sessionId, request_id: rid() });
  const get = await s.call('GET', leasePath('lease://head/a/b'));
  const head = await s.call('HEAD', leasePath('lease://head/a/b'));
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.text.replace(get.body.correlation_id, head.headers['x-correlation-id'] as string))));
});

test('CORS: a listed origin gets a preflight and bearer answers, never credentials; others get no CORS headers', async () => {
  const pre = await s.call('OPTIONS', '/api/v1/leases?selector=lease://**', undefined, {
    token: null,
    headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'GET' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers['access-control-allow-origin'], 'https://app.example');
  assert.match(String(pre.headers['access-control-allow-headers']), /Authorization/);
  assert.equal(pre.headers['access-control-allow-credentials'], undefined);
  const get = await s.call('GET', '/api/v1/leases?selector=lease://**', undefined, { headers: { Origin: 'https://app.example' } });
  assert.equal(get.headers['access-control-allow-origin'], 'https://app.example');
  const other = await s.call('GET', '/api/v1/leases?selector=lease://**', undefined, { headers: { Origin: 'https://evil.example' } });
  assert.equal(other.status, 200);
  assert.equal(other.headers['access-control-allow-origin'], undefined);
});

test('an unknown /api path is a JSON 404, not a page', async () => {
  const r = await s.call('GET', '/api/v2/leases', undefined, { token: null });
  assert.deepEqual([r.status, r.body.code], [404, 'not_found']);
});

test('a store that cannot answer gives 503 backend_unavailable (retryable) and an unavailable health, never a 500', async () => {
  const broken = await startTestServer();
  try {
    const { sessionId } = await broken.openSession();
    for (const a of broken.apps) await a.store.close();
    const r = await broken.call('POST', leasePath('lease://down/a/b', 'acquire'), { session_id: sessionId, request_id: rid() });
    assert.deepEqual([r.status, r.body.code, r.body.retryable], [503, 'backend_unavailable', true]);
    const list = await broken.call('GET', '/api/v1/leases?selector=lease://**');
    assert.equal(list.status, 503, 'an unavailable store is never an empty page');
    const health = await broken.call('GET', '/api/v1/health', undefined, { token: null });
    assert.deepEqual([health.status, health.body.status, health.body.store], [503, 'unavailable', broken.backend]);
  } finally {
    await broken.close();
  }
});

test('authentication against an unavailable store is 503, not 401 or 500', async () => {
  const broken = await startTestServer();
  try {
    const other = await broken.createToken(['lease://**#read']);
    for (const a of broken.apps) await a.store.close();
    const r = await broken.call('GET', '/api/v1/auth/whoami', undefined, { token: other + 'x' });
    assert.deepEqual([r.status, r.body.code], [503, 'backend_unavailable']);
  } finally {
    await broken.close();
  }
});

test('a client that goes away in the middle of its body leaves the server unharmed', async () => {
  const { connect } = await import('node:net');
  const url = new URL(s.url);
  await new Promise<void>((resolve) => {
    const sock = connect(Number(url.port), url.hostname, () => {
      sock.write(
        `POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"owner_id":`,
      );
      setTimeout(() => {
        sock.destroy();
        resolve();
      }, 50);
    });
  });
  const r = await s.call('GET', '/api/v1/sessions?owner_id=partial');
  assert.equal(r.status, 200);
  assert.equal(r.body.items.length, 0, 'the cut request opened nothing');
});
