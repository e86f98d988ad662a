/**
 * Liveness and readiness through a real server: what each answers, and that
 * readiness alone turns 503 for a store outage and for a drain, while the
 * existing health route and the API keep answering as before.
 */

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../testing/harness';
import { StoreUnavailableError, type Store } from '../store/types';
import { HealthLive, HealthNotReady, HealthReady } from './answers';

const servers: TestServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function server(state: { down?: boolean } = {}) {
  const s = await startTestServer({
    wrapStore: (inner) =>
      Object.assign(Object.create(inner) as Store, {
        atomic: (fn: Parameters<Store['atomic']>[0], scope: Parameters<Store['atomic']>[1]) =>
          state.down ? Promise.reject(new StoreUnavailableError('injected: the store is down', false)) : inner.atomic(fn, scope),
      }),
  });
  servers.push(s);
  return s;
}

test('live and ready answer 200 without a token, with plain bodies and a correlation header', async () => {
  const s = await server();
  const live = await s.call('GET', '/api/v1/health/live', undefined, { token: null });
  assert.equal(live.status, 200);
  assert.equal(live.body.status, 'ok');
  assert.equal(typeof live.body.uptime_ms, 'number');
  assert.match(live.headers['x-correlation-id'] as string, /^c_/);
  const ready = await s.call('GET', '/api/v1/health/ready', undefined, { token: null });
  assert.equal(ready.status, 200);
  assert.deepEqual(ready.body, { status: 'ready', store: s.app.store.kind, checks: { store: 'ok', schema: 'ok', draining: false } });
  assert.deepEqual(HealthReady.parse(ready.body), ready.body, 'the documented schema');
  assert.deepEqual(HealthLive.parse(live.body), live.body, 'the documented schema');
  const head = await s.call('HEAD', '/api/v1/health/ready', undefined, { token: null });
  assert.deepEqual([head.status, head.text], [200, '']);
  const post = await s.call('POST', '/api/v1/health/live', {}, { token: null });
  assert.deepEqual([post.status, post.body.code, post.headers.allow], [405, 'method_not_allowed', 'GET, HEAD']);
});

test('a store outage: ready is 503 unavailable while live stays 200', async () => {
  const state = { down: false };
  const s = await server(state);
  state.down = true;
  const ready = await s.call('GET', '/api/v1/health/ready', undefined, { token: null });
  const live = await s.call('GET', '/api/v1/health/live', undefined, { token: null });
  const health = await s.call('GET', '/api/v1/health', undefined, { token: null });
  state.down = false;
  assert.deepEqual([ready.status, ready.body.status, ready.body.checks], [503, 'unavailable', { store: 'unavailable', schema: 'unknown', draining: false }]);
  assert.deepEqual(HealthNotReady.parse(ready.body), ready.body, 'the documented schema');
  assert.equal(live.status, 200, 'a store outage is no reason to restart the process');
  assert.deepEqual([health.status, health.body.status], [503, 'unavailable'], 'the existing health route is unchanged');
  assert.equal((await s.call('GET', '/api/v1/health/ready', undefined, { token: null })).status, 200, 'ready again once the store answers');
});

test('draining: ready answers 503 at once while the API, live and the existing health route still answer', async () => {
  const s = await server();
  const session = await s.openSession('w');
  s.app.beginDrain();
  assert.equal(s.app.draining, true);
  const ready = await s.call('GET', '/api/v1/health/ready', undefined, { token: null });
  assert.deepEqual([ready.status, ready.body.status, ready.body.checks.draining, ready.body.checks.store], [503, 'draining', true, 'ok']);
  assert.deepEqual(HealthNotReady.parse(ready.body), ready.body, 'the documented schema');
  assert.equal(ready.headers.connection, 'close', 'clients are asked to reconnect elsewhere');
  assert.equal((await s.call('GET', '/api/v1/health/live', undefined, { token: null })).status, 200);
  const health = await s.call('GET', '/api/v1/health', undefined, { token: null });
  assert.deepEqual([health.status, health.body.status], [200, 'ok']);
  const acquired = await s.call('POST', '/api/v1/leases/acme/drain/r/acquire', { session_id: session.sessionId, request_id: 'drain-1' });
  assert.equal(acquired.status, 200, 'still serving');
});
