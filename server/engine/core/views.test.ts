import { test } from 'node:test';
import assert from 'node:assert/strict';
import { heldLease, heldLeaseJson, iso, leaseView } from './views';
import type { LeaseRow } from '../../store/types';
import { millis } from '../../store/millis';

test('iso formats every millisecond exactly as Date#toISOString', () => {
  const edges = [0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 86_399_999, 86_400_000, 951_782_400_000, 1_796_083_836_346, 253_402_300_799_999];
  // Fallbacks: before the epoch, six-digit years, fractions.
  const odd = [-1, -86_400_001, 253_402_300_800_000, 8.64e15, 1_796_083_836_346.5];
  let seed = 17;
  const random = Array.from({ length: 20_000 }, () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return Math.floor((seed / 2 ** 31) * 253_402_300_800_000);
  });
  // Neighbouring times (the day cache), across a day boundary.
  const near = Array.from({ length: 3_000 }, (_, i) => 1_796_083_200_000 - 1_500 + i);
  for (const ms of [...edges, ...odd, ...random, ...near, ...edges]) assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
});

/** Lease rows with what a view must carry exactly: quotes, non-ASCII, a control character, metadata, release requests, edge times. */
const BASE: LeaseRow = {
  family: 'f', route: 'lease://a/b/c', leaseId: 'ls_"1"', fencingToken: 9_007_199_254_740_991, sessionHash: 'h',
  ownerId: 'worker "1" é \u0000 😀', incarnation: 'hi\\1',
  acquiredAt: millis(0), renewedAt: millis(1_796_083_201_000), expiresAt: millis(1_796_083_230_000), maxExpiresAt: millis(253_402_300_800_000),
  ttlMs: 30_000, renewalCount: 2, revision: 41, metadata: null,
};
const ROWS: LeaseRow[] = [
  BASE,
  { ...BASE, metadata: '{"a":1,"b":"x","c":true}' },
  // Canonical text whose integer-like keys JSON.parse reorders: the view's object, not the stored text, is what is sent.
  { ...BASE, metadata: '{"10":"ten","9":"nine","a":"say \\"hi\\"\\n","u":"é 😀\\u2028"}' },
  { ...BASE, releaseRequest: JSON.stringify({ at: 1_796_083_205_000, reason: 'drain "zone" b — é\n', token_id: 'tk_1' }) },
  { ...BASE, releaseRequest: null, expiresAt: millis(1_796_083_100_000) },
];

test('heldLease is the lease view then lease_id, field for field and in order', () => {
  for (const row of ROWS) {
    const held = heldLease(row, 1_796_083_210_000, 3);
    assert.equal(JSON.stringify(held), JSON.stringify({ ...leaseView(row, 1_796_083_210_000, 3), lease_id: row.leaseId }));
  }
});

test('heldLeaseJson writes exactly what JSON.stringify writes of the view', () => {
  for (const row of ROWS) {
    const held = heldLease(row, 1_796_083_210_000, 12);
    assert.equal(heldLeaseJson(held), JSON.stringify(held));
  }
});
