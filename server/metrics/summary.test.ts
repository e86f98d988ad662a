import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SecondRing } from './second-ring';
import { SummaryRecorder, type FamilySource } from './summary';

/** A hand-moved wall clock and live figures the test sets. */
function fixture(opts: { capacity?: number; maxFamilies?: number; maxOperations?: number; samplesPerSecond?: number } = {}) {
  let t = 1_800_000_000_000;
  const live = { leases: new Map<string, number>(), sessions: new Map<string, number>(), waiters: new Map<string, number>(), notifications: new Map<string, number>(), dropped: new Map<string, number>() };
  const source: FamilySource = {
    leases: (f) => live.leases.get(f) ?? 0,
    sessions: (f) => live.sessions.get(f) ?? 0,
    waiters: (f) => live.waiters.get(f) ?? 0,
    feed: (f) => ({ notifications: live.notifications.get(f) ?? 0, dropped: live.dropped.get(f) ?? 0 }),
  };
  const rec = new SummaryRecorder(source, { ...opts, now: () => t });
  return {
    rec,
    live,
    advance(ms: number) {
      t += ms;
    },
    get now() {
      return t;
    },
  };
}

const total = (points: Array<[number, number]> | undefined) => (points ?? []).reduce((a, [, v]) => a + v, 0);

test('a SecondRing never grows past its capacity: old seconds fall off, late writes are refused', () => {
  const ring = new SecondRing(900, 8);
  const bytes = ring.bytes;
  assert.equal(bytes, 900 * 8 + 900 * 8 * 8);
  for (let sec = 0; sec < 10 * 900; sec++) ring.add(sec, sec % 8, 1);
  assert.equal(ring.bytes, bytes, 'the same typed arrays, whatever was written');
  assert.equal(ring.get(10 * 900 - 1, (10 * 900 - 1) % 8), 1);
  assert.equal(ring.get(10 * 900 - 901, 0), undefined, 'a second older than the window is gone');
  assert.equal(ring.has(10 * 900 - 900), true);
  ring.add(100, 0, 5); // its slot holds a newer second now
  assert.equal(ring.get(100, 0), undefined);
  assert.equal(ring.get(10 * 900 - 800, 100 % 8), 0, 'a late write never clobbers the newer second');
});

test('a SecondRing clears a reused slot before writing the new second', () => {
  const ring = new SecondRing(4, 2);
  ring.add(1, 0, 3);
  ring.set(1, 1, 7);
  ring.add(5, 0, 1);
  assert.equal(ring.get(5, 0), 1);
  assert.equal(ring.get(5, 1), 0);
  assert.equal(ring.get(1, 0), undefined);
});

test('the summary’s memory is bounded: families, operations and latency samples are capped', () => {
  const f = fixture({ capacity: 900, maxFamilies: 8, maxOperations: 4, samplesPerSecond: 64 });
  const perFamily = new SecondRing(900, 8).bytes;
  const perOperation = new SecondRing(900, 4).bytes + 64 * 8;
  const bound = 8 * perFamily + 4 * perOperation;
  for (let i = 0; i < 2_000; i++) {
    f.rec.count(`family-${i % 50}`, 'acquisitions_per_s');
    f.rec.latency(`op-${i % 10}`, 0.001 * (i % 7));
    if (i % 100 === 0) {
      f.advance(1_000);
      f.rec.tick();
    }
    assert.ok(f.rec.bytes <= bound, `bytes ${f.rec.bytes} stay within ${bound}`);
  }
  assert.deepEqual(f.rec.tracked, { families: 8, operations: 4 });
  // Ten thousand requests in one second still keep 64 samples.
  for (let i = 0; i < 10_000; i++) f.rec.latency('op-0', 0.002);
  assert.ok(f.rec.bytes <= bound);
});

