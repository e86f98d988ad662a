/** HSTS: sent on every answer when the public origin is https (LEASEHOLD_PUBLIC_ORIGIN), never over plain http. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../testing/harness';

test('with an https public origin every answer carries Strict-Transport-Security; with http or none, none does', async () => {
  for (const [publicOrigin, expected] of [
    ['https://leasehold.example', 'max-age=31536000'],
    ['http://leasehold.example', undefined],
    [undefined, undefined],
  ] as const) {
    const s = await startTestServer({ publicOrigin });
    try {
      for (const [path, token] of [['/api/v1/health', null], ['/api/v1/auth/whoami', undefined], ['/leases', null]] as const) {
        const r = await s.call('GET', path, undefined, { token });
        assert.equal(r.headers['strict-transport-security'], expected, `${publicOrigin} ${path}`);
      }
    } finally {
      await s.close();
    }
  }
});
