import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseholdClient, LeaseholdError } from './index';

/** A fetch answering every call with one status and body. */
function answering(status: number, body: string): typeof fetch {
  return async () => new Response(body, { status, headers: { 'Content-Type': 'application/json' } });
}

const client = (status: number, body: string) => new LeaseholdClient({ baseUrl: 'http://127.0.0.1:1', token: 'lh_x', fetch: answering(status, body) });

test('health() on a 503 reports the store the server named, PostgreSQL included (docs/api.md "HealthUnavailable")', async () => {
  assert.deepEqual(await client(503, JSON.stringify({ status: 'unavailable', store: 'postgres' })).health(), { status: 'unavailable', store: 'postgres' });
  assert.deepEqual(await client(503, JSON.stringify({ status: 'unavailable', store: 'sqlite' })).health(), { status: 'unavailable', store: 'sqlite' });
});

test('health() answers a 200 health document as sent', async () => {
  const doc = { status: 'ok', store: 'postgres', epoch: 'e1', version: '0.1.0', uptime_ms: 5 };
  assert.deepEqual(await client(200, JSON.stringify(doc)).health(), doc);
});

test('a 503 that does not name a store (a proxy’s page, an error envelope) is backend_unavailable, never a guessed store', async () => {
  for (const body of ['<html>Service Unavailable</html>', '', JSON.stringify({ status: 'unavailable' }), JSON.stringify({ status: 'error', code: 'backend_unavailable', message: 'down', retryable: true })]) {
    await assert.rejects(client(503, body).health(), (e) => {
      assert.ok(e instanceof LeaseholdError, String(e));
      assert.equal(e.code, 'backend_unavailable');
      assert.equal(e.status, 503);
      return true;
    });
  }
});