test('rates count per second; gauges are sampled each second and carried over missed ticks', () => {
  const f = fixture();
  f.advance(1_000 - (f.now % 1_000)); // the start of a second
  const t0 = Math.floor(f.now / 1000) * 1000;
  f.live.leases.set('a', 2);
  f.rec.count('a', 'acquisitions_per_s', 2);
  f.advance(1_000);
  f.rec.tick();
  f.rec.count('a', 'conflicts_per_s');
  f.live.leases.set('a', 1);
  f.rec.count('a', 'releases_per_s');
  f.advance(3_000); // the timer missed two ticks
  f.rec.tick();
  f.rec.count('a', 'acquisitions_per_s');
  const s = f.rec.read('a', 900).series;
  assert.deepEqual(s.acquisitions_per_s, [
    [t0, 2],
    [t0 + 1000, 0],
    [t0 + 2000, 0],
    [t0 + 3000, 0],
    [t0 + 4000, 1],
  ]);
  assert.deepEqual(s.conflicts_per_s!.map(([, v]) => v), [0, 1, 0, 0, 0]);
  assert.deepEqual(s.active_leases!.map(([, v]) => v), [2, 1, 1, 1, 1]);
  assert.equal(s.active_sessions!.length, 5);
});

test('notifications and drops per second come from the feed’s totals, the current second included', () => {
  const f = fixture();
  f.live.notifications.set('a', 100); // before tracking: not this history's
  f.rec.track('a');
  f.live.notifications.set('a', 130);
  f.live.dropped.set('a', 4);
  f.advance(1_000);
  f.rec.tick();
  f.live.notifications.set('a', 135);
  const s = f.rec.read('a', 900).series;
  assert.equal(total(s.notifications_per_s), 35);
  assert.equal(total(s.notifications_dropped_per_s), 4);
  assert.equal(s.notifications_per_s![s.notifications_per_s!.length - 1]![1], 5, 'the current second as it stands');
});

test('the window covers at most the history (900 s) and the figures are the family’s own', () => {
  const f = fixture({ capacity: 900 });
  for (let i = 0; i < 2_000; i++) {
    f.rec.count('a', 'acquisitions_per_s');
    f.rec.count('b', 'acquisitions_per_s', 10);
    f.advance(1_000);
    f.rec.tick();
  }
  const a = f.rec.read('a', 900).series;
  assert.equal(a.acquisitions_per_s!.length, 900);
  assert.equal(total(a.acquisitions_per_s), 899, 'one a second, the current second not counted yet');
  assert.equal(f.rec.read('a', 60).series.acquisitions_per_s!.length, 60);
  assert.equal(total(f.rec.read('b', 10).series.acquisitions_per_s), 90);
});

test('latency p50 and p99 per operation per second (nearest rank), instance-wide', () => {
  const f = fixture();
  for (let ms = 1; ms <= 100; ms++) f.rec.latency('lease_acquire', ms / 1000);
  f.advance(1_000);
  f.rec.latency('lease_acquire', 0.007);
  const s = f.rec.read('any', 900).series;
  assert.deepEqual(s['latency_p50_ms.lease_acquire']!.map(([, v]) => v), [50, 7]);
  assert.deepEqual(s['latency_p99_ms.lease_acquire']!.map(([, v]) => v), [99, 7]);
  assert.equal(s['latency_p50_ms.lease_renew'], undefined, 'no points, no series');
});

test('requests and error answers per operation per second, for the seconds that had requests', () => {
  const f = fixture();
  for (let i = 0; i < 10; i++) f.rec.latency('lease_acquire', 0.001, i % 5 !== 0);
  f.advance(2_000);
  f.rec.latency('lease_acquire', 0.001);
  f.rec.latency('lease_acquire', 0.001, false);
  const s = f.rec.read('any', 900).series;
  assert.deepEqual(s['requests_per_s.lease_acquire']!.map(([, v]) => v), [10, 2], 'the second without requests has no point; the current one counts so far');
  assert.deepEqual(s['errors_per_s.lease_acquire']!.map(([, v]) => v), [2, 1]);
  assert.deepEqual(s['requests_per_s.lease_acquire']!.map(([t]) => t), s['latency_p99_ms.lease_acquire']!.map(([t]) => t), 'the same seconds as the latency');
  assert.equal(s['requests_per_s.lease_renew'], undefined);
});

test('the least recently active family makes room for a new one', () => {
  const f = fixture({ maxFamilies: 2 });
  f.rec.count('a', 'acquisitions_per_s');
  f.advance(1_000);
  f.rec.count('b', 'acquisitions_per_s');
  f.advance(1_000);
  f.rec.count('a', 'acquisitions_per_s');
  f.rec.count('c', 'acquisitions_per_s');
  assert.deepEqual(f.rec.tracked.families, 2);
  assert.equal(total(f.rec.read('a', 900).series.acquisitions_per_s), 2, 'a kept its history');
});
