import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MetricsSummary } from '@/lib/client';
import { formatErrorRate, operationStats, sortFromParams, sortStats, weightedMedian } from './operations';

const summary: MetricsSummary = {
  window_s: 60,
  step_s: 1,
  series: {
    'latency_p50_ms.lease_acquire': [[1_000, 1], [2_000, 9]],
    'latency_p99_ms.lease_acquire': [[1_000, 4], [2_000, 30]],
    'requests_per_s.lease_acquire': [[1_000, 9], [2_000, 1]],
    'errors_per_s.lease_acquire': [[1_000, 1], [2_000, 0]],
    'latency_p50_ms.lease_renew': [[1_000, 2]],
    'latency_p99_ms.lease_renew': [[1_000, 50]],
    'requests_per_s.lease_renew': [[1_000, 4]],
    'errors_per_s.lease_renew': [[1_000, 0]],
    'latency_p50_ms.health': [[2_000, 0.2]],
    'latency_p99_ms.health': [[2_000, 0.3]],
  },
};

test('each operation over the window: requests and errors summed, p50 weighted by requests, p99 the worst second’s', () => {
  const stats = operationStats(summary);
  assert.deepEqual(stats.map((s) => s.operation), ['health', 'lease_acquire', 'lease_renew']);
  const acquire = stats.find((s) => s.operation === 'lease_acquire')!;
  assert.deepEqual(acquire, { operation: 'lease_acquire', requests: 10, errors: 1, p50: 1, p99: 30 });
  const health = stats.find((s) => s.operation === 'health')!;
  assert.deepEqual([health.requests, health.errors, health.p50], [undefined, undefined, 0.2], 'a server that does not count: no counts, unweighted');
});

test('sorted by p99 descending unless the URL says otherwise; ties by name', () => {
  assert.deepEqual(sortFromParams(null, null), { key: 'p99', order: 'desc' });
  assert.deepEqual(sortFromParams('operation', null), { key: 'operation', order: 'asc' });
  assert.deepEqual(sortFromParams('bogus', 'sideways'), { key: 'p99', order: 'desc' });
  const stats = operationStats(summary);
  assert.deepEqual(sortStats(stats, 'p99', 'desc').map((s) => s.operation), ['lease_renew', 'lease_acquire', 'health']);
  assert.deepEqual(sortStats(stats, 'requests', 'desc').map((s) => s.operation), ['lease_acquire', 'lease_renew', 'health']);
  assert.deepEqual(sortStats(stats, 'operation', 'desc').map((s) => s.operation), ['lease_renew', 'lease_acquire', 'health']);
});

test('the weighted median and the error rate', () => {
  assert.equal(weightedMedian([]), 0);
  assert.equal(weightedMedian([[5, 0], [1, 0], [3, 0]]), 3);
  assert.equal(weightedMedian([[5, 1], [1, 10]]), 1);
  assert.equal(formatErrorRate(1, 10), '10 %');
  assert.equal(formatErrorRate(1, 40), '2.5 %');
  assert.equal(formatErrorRate(0, 5), '0 %');
  assert.equal(formatErrorRate(1, 5_000), '<0.1 %');
  assert.equal(formatErrorRate(undefined, 5), '—');
});
