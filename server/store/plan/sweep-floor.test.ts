/**
 * The sweep horizon's floor (expiry.ts, `SweepFloor`; docs/design.md
 * "The sweep horizon"): where the walks of `leases_sweep` start.
 * Pure arithmetic, so no store: the walks that use it run on PostgreSQL in
 * server/store/store.conformance.test.ts.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SweepFloor } from './expiry';

const { MARGIN_MS, RESET_MS } = SweepFloor;

test('the floor starts at 0 and rises to the lowest live horizon (or now, if lower) less the margin', () => {
  const f = new SweepFloor();
  assert.equal(f.at, 0);
  f.advance(1_000_000, undefined); // the first sweep starts a reset period
  assert.equal(f.at, 0);
  f.advance(1_000_100, 1_500_000);
  assert.equal(f.at, 1_000_100 - MARGIN_MS);
  f.advance(1_000_200, 1_000_150);
  assert.equal(f.at, 1_000_150 - MARGIN_MS);
  f.advance(1_000_300, undefined);
  assert.equal(f.at, 1_000_300 - MARGIN_MS);
});

test('the floor never falls, and never passes a live horizon less the margin', () => {
  const f = new SweepFloor();
  f.advance(1_000_000, undefined);
  f.advance(1_000_100, 2_000_000);
  const at = f.at;
  // A lowest horizon just above the floor: it stays.
  f.advance(1_000_200, at + 1);
  assert.equal(f.at, at);
  for (let now = 1_000_300; now < 1_000_000 + RESET_MS; now += 1_000) {
    const first = now - 5_000;
    f.advance(now, first);
    assert.equal(f.at, Math.max(at, first - MARGIN_MS));
  }
});

test('every RESET_MS the walks start from 0 again, once', () => {
  const f = new SweepFloor();
  f.advance(1_000_000, undefined);
  f.advance(1_000_100, undefined);
  assert.ok(f.at > 0);
  f.advance(1_000_000 + RESET_MS, undefined);
  assert.equal(f.at, 0);
  f.advance(1_000_100 + RESET_MS, undefined);
  assert.equal(f.at, 1_000_100 + RESET_MS - MARGIN_MS);
});
