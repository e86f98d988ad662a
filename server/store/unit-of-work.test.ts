/**
 * The hot path's row helpers of the unit of work (unit-of-work.ts): a
 * renewed lease row and the narrow-write test the SQLite flush makes for
 * each changed lease. Pure functions: no store needed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { differsOnlyIn, LEASES } from './unit-of-work';
import { renewedRow, type LeaseRow } from './types';
import { millis } from './millis';

const BASE: LeaseRow = {
  family: 'f', route: 'lease://a/b/c', leaseId: 'ls_1', fencingToken: 7, sessionHash: 'h', ownerId: 'o', incarnation: 'hi_1',
  acquiredAt: millis(1_000), renewedAt: millis(2_000), expiresAt: millis(32_000), maxExpiresAt: millis(3_601_000),
  ttlMs: 30_000, renewalCount: 2, revision: 7, metadata: '{"a":1}',
};

test('renewedRow moves the four renewal fields and keeps every other field and exactly the same keys', () => {
  for (const l of [BASE, { ...BASE, releaseRequest: null }, { ...BASE, releaseRequest: '{"at":1,"reason":"r","token_id":"t"}' }]) {
    const r = renewedRow(l, millis(5_000), millis(35_000), 30_000, 3);
    assert.deepEqual(r, { ...l, renewedAt: 5_000, expiresAt: 35_000, ttlMs: 30_000, renewalCount: 3 });
    assert.deepEqual(Object.keys(r).sort(), Object.keys(l).sort());
    assert.equal(LEASES.narrow!.only!(l, r), true, 'a renewal is a narrow change');
  }
});

test('the leases’ narrow test answers what differsOnlyIn answers, field by field', () => {
  const narrow = LEASES.narrow!;
  const changed: Record<keyof LeaseRow, unknown> = {
    family: 'g', route: 'lease://a/b/d', leaseId: 'ls_2', fencingToken: 8, sessionHash: 'h2', ownerId: 'o2', incarnation: 'hi_2',
    acquiredAt: 1_001, renewedAt: 2_001, expiresAt: 32_001, maxExpiresAt: 3_601_001, ttlMs: 30_001, renewalCount: 3, revision: 8,
    metadata: null, releaseRequest: '{"at":1,"reason":"r","token_id":"t"}',
  };
  for (const [field, value] of Object.entries(changed)) {
    const after = { ...BASE, [field]: value } as LeaseRow;
    const expected = differsOnlyIn(BASE, after, narrow.fields);
    assert.equal(narrow.only!(BASE, after), expected, field);
    assert.equal(expected, narrow.fields.includes(field as keyof LeaseRow), `${field}: only the renewal's fields are narrow`);
  }
  // An absent release request and a null one are the same column (NULL): still narrow.
  assert.equal(narrow.only!(BASE, { ...BASE, releaseRequest: null, renewalCount: 3 }), true);
  assert.equal(narrow.only!({ ...BASE, releaseRequest: 'x' }, { ...BASE, releaseRequest: 'x', expiresAt: millis(40_000) }), true);
  assert.deepEqual(narrow.params({ ...BASE, renewedAt: millis(5_000) }), ['f', 'lease://a/b/c', 5_000, 32_000, 30_000, 2]);
});
