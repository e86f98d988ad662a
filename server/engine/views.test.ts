import { test } from 'node:test';
import assert from 'node:assert/strict';
import { iso } from './views';

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
