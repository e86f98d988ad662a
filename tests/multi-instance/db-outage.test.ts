/**
 * Two instances cut off PostgreSQL during a workload, through a TCP proxy
 * the test controls (the machine's PostgreSQL is never stopped): first by
 * resetting every connection, then by a silent partition. Meanwhile every
 * answer comes within 5 s and is a success or `backend_unavailable` /
 * `outcome_unknown`, or for an acquisition `rate_limited` once its family's
 * steps have waited past LEASEHOLD_ADMIT_QUEUE_MS (docs/design.md
 * "Admission"; never a 500, never a hang); afterwards the instances
 * recover by themselves, and every acknowledged request_id replays to its
 * original answer (no acknowledged acquisition, token or checkpoint lost).
 * A stream open through the cut gets `overflow` (`resync`).
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { leasePath, rid } from '../../server/testing/harness';
import { startInstances, type Instance, type Instances } from '../../server/testing/instances';
import { createTestDatabase, type TestDatabase } from '../../server/testing/pg';
import { proxyDatabase, type TcpProxy } from '../../server/testing/tcp-proxy';
import { SseClient } from '../../server/testing/sse';

let db: TestDatabase;
let proxy: TcpProxy;
let I: Instances;

before(async () => {
  db = await createTestDatabase();
  let viaProxy: string;
  ({ proxy, url: viaProxy } = await proxyDatabase(db));
  // Request lines off (even in a capturing run): the assertions on the log below read its tail.
  I = await startInstances(2, { LEASEHOLD_ACCESS_LOG: 'off' }, { ...db, url: viaProxy });
});
after(async () => {
  await I.close();
  await proxy.close();
  await db.drop();
});

interface Acked {
  on: Instance;
  method: string;
  path: string;
  body: Record<string, unknown>;
  answer: Record<string, unknown>;
}

const without = (b: Record<string, unknown>) => {
  const { correlation_id: _, ...rest } = b;
  return rest;
};

test('a database outage: answers within 5 s (503 backend_unavailable / outcome_unknown, 429 for a new acquisition), recovery, every acknowledged request replays', async () => {
  const acked: Acked[] = [];
  const outcomes = new Map<string, number>();
  let slowest = 0;
  let stop = false;
  const sessions = await Promise.all(Array.from({ length: 6 }, (_, i) => I.openSession(I.list[i % 2]!, `w${i}`, 120_000)));

  /** POST until it succeeds (same request_id, same body, alternating instances); returns the answer. */
  async function until(k: number, method: string, path: string, body: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
    for (let attempt = 0; ; attempt++) {
      const on = I.list[(k + attempt) % 2]!;
      const t0 = performance.now();
      let r;
      try {
        r = await on.call(method, path, body);
      } catch (e) {
        assert.fail(`${on.name} ${path}: the connection failed: ${String(e)}`);
      }
      const ms = performance.now() - t0;
      slowest = Math.max(slowest, ms);
      assert.ok(ms < 5_000, `${on.name} ${path} took ${Math.round(ms)} ms`);
      const key = r.status === 200 ? '200' : `${r.status} ${r.body?.code}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (r.status === 200) {
        acked.push({ on, method, path, body, answer: r.body });
        return r.body;
      }
      if (r.status === 429 && path.endsWith('/acquire')) {
        // Admission: a new acquisition turned away while the family's steps wait for the database; retried like a 503.
        assert.equal(r.body.code, 'rate_limited', r.text);
        assert.ok(r.body.retry_after_ms >= 250, r.text);
      } else {
        assert.equal(r.status, 503, `${on.name} ${path}: ${r.status} ${r.text}`);
        assert.ok(['backend_unavailable', 'outcome_unknown'].includes(r.body.code), r.text);
      }
      if (stop && attempt > 200) return undefined;
      await sleep(100);
    }
  }

  const checkpoints = new Map<string, number>();
  const workers = sessions.map(async (s, k) => {
    const route = `lease://outage/w/${k}`;
    for (let n = 0; !stop; n++) {
      const a = await until(k, 'POST', leasePath(route, 'acquire'), { session_id: s, request_id: rid(), ttl_ms: 60_000 });
      if (!a) return;
      const lease = a.lease as { lease_id: string; fencing_token: number };
      const proof = { session_id: s, lease_id: lease.lease_id, fencing_token: lease.fencing_token };
      const c = await until(k, 'PUT', leasePath(route, 'checkpoint'), { ...proof, request_id: rid(), value: { worker: k, n } });
      if (!c) return;
      checkpoints.set(route, n);
      const r = await until(k, 'POST', leasePath(route, 'release'), { ...proof, request_id: rid() });
      if (!r) return;
    }
  });

  await sleep(1_500);
  const before = acked.length;
  // A stream open through the cut: its instance lost the notification channel, so it must resync.
  const stream = await SseClient.open(I.list[0]!.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://outage/**')}`, { token: I.token });
  await stream.waitFor((e) => e.event === 'subscribed');
  proxy.cut('reset');
  const overflow = await stream.waitFor((e) => e.event === 'overflow', 3_000, 'overflow after the cut');
  assert.equal(overflow.data.reason, 'resync');
  await sleep(1_500);
  proxy.restore();
  await sleep(2_000);
  const afterReset = acked.length;
  proxy.cut('stall');
  await sleep(6_000);
  proxy.restore();
  await sleep(3_000);
  stop = true;
  await Promise.all(workers);
  const afterStall = acked.length;

  assert.ok(before > 20, `work before the cut (${before})`);
  assert.ok(afterReset > before + 20, `recovered after the reset (${before} → ${afterReset})`);
  assert.ok(afterStall > afterReset + 20, `recovered after the partition (${afterReset} → ${afterStall})`);
  const refused = [...outcomes].filter(([k]) => k !== '200');
  assert.ok(refused.length > 0, `the outage was seen: ${JSON.stringify([...outcomes])}`);
  console.log(`outcomes ${JSON.stringify([...outcomes])}, slowest answer ${Math.round(slowest)} ms, acknowledged ${acked.length}`);

  for (const i of I.list) assert.equal((await i.call('GET', '/api/v1/health')).status, 200, `${i.name} healthy again`);
  // The log says what happened: the channel lost and back, and the refused requests (rate-limited, counted).
  const said = I.list[0]!.proc.output();
  assert.match(said, /"level":"warn"[^\n]*"message":"notification channel to the database lost/);
  assert.match(said, /"level":"info"[^\n]*"message":"notification channel back: streams resynced"/);
  assert.match(said, /"level":"error"[^\n]*"status":503[^\n]*"message":"request failed"/);

  // Every acknowledged request_id replays to its original answer, on either instance.
  for (const [n, a] of acked.entries()) {
    const on = I.list[n % 2]!;
    const r = await on.call(a.method, a.path, a.body);
    assert.equal(r.status, 200, `${a.path} ${JSON.stringify(a.body)}: ${r.text}`);
    assert.equal(r.headers['idempotent-replay'], 'true');
    assert.deepEqual(without(r.body), without(a.answer));
  }
  // The last acknowledged checkpoint of each route is what is stored.
  for (const [route, n] of checkpoints) {
    const r = await I.list[0]!.call('GET', leasePath(route, 'checkpoint'));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.checkpoint.value, { worker: Number(route.split('/').pop()), n });
  }
});
