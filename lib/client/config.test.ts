import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseholdClient, LeaseholdError, type LeaseholdClientOptions } from './index';

/** A fetch that records calls and never reaches a network: a config error must come before it. */
function recordingFetch(): { fetch: typeof fetch; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    fetch: async (input) => {
      calls.push(String(input));
      throw new TypeError('fetch failed (test: no network)');
    },
  };
}

function assertConfigError(e: unknown, pattern: RegExp): true {
  assert.ok(e instanceof LeaseholdError, `expected a LeaseholdError, got ${String(e)}`);
  assert.equal(e.code, 'invalid_config');
  assert.equal(e.retryable, false);
  assert.equal(e.status, 0);
  assert.match(e.message, pattern);
  return true;
}

test('a client without a baseUrl outside a browser fails its first call at once with invalid_config, without a request or a retry', async () => {
  const f = recordingFetch();
  const client = new LeaseholdClient({ token: 'lh_x', fetch: f.fetch });
  const started = Date.now();
  await assert.rejects(client.whoami(), (e) => assertConfigError(e, /baseUrl is required outside a browser/));
  assert.ok(Date.now() - started < 100, 'no backoff before the error');
  assert.deepEqual(f.calls, []);
});

test('a malformed baseUrl is refused by the constructor, naming it', () => {
  for (const [baseUrl, pattern] of [
    ['127.0.0.1:3000', /must use http: or https:|not an absolute URL/],
    ['localhost', /not an absolute URL/],
    ['ftp://example.com', /must use http: or https:/],
    ['http://example.com/?x=1', /without credentials, query or fragment/],
    ['http://user:pw@example.com', /without credentials/],
    ['   ', /blank/],
  ] as const) {
    assert.throws(() => new LeaseholdClient({ baseUrl }), (e) => assertConfigError(e, pattern), baseUrl);
  }
});

test('a baseUrl that is not a string is refused by the constructor', () => {
  const opts = { baseUrl: 3000 } as unknown as LeaseholdClientOptions;
  assert.throws(() => new LeaseholdClient(opts), (e) => assertConfigError(e, /baseUrl must be a string/));
});

test('a token that is not a string, is empty, or carries whitespace is refused by the constructor', () => {
  const baseUrl = 'http://127.0.0.1:9';
  assert.throws(() => new LeaseholdClient({ baseUrl, token: 42 } as unknown as LeaseholdClientOptions), (e) => assertConfigError(e, /token must be a string.*number/));
  assert.throws(() => new LeaseholdClient({ baseUrl, token: null } as unknown as LeaseholdClientOptions), (e) => assertConfigError(e, /not null/));
  assert.throws(() => new LeaseholdClient({ baseUrl, token: '' }), (e) => assertConfigError(e, /token is empty/));
  assert.throws(() => new LeaseholdClient({ baseUrl, token: 'lh_abc\n' }), (e) => assertConfigError(e, /whitespace/));
});

test('an undefined token is accepted as no token (process.env under exactOptionalPropertyTypes)', () => {
  const client = new LeaseholdClient({ baseUrl: 'http://127.0.0.1:9/', token: undefined });
  assert.equal(client.baseUrl, 'http://127.0.0.1:9');
});

test('an observer whose client has no baseUrl ends in the error state instead of resyncing forever', async () => {
  const f = recordingFetch();
  const observer = new LeaseholdClient({ fetch: f.fetch }).observeInventory('lease://a/b/*', { backoff: { initialMs: 10, maxMs: 20 } });
  await assert.rejects(observer.ready, (e) => assertConfigError(e, /baseUrl is required/));
  assert.equal(observer.state, 'error');
  assert.deepEqual(f.calls, []);
  observer.close();
});
