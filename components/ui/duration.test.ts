import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatMillis } from './duration';

test('a configured span reads as people say it, exactly: nothing rounded away', () => {
  assert.equal(formatMillis(0), '0 ms');
  assert.equal(formatMillis(250), '250 ms');
  assert.equal(formatMillis(1_000), '1s');
  assert.equal(formatMillis(1_500), '1.5s');
  assert.equal(formatMillis(30_000), '30s');
  assert.equal(formatMillis(90_000), '1m 30s');
  assert.equal(formatMillis(600_000), '10m');
  assert.equal(formatMillis(3_600_000), '1h');
  assert.equal(formatMillis(3_661_250), '1h 1m 1.25s');
  assert.equal(formatMillis(86_400_000), '24h');
});
