/**
 * `client.metricsSummary` against the real server: the typed answer the
 * console's charts read, who may read it, and metrics turned off.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseholdClient, LeaseholdError } from '@/lib/client';
import { startTestServer, type TestServer } from '../../server/testing/harness';

const FAMILY_SERIES = [
  'acquisitions_per_s',
  'conflicts_per_s',
  'releases_per_s',
  'active_leases',
  'active_sessions',
  'waiters',
  'notifications_per_s',
  'notifications_dropped_per_s',
];

let s: TestServer;
let client: LeaseholdClient;
before(async () => {
  s = await startTestServer();
  client = new LeaseholdClient({ baseUrl: s.url, token: s.token });
});
after(async () => {
  await s.close();
});

test('the summary has every family series as [unix_ms, value] points, one per second, ending now', async () => {
  const session = await client.openSession({ ownerId: 'charted' });
  try {
    await session.acquire('lease://sdk/metrics/a');
    const summary = await client.metricsSummary(60);
    assert.equal(summary.window_s, 60);
    assert.equal(summary.step_s, 1);
    for (const name of FAMILY_SERIES) {
      const points = summary.series[name];
      assert.ok(Array.isArray(points) && points.length > 0, `${name} has points`);
      for (const [t, v] of points) {
        assert.equal(typeof t, 'number');
        assert.equal(typeof v, 'number');
        assert.equal(t % 1000, 0, 'whole seconds');
      }
      assert.ok(Math.abs(points.at(-1)![0] - Date.now()) < 2000, 'the last point is the current second');
    }
    assert.equal(summary.series.active_leases!.at(-1)![1], 1, 'the live gauge sees the lease');
    assert.ok(
      summary.series.acquisitions_per_s!.reduce((n, [, v]) => n + v, 0) >= 1,
      'the acquisition is counted in the window',
    );
    assert.ok(
      Object.keys(summary.series).some((k) => k.startsWith('latency_p50_ms.')) &&
        Object.keys(summary.series).some((k) => k.startsWith('latency_p99_ms.')),
      'request latency comes per operation',
    );
  } finally {
    await session.close();
  }
});

test('without read on lease://** the summary is access_denied', async () => {
  const narrow = await client.createToken({ name: 'narrow-metrics', grants: ['lease://sdk/metrics/*#read'] });
  const reader = new LeaseholdClient({ baseUrl: s.url, token: narrow.token });
  await assert.rejects(reader.metricsSummary(60), (e: unknown) => e instanceof LeaseholdError && e.code === 'access_denied' && e.status === 403);
});

test('with metrics off the summary is not_found', async () => {
  const off = await startTestServer({ metrics: { enabled: false } });
  try {
    const c = new LeaseholdClient({ baseUrl: off.url, token: off.token });
    await assert.rejects(c.metricsSummary(), (e: unknown) => e instanceof LeaseholdError && e.code === 'not_found' && e.status === 404);
  } finally {
    await off.close();
  }
});
