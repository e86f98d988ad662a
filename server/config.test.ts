import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from './config';

const env = (vars: Record<string, string>) => vars as NodeJS.ProcessEnv;

test('connection limits and timeouts have their documented defaults', () => {
  const c = loadConfig(env({}));
  assert.deepEqual(
    [c.LEASEHOLD_MAX_CONNECTIONS, c.LEASEHOLD_HEADERS_TIMEOUT_MS, c.LEASEHOLD_REQUEST_TIMEOUT_MS, c.LEASEHOLD_KEEPALIVE_TIMEOUT_MS, c.LEASEHOLD_SEND_TIMEOUT_MS],
    [10_000, 10_000, 30_000, 65_000, 30_000],
  );
});

test('a headers timeout longer than the request timeout is refused, naming the variable', () => {
  assert.throws(() => loadConfig(env({ LEASEHOLD_HEADERS_TIMEOUT_MS: '20000', LEASEHOLD_REQUEST_TIMEOUT_MS: '10000' })), (e: unknown) => e instanceof ConfigError && /LEASEHOLD_HEADERS_TIMEOUT_MS/.test(e.message));
  assert.throws(() => loadConfig(env({ LEASEHOLD_MAX_CONNECTIONS: '0' })), /invalid LEASEHOLD_MAX_CONNECTIONS/);
});

test('the change log keeps 100,000 changes or 600 s by default; 0 s means by count alone; a count of 0 is refused', () => {
  const c = loadConfig(env({}));
  assert.deepEqual([c.LEASEHOLD_CHANGE_LOG_CHANGES, c.LEASEHOLD_CHANGE_LOG_SECONDS], [100_000, 600]);
  assert.equal(loadConfig(env({ LEASEHOLD_CHANGE_LOG_SECONDS: '0' })).LEASEHOLD_CHANGE_LOG_SECONDS, 0);
  assert.throws(() => loadConfig(env({ LEASEHOLD_CHANGE_LOG_CHANGES: '0' })), /invalid LEASEHOLD_CHANGE_LOG_CHANGES/);
  assert.throws(() => loadConfig(env({ LEASEHOLD_CHANGE_LOG_SECONDS: '-1' })), /invalid LEASEHOLD_CHANGE_LOG_SECONDS/);
});

test('LEASEHOLD_DATABASE_URL takes a URL of a store engine reached by URL (server/store/factory.ts), and nothing else', () => {
  for (const url of ['postgres://u@127.0.0.1:5432/db', 'postgresql://u@127.0.0.1/db']) assert.equal(loadConfig(env({ LEASEHOLD_DATABASE_URL: url })).LEASEHOLD_DATABASE_URL, url);
  for (const url of ['mysql://u@h/db', 'sqlite:/var/lib/leasehold', '/var/lib/leasehold', 'POSTGRES://u@h/db']) {
    assert.throws(() => loadConfig(env({ LEASEHOLD_DATABASE_URL: url })), (e: unknown) => e instanceof ConfigError && /LEASEHOLD_DATABASE_URL/.test(e.message) && /must be a postgres:\/\/ URL/.test(e.message));
  }
});
