/**
 * The policies and lock-delay part of the Store boundary, on every backend:
 * policies keyed by exact selector, delays compare-and-deleted on their
 * deadline (so two sweeps never end one delay twice), due delays in
 * deadline order, both kept across reopening.
 */

import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { PolicyRow, Store } from './types';
import { BACKENDS } from '../testing/pg';
import { storeEachTest } from '../testing/store-each-test';

function policy(selector: string, lockDelayMs: number | null): PolicyRow {
  return { family: 'f', selector, ttlMinMs: null, ttlMaxMs: 60_000, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs, maxWaiters: 3, updatedAt: 5, updatedBy: 'tk_1' };
}

for (const backend of BACKENDS) {
  describe(`policy store conformance: ${backend}`, () => {
    const fx = storeEachTest(backend);
    let store: Store;
    beforeEach(async () => {
      store = await fx.open();
    });

    test('a policy is replaced by its exact selector, listed by selector, counted and deleted once', async () => {
      await store.atomic(async (tx) => {
        await tx.policies.putPolicy(policy('lease://b/**', 1));
        await tx.policies.putPolicy(policy('lease://a/*/*', 2));
        await tx.policies.putPolicy(policy('lease://b/**', 7));
        await tx.policies.putPolicy({ ...policy('lease://z/**', null), family: 'g' });
      });
      const rows = await store.atomic((tx) => tx.policies.listPolicies('f'));
      assert.deepEqual(rows, [policy('lease://a/*/*', 2), policy('lease://b/**', 7)]);
      assert.equal(await store.atomic((tx) => tx.policies.countPolicies('f')), 2);
      assert.equal(await store.atomic((tx) => tx.policies.deletePolicy('f', 'lease://b/**')), true);
      assert.equal(await store.atomic((tx) => tx.policies.deletePolicy('f', 'lease://b/**')), false);
    });

    test('a delay is deleted only with its exact deadline; due delays come earliest first and survive reopening', async () => {
      await store.atomic(async (tx) => {
        await tx.policies.setLockDelay({ family: 'f', route: 'lease://a/b/c', until: 300 });
        await tx.policies.setLockDelay({ family: 'f', route: 'lease://a/b/d', until: 200 });
        await tx.policies.setLockDelay({ family: 'g', route: 'lease://a/b/c', until: 100 });
      });
      await store.close();
      store = await fx.open();
      assert.equal(await store.atomic((tx) => tx.policies.getLockDelay('f', 'lease://a/b/c')), 300);
      assert.deepEqual(await store.atomic((tx) => tx.policies.dueDelayFamilies(250, 10)), ['f', 'g']);
      assert.deepEqual(
        (await store.atomic((tx) => tx.policies.dueLockDelays('f', 1_000, 10))).map((d) => [d.route, d.until]),
        [['lease://a/b/d', 200], ['lease://a/b/c', 300]],
      );
      assert.equal(await store.atomic((tx) => tx.policies.countLockDelays(250)), 1);
      assert.equal(await store.atomic((tx) => tx.policies.deleteLockDelay('f', 'lease://a/b/c', 299)), false, 'another deadline is not this one');
      assert.equal(await store.atomic((tx) => tx.policies.deleteLockDelay('f', 'lease://a/b/c', 300)), true);
      assert.equal(await store.atomic((tx) => tx.policies.deleteLockDelay('f', 'lease://a/b/c', 300)), false, 'ended once');
      assert.equal(await store.atomic((tx) => tx.policies.getLockDelay('f', 'lease://a/b/c')), undefined);
    });

    test('a family’s delays are scanned in route order strictly inside a range, at most the limit', async () => {
      await store.atomic(async (tx) => {
        for (const route of ['lease://a/x/2', 'lease://a/x/1', 'lease://a/y/1', 'lease://b/x/1', 'lease://a/x/10']) await tx.policies.setLockDelay({ family: 'f', route, until: 500 });
        await tx.policies.setLockDelay({ family: 'g', route: 'lease://a/x/3', until: 500 });
      });
      const scan = (after: string, before: string, limit: number) => store.atomic(async (tx) => (await tx.policies.scanLockDelays('f', after, before, limit)).map((d) => d.route));
      assert.deepEqual(await scan('lease://a/', 'lease://a0', 10), ['lease://a/x/1', 'lease://a/x/10', 'lease://a/x/2', 'lease://a/y/1']);
      assert.deepEqual(await scan('lease://a/x/1', 'lease://a0', 2), ['lease://a/x/10', 'lease://a/x/2']);
      assert.deepEqual(await scan('', 'lease;', 10), ['lease://a/x/1', 'lease://a/x/10', 'lease://a/x/2', 'lease://a/y/1', 'lease://b/x/1']);
      assert.deepEqual((await store.atomic((tx) => tx.policies.scanLockDelays('f', '', 'lease;', 1)))[0], { family: 'f', route: 'lease://a/x/1', until: 500 });
    });
  });
}
