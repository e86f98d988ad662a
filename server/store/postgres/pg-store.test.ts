/**
 * PostgreSQL store faults, through a TCP proxy the test controls (the shared
 * PostgreSQL server is never stopped): a step cut off before its COMMIT is
 * `backend_unavailable` (not committed), one cut off with its COMMIT in
 * flight is `outcome_unknown` (maybe committed); both within the step
 * deadline, and the store serves the next step by itself once the proxy
 * forwards again.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PgStore } from './pg-store';
import { StoreUnavailableError } from '../types';
import { createTestDatabase, type TestDatabase } from '../../testing/pg';
import { startTcpProxy, type TcpProxy } from '../../testing/tcp-proxy';

let db: TestDatabase;
let proxy: TcpProxy;
let store: PgStore;

before(async () => {
  db = await createTestDatabase();
  const u = new URL(db.url);
  proxy = await startTcpProxy(u.hostname, Number(u.port || 5432));
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  store = await PgStore.open({ url: u.toString(), stepTimeoutMs: 1_500 });
});
after(async () => {
  await store.close();
  await proxy.close();
  await db.drop();
});

async function failure(p: Promise<unknown>): Promise<{ error: StoreUnavailableError; ms: number }> {
  const t0 = performance.now();
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(e)}`);
    return { error: e, ms: performance.now() - t0 };
  }
  assert.fail('the step succeeded');
}

test('a partition before COMMIT: not committed; with the COMMIT in flight: maybe committed; both within the deadline; then recovery', async () => {
  assert.equal(await store.atomic((tx) => tx.bumpRevision('f'), { family: 'f' }), 1);

  // Partitioned while the step runs: its next statement never gets an answer.
  const before = await failure(
    store.atomic(async (tx) => {
      await tx.bumpRevision('f');
      proxy.cut('stall');
      return tx.getLease('f', 'lease://a/b/c');
    }, { family: 'f' }),
  );
  assert.equal(before.error.maybeCommitted, false);
  assert.ok(before.ms < 2_500, `${before.ms} ms`);
  proxy.restore();
  assert.equal(await store.atomic((tx) => tx.revision('f')), 1, 'recovered, and the step did not commit');

  // Partitioned after the step's last statement: its COMMIT is sent into the void.
  const during = await failure(
    store.atomic(async (tx) => {
      await tx.bumpRevision('f');
      proxy.cut('stall');
    }, { family: 'f' }),
  );
  assert.equal(during.error.maybeCommitted, true, 'outcome unknown');
  assert.ok(during.ms < 2_500, `${during.ms} ms`);

  // Refused connections while cut off: unavailable at once, never a hang.
  proxy.restore();
  proxy.cut('reset');
  const refused = await failure(store.atomic((tx) => tx.revision('f')));
  assert.equal(refused.error.maybeCommitted, false);
  assert.ok(refused.ms < 2_500);
  proxy.restore();
  assert.equal(await store.atomic((tx) => tx.revision('f')), 1, 'the COMMIT never reached the server');
  assert.equal(await store.atomic((tx) => tx.bumpRevision('f'), { family: 'f' }), 2, 'steps work again');
});

test('a batch cut off before its COMMIT fails every step in it, not committed; cut off with its COMMIT in flight, every step is maybe committed', async () => {
  const base = await store.atomic((tx) => tx.revision('g'), { family: 'g' });
  // 16 steps of one family arrive together (one batch); the 9th is partitioned mid-step.
  const cutMid = await Promise.allSettled(
    Array.from({ length: 16 }, (_, i) =>
      store.atomic(async (tx) => {
        await tx.bumpRevision('g');
        if (i === 8) {
          proxy.cut('stall');
          await tx.getLease('g', 'lease://a/b/uncached');
        }
      }, { family: 'g' }),
    ),
  );
  for (const o of cutMid) {
    assert.equal(o.status, 'rejected');
    const e = (o as PromiseRejectedResult).reason;
    assert.ok(e instanceof StoreUnavailableError && !e.maybeCommitted, String(e));
  }
  proxy.restore();
  assert.equal(await store.atomic((tx) => tx.revision('g'), { family: 'g' }), base, 'nothing committed');

  // The last step of the batch cuts the link after its work: the COMMIT goes into the void.
  const t0 = performance.now();
  const cutCommit = await Promise.allSettled(
    Array.from({ length: 16 }, (_, i) =>
      store.atomic(async (tx) => {
        await tx.bumpRevision('g');
        if (i === 15) proxy.cut('stall');
      }, { family: 'g' }),
    ),
  );
  for (const o of cutCommit) {
    assert.equal(o.status, 'rejected');
    const e = (o as PromiseRejectedResult).reason;
    assert.ok(e instanceof StoreUnavailableError && e.maybeCommitted, String(e));
  }
  assert.ok(performance.now() - t0 < 2_500, 'within the step deadline');
  proxy.restore();
  assert.equal(await store.atomic((tx) => tx.revision('g'), { family: 'g' }), base, 'the COMMIT never reached the server');
});
