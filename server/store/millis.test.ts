/**
 * Whole milliseconds by type: a fractional time can not be made a `Millis`
 * (at compile time, or at run time through `millis()`), and the PostgreSQL
 * store's time stays whole even when the round trip it measures its clock
 * offset from is an odd number of milliseconds (the cause of
 * `invalid input syntax for type bigint: "….5"` in audit inserts).
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMs, millis, type Millis } from './millis';
import { PgStore } from './postgres/pg-store';
import { createTestDatabase } from '../testing/pg';

test('a plain number is not Millis, and millis() refuses a fraction', () => {
  // @ts-expect-error a number (possibly fractional) is not Millis without millis()
  const plain: Millis = 1_796_083_836_346.5;
  assert.equal(typeof plain, 'number');
  assert.throws(() => millis(1_796_083_836_346.5), RangeError);
  assert.throws(() => addMs(millis(1), 0.5), RangeError);
  assert.throws(() => millis(Number.NaN), RangeError);
  assert.equal(addMs(millis(1_000), -250), 750);
});

test('postgres: time stays whole milliseconds when the measured round trip is odd, and audit rows at store.now() insert', async () => {
  const db = await createTestDatabase();
  const store = await PgStore.open({ url: db.url, poolSize: 2 });
  const realNow = Date.now;
  try {
    // Every read of the local clock one millisecond later than the last: each
    // step's round trip is then odd, so its midpoint is half a millisecond.
    let t = realNow();
    Date.now = () => ++t;
    for (let i = 0; i < 5; i++) {
      const inStep = await store.atomic(async (tx) => tx.now);
      assert.ok(Number.isInteger(inStep), `tx.now ${inStep}`);
      const now = store.now();
      assert.ok(Number.isInteger(now), `store.now() ${now}`);
      await store.atomic((tx) =>
        tx.insertAudit([
          { time: now, eventType: 'lease_force_release', family: 'default', route: 'lease://t/a/b', tokenId: null, subjectTokenId: null, ownerId: 'o', incarnation: null, result: 'lease_released', fencingToken: 1, reason: 'test', correlationId: `c${i}`, latencyMs: 1 },
        ]),
      );
    }
  } finally {
    Date.now = realNow;
    await store.close();
    await db.drop();
  }
});
