/**
 * The hand-kept request histogram (request-histogram.ts) exports exactly
 * what prom-client's Histogram does for the same observations: the same
 * exposition text and the same JSON.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Histogram, Registry } from 'prom-client';
import { RequestHistogram } from './request-histogram';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

test('the request histogram exports what prom-client’s Histogram does', async () => {
  const theirs = new Registry();
  const ours = new Registry();
  const h = new Histogram({ name: 'leasehold_request_duration_seconds', help: 'API request latency, by operation (the route table’s handler name).', labelNames: ['operation'], buckets: BUCKETS, registers: [theirs] });
  const r = new RequestHistogram('leasehold_request_duration_seconds', 'API request latency, by operation (the route table’s handler name).', BUCKETS, [ours]);
  assert.equal(await ours.metrics(), await theirs.metrics(), 'no observations yet');
  const ops = ['lease_acquire', 'lease_release', 'health', 'session_keepalive', 'op "quoted" \\ \n'];
  let seed = 7;
  const next = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  // Every bound exactly, just above it, zero, and past the last bound.
  const values = [...BUCKETS, ...BUCKETS.map((b) => b * 1.000001), 0, 31, 1e9, ...Array.from({ length: 2_000 }, () => next() ** 4 * 40)];
  values.forEach((v, i) => {
    const op = ops[(i * 7 + Math.floor(next() * 3)) % ops.length]!;
    h.labels(op).observe(v);
    r.observe(op, v);
  });
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON());
});
