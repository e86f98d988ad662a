import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixture, rejectsWith } from '../testing/engine-fixture';
import { BACKENDS } from '../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  test('an embed token stops working at its expiry and is deleted by the next sweep', async () => {
    const f = await engineFixture({ backend });
    try {
      const e = await f.engine.createEmbedToken(f.admin, 'lease://acme/widgets/*', 60_000);
      assert.equal(Date.parse(e.expires_at), f.clock.now() + 60_000);
      const p = await f.engine.tokens.authenticate(e.token);
      assert.deepEqual([p.kind, p.grants.map((g) => g.text)], ['embed', ['lease://acme/widgets/*#read']]);

      f.clock.advance(60_000);
      await rejectsWith(f.engine.tokens.authenticate(e.token), 'invalid_credential');
      assert.ok(await f.engine.store.atomic((tx) => tx.getToken(e.token_id)), 'kept until the sweep');
      await f.engine.sweep();
      assert.equal(await f.engine.store.atomic((tx) => tx.getToken(e.token_id)), undefined);
      assert.ok(await f.engine.store.atomic((tx) => tx.getToken(f.admin.tokenId)), 'API tokens are never pruned');
    } finally {
      await f.close();
    }
  });

  test('an embed token lives at most 24 h and never past its creator', async () => {
    const f = await engineFixture({ backend });
    try {
      const long = await f.engine.createEmbedToken(f.admin, 'lease://**', 10 * 86_400_000);
      assert.equal(Date.parse(long.expires_at), f.clock.now() + 86_400_000);
      const creator = await f.engine.createToken(f.admin, { name: 'short', grants: ['lease://acme/**#read'], expiresAt: f.clock.now() + 90_000 });
      const p = await f.engine.tokens.authenticate(creator.token);
      const capped = await f.engine.createEmbedToken(p, 'lease://acme/**', 3_600_000);
      assert.equal(Date.parse(capped.expires_at), f.clock.now() + 90_000);
      await rejectsWith(f.engine.createEmbedToken(p, 'lease://**', 60_000), 'access_denied');
      const embed = await f.engine.tokens.authenticate(capped.token);
      await rejectsWith(f.engine.createEmbedToken(embed, 'lease://acme/**', 60_000), 'access_denied');
    } finally {
      await f.close();
    }
  });

 });
}
