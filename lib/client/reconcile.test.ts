/**
 * The observer's reconciliation interval (docs/sdk.md): by default
 * clamp(shortest TTL / 2, 5 s, 60 s), jittered by ±20 %, shown on a fake
 * clock so that no test sleeps.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultReconcileIntervalMs, ReconcileScheduler, RECONCILE_JITTER } from './reconcile';
import { FakeClock } from './fake-clock.testing';

test('default interval: clamp(shortest TTL / 2, 5 s, 60 s)', () => {
  assert.equal(defaultReconcileIntervalMs(1_000), 5_000, 'short TTLs are floored at 5 s');
  assert.equal(defaultReconcileIntervalMs(9_999), 5_000);
  assert.equal(defaultReconcileIntervalMs(10_000), 5_000);
  assert.equal(defaultReconcileIntervalMs(30_000), 15_000);
  assert.equal(defaultReconcileIntervalMs(120_000), 60_000);
  assert.equal(defaultReconcileIntervalMs(600_000), 60_000, 'long TTLs are capped at 60 s');
  assert.equal(defaultReconcileIntervalMs(undefined), 60_000, 'no known TTL: the longest interval');
});

for (const [ttl, base] of [
  [4_000, 5_000],
  [30_000, 15_000],
  [300_000, 60_000],
] as const) {
  test(`scheduler on a fake clock: TTL ${ttl} ms runs every ${base} ms ±20 %`, async () => {
    for (const r of [0, 0.25, 0.5, 0.999999]) {
      const clock = new FakeClock();
      let runs = 0;
      const sched = new ReconcileScheduler(
        clock,
        () => r,
        () => defaultReconcileIntervalMs(ttl),
        async () => {
          runs++;
        },
      );
      const delay = sched.start();
      const expected = base * (1 - RECONCILE_JITTER + 2 * RECONCILE_JITTER * r);
      assert.ok(Math.abs(delay - expected) < 1e-6, `delay ${delay} for random ${r}`);
      assert.ok(delay >= base * 0.8 && delay <= base * 1.2);
      await clock.advance(delay - 1);
      assert.equal(runs, 0, 'not before its time');
      await clock.advance(1);
      assert.equal(runs, 1, 'at its time');
      // The next run is measured from the end of this one.
      await clock.advance(expected - 1);
      assert.equal(runs, 1);
      await clock.advance(1);
      assert.equal(runs, 2);
      sched.stop();
      await clock.advance(10 * base);
      assert.equal(runs, 2, 'stop() stops it');
      assert.equal(clock.pending, 0);
    }
  });
}

test('jitter spreads a fleet: 1,000 schedulers draw delays across the whole ±20 % band', () => {
  const clock = new FakeClock();
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const delays: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const sched = new ReconcileScheduler(clock, random, () => 15_000, async () => undefined);
    delays.push(sched.start());
    sched.stop();
  }
  const min = Math.min(...delays);
  const max = Math.max(...delays);
  assert.ok(min >= 12_000 && max <= 18_000, `${min}..${max}`);
  assert.ok(min < 12_300 && max > 17_700, 'the band is used end to end');
  assert.ok(new Set(delays.map((d) => Math.round(d / 100))).size > 40, 'not in lockstep');
});

test('a failing run does not reschedule (the observer resyncs and restarts it)', async () => {
  const clock = new FakeClock();
  let runs = 0;
  const sched = new ReconcileScheduler(clock, () => 0.5, () => 5_000, async () => {
    runs++;
    throw new Error('list failed');
  });
  sched.start();
  await clock.advance(5_000);
  assert.equal(runs, 1);
  await clock.advance(60_000);
  assert.equal(runs, 1);
  assert.equal(clock.pending, 0);
});
