/**
 * How the console's charts align the metrics summary for uPlot
 * (components/metrics/series.ts): one x per second over the window, gaps as
 * null, the running second of a rate left out, latest and peak per series.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MetricsSummary } from '@/lib/client';
import { alignSeries, formatMs, latencyOperations, summaryEnd } from '@/components/metrics/series';

const NOW = 1_800_000_000_000; // a whole second, in ms
const at = (secondsAgo: number) => NOW - secondsAgo * 1000;

const summary: MetricsSummary = {
  window_s: 5,
  step_s: 1,
  series: {
    acquisitions_per_s: [
      [at(4), 1],
      [at(3), 0],
      [at(2), 7],
      [at(1), 2],
      [at(0), 0],
    ],
    active_leases: [
      [at(1), 3],
      [at(0), 4],
    ],
    'latency_p50_ms.lease_release': [[at(3), 0.5]],
    'latency_p99_ms.lease_release': [[at(3), 0.9]],
    'latency_p50_ms.lease_acquire': [
      [at(4), 1.25],
      [at(0), 2],
    ],
    'latency_p99_ms.lease_acquire': [
      [at(4), 3],
      [at(0), 4],
    ],
  },
};

test('the window ends at the newest point of any series, one x per second, in unix seconds', () => {
  assert.equal(summaryEnd(summary), NOW);
  const d = alignSeries(summary, ['active_leases']);
  assert.deepEqual(d.x, [4, 3, 2, 1, 0].map((s) => at(s) / 1000));
  assert.equal(d.end, NOW);
});

test('seconds without a point are null, so a series known for only part of the window starts where it starts', () => {
  const d = alignSeries(summary, ['active_leases', 'latency_p50_ms.lease_acquire']);
  assert.deepEqual(d.ys[0], [null, null, null, 3, 4]);
  assert.deepEqual(d.ys[1], [1.25, null, null, null, 2]);
});

test('a complete rate leaves out the running second and ends a second earlier', () => {
  const d = alignSeries(summary, ['acquisitions_per_s'], { complete: true });
  assert.equal(d.end, at(1));
  assert.deepEqual(d.ys[0], [null, 1, 0, 7, 2]);
  assert.equal(d.latest[0], 2);
  assert.equal(d.peak[0], 7);
});

test('latest is the newest value in the window and peak the highest; a series without points has neither', () => {
  const d = alignSeries(summary, ['latency_p99_ms.lease_acquire', 'waiters']);
  assert.equal(d.latest[0], 4);
  assert.equal(d.peak[0], 4);
  assert.equal(d.latest[1], undefined);
  assert.equal(d.peak[1], undefined);
  assert.deepEqual(d.ys[1], [null, null, null, null, null]);
});

test('latency operations are read from the series names, sorted', () => {
  assert.deepEqual(latencyOperations(summary), ['lease_acquire', 'lease_release']);
});

test('milliseconds keep the precision their size deserves', () => {
  assert.equal(formatMs(0.4234), (0.42).toLocaleString(undefined, { minimumFractionDigits: 2 }));
  assert.equal(formatMs(undefined), '—');
  assert.equal(formatMs(250.4), (250).toLocaleString());
});
