import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixture, rejectsWith } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';
import type { Store, Tx } from '../../store/types';

/**
 * A store that counts token reads by hash, and holds back the answer of
 * every step called while `hold` is set (after the step: the store is never blocked).
 */
function countingStore() {
  const probe = { reads: 0, hold: undefined as Promise<void> | undefined };
  const bound = <T extends object>(o: T, k: string | symbol) => {
    const v = Reflect.get(o, k, o) as unknown;
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(o) : v;
  };
  const wrap = (store: Store): Store =>
    new Proxy(store, {
      get(target, key) {
        if (key !== 'atomic') return bound(target, key);
        return async (fn: (tx: Tx) => Promise<unknown>, scope?: Parameters<Store['atomic']>[1]) => {
          const hold = probe.hold;
          const value = await target.atomic(
            (tx) =>
              fn(
                new Proxy(tx, {
                  get(t, k) {
                    if (k !== 'getTokenByHash') return bound(t, k);
                    return (hash: string) => {
                      probe.reads++;
                      return t.getTokenByHash(hash);
                    };
                  },
                }),
              ),
            scope,
          );
          if (hold) await hold;
          return value;
        };
      },
    });
  return { probe, wrap };
}

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  test('an embed token stops working at its expiry and is deleted by the next sweep', async () => {
    const f = await engineFixture({ backend });
    try {
      const e = await f.engine.tokens.createEmbed(f.admin, 'lease://acme/widgets/*', 60_000);
      assert.equal(Date.parse(e.expires_at), f.clock.now() + 60_000);
      const p = await f.engine.tokens.authenticate(e.token);
      assert.deepEqual([p.kind, p.grants.map((g) => g.text)], ['embed', ['lease://acme/widgets/*#read']]);

      f.clock.advance(60_000);
      await rejectsWith(f.engine.tokens.authenticate(e.token), 'invalid_credential');
      assert.ok(await f.engine.parts.store.atomic((tx) => tx.getToken(e.token_id)), 'kept until the sweep');
      await f.engine.sweep();
      assert.equal(await f.engine.parts.store.atomic((tx) => tx.getToken(e.token_id)), undefined);
      assert.ok(await f.engine.parts.store.atomic((tx) => tx.getToken(f.admin.tokenId)), 'API tokens are never pruned');
    } finally {
      await f.close();
    }
  });

  test('requests that miss the token cache together share one read of the token', async () => {
    const { probe, wrap } = countingStore();
    const f = await engineFixture({ backend }, wrap);
    try {
      const t = await f.engine.tokens.create(f.admin, { name: 'svc', grants: ['lease://acme/**#read'] });
      await f.engine.tokens.authenticate(t.token);
      f.clock.advance(1_001);
      const before = probe.reads;
      const principals = await Promise.all(Array.from({ length: 16 }, () => f.engine.tokens.authenticate(t.token)));
      assert.equal(probe.reads - before, 1);
      assert.ok(principals.every((p) => p.tokenId === t.token_id));
      // Cached again: no read.
      await f.engine.tokens.authenticate(t.token);
      assert.equal(probe.reads - before, 1);
    } finally {
      await f.close();
    }
  });

  test('a revoke while a token is being read: later requests read it again, and the earlier read is not cached after it', async () => {
    const { probe, wrap } = countingStore();
    const f = await engineFixture({ backend }, wrap);
    try {
      const t = await f.engine.tokens.create(f.admin, { name: 'svc', grants: ['lease://acme/**#read'] });
      let release!: () => void;
      probe.hold = new Promise<void>((r) => (release = r));
      const early = f.engine.tokens.authenticate(t.token);
      // The read has been made (before the revoke); its answer is held back.
      while (probe.reads === 0) await new Promise((r) => setImmediate(r));
      probe.hold = undefined;
      await f.engine.tokens.revoke(f.admin, t.token_id);
      const revoked = probe.reads;
      await rejectsWith(f.engine.tokens.authenticate(t.token), 'invalid_credential');
      assert.equal(probe.reads, revoked + 1, 'not served by the read begun before the revoke');
      release();
      // The request that began before the revoke is answered as it was read (as without sharing).
      assert.equal((await early).tokenId, t.token_id);
      // Its row did not replace the revoked one in the cache.
      await rejectsWith(f.engine.tokens.authenticate(t.token), 'invalid_credential');
    } finally {
      await f.close();
    }
  });

  test('an embed token lives at most 24 h and never past its creator', async () => {
    const f = await engineFixture({ backend });
    try {
      const long = await f.engine.tokens.createEmbed(f.admin, 'lease://**', 10 * 86_400_000);
      assert.equal(Date.parse(long.expires_at), f.clock.now() + 86_400_000);
      const creator = await f.engine.tokens.create(f.admin, { name: 'short', grants: ['lease://acme/**#read'], expiresAt: f.clock.now() + 90_000 });
      const p = await f.engine.tokens.authenticate(creator.token);
      const capped = await f.engine.tokens.createEmbed(p, 'lease://acme/**', 3_600_000);
      assert.equal(Date.parse(capped.expires_at), f.clock.now() + 90_000);
      await rejectsWith(f.engine.tokens.createEmbed(p, 'lease://**', 60_000), 'access_denied');
      const embed = await f.engine.tokens.authenticate(capped.token);
      await rejectsWith(f.engine.tokens.createEmbed(embed, 'lease://acme/**', 60_000), 'access_denied');
    } finally {
      await f.close();
    }
  });

 });
}
