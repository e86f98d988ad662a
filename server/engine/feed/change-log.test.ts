/**
 * The engine's change log on both stores (docs/design.md, "Change log"):
 * every change event a step publishes is logged with it, as the feed sends
 * it; renewals never are; the sweeper prunes by count and age with the
 * horizon; and a stream opened through the engine after a restart replays
 * from the log.
 */

import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import { engineFixture, proofOf, until, type EngineFixture } from '../../testing/engine-fixture';
import type { Store, Tx } from '../../store/types';
import { BACKENDS } from '../../testing/pg';
import { changeJson } from './change-log';
import type { FeedFrame, FeedSink } from './feed';

class Sink implements FeedSink {
  frames: FeedFrame[] = [];
  push(f: FeedFrame): boolean {
    this.frames.push(f);
    return true;
  }
  heartbeat(): void {}
  end(last: FeedFrame): number {
    this.frames.push(last);
    return 0;
  }
  onClose(): void {}
}

for (const backend of BACKENDS) {
  describe(`change log through the engine: ${backend}`, () => {
    let f: EngineFixture;
    afterEach(async () => {
      await f.close();
    });

    const logged = () => f.engine.parts.store.atomic((tx) => tx.changes.read('default', 0, Number.MAX_SAFE_INTEGER, 10_000));

    test('every published change is logged with its revision and the feed’s data; renewals are not', async () => {
      f = await engineFixture({ backend });
      const s1 = await f.open('w1', 5_000);
      const a = await f.acquire('lease://cl/a/1', s1);
      await f.engine.leases.renew(f.admin, 'lease://cl/a/1', proofOf(s1, a.answer.lease));
      await f.engine.leases.release(f.admin, 'lease://cl/a/1', proofOf(s1, a.answer.lease));
      await f.acquire('lease://cl/a/2', s1, { ttlMs: 1_000 });
      await f.acquire('lease://cl/a/3', s1);
      f.clock.advance(1_500);
      await f.engine.sweep();
      await f.engine.sessions.close(f.admin, s1);
      const published = f.changes();
      assert.deepEqual(
        published.map((e) => e.change),
        ['acquired', 'released', 'acquired', 'acquired', 'expired', 'session_closed'],
      );
      const rows = await logged();
      assert.deepEqual(
        rows.map((r) => [r.revision, r.route, r.data]),
        published.map((e) => [e.revision, e.route, changeJson(e)]),
      );
    });

    test('the sweeper keeps the newest changes by count or age, whichever holds more, and raises the horizon', async () => {
      f = await engineFixture({ backend, limits: { changeLogChanges: 2, changeLogMs: 1_000 } });
      const s1 = await f.open('w1', 60_000);
      for (let i = 0; i < 3; i++) {
        const a = await f.acquire('lease://cl/p/x', s1);
        await f.engine.leases.release(f.admin, 'lease://cl/p/x', proofOf(s1, a.answer.lease));
      }
      await f.engine.sweep();
      assert.equal((await logged()).length, 6, 'younger than the age: all kept');
      f.clock.advance(1_001);
      await f.engine.sweep();
      assert.deepEqual((await logged()).map((r) => r.revision), [5, 6]);
      assert.deepEqual((await f.engine.stats.changeLog()).find((x) => x.family === 'default'), { family: 'default', rows: 2, horizon: 4 });
    });

    test('the periodic sweep prunes the change log on every tick and expired records on every tenth (housekeeping)', async () => {
      // Counts the sweeps that have ended (their step is the one that reads the due work) and their prunes of expired records.
      let sweeps = 0;
      let expiredPrunes = 0;
      const bound = (o: object, k: string | symbol) => {
        const v = Reflect.get(o, k, o) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(o) : v;
      };
      const wrap = (store: Store): Store =>
        new Proxy(store, {
          get(target, key) {
            if (key !== 'atomic') return bound(target, key);
            return async (fn: (tx: Tx) => Promise<unknown>, scope?: Parameters<Store['atomic']>[1]) => {
              let sweep = false;
              const value = await target.atomic(
                (tx) =>
                  fn(
                    new Proxy(tx, {
                      get(t, k) {
                        if (k === 'dueFamilies') sweep = true;
                        if (k === 'pruneIdempotency') expiredPrunes++;
                        return bound(t, k);
                      },
                    }),
                  ),
                scope,
              );
              if (sweep) sweeps++;
              return value;
            };
          },
        });
      f = await engineFixture({ backend, sweepIntervalMs: 100, limits: { changeLogChanges: 2, changeLogMs: 0 } }, wrap);
      assert.equal(expiredPrunes, 1, "the start's sweep");
      const s1 = await f.open('w1', 60_000);
      for (let i = 0; i < 3; i++) {
        const a = await f.acquire('lease://cl/h/x', s1);
        await f.engine.leases.release(f.admin, 'lease://cl/h/x', proofOf(s1, a.answer.lease));
      }
      const tick = async (label: string) => {
        const before = sweeps;
        f.clock.advance(100);
        await until(f, () => sweeps > before);
        // The tick's sweep has ended (a store turn): the next tick is not skipped as overlapping.
        await until(f, () => false, 2);
        assert.equal(sweeps, before + 1, label);
      };
      await tick('tick at 100 ms');
      assert.deepEqual((await logged()).map((r) => r.revision), [5, 6], 'the change log: pruned by the first tick');
      for (let t = 200; t < 1_000; t += 100) await tick(`tick at ${t} ms`);
      assert.equal(expiredPrunes, 1, 'expired records: not pruned by the ticks within the second');
      await tick('tick at 1,000 ms');
      assert.equal(expiredPrunes, 2, 'expired records: pruned by the tenth tick');
      await f.engine.sweep();
      assert.equal(expiredPrunes, 3, 'engine.sweep() always prunes');
    });

    test('after a restart, a stream opened with since replays the logged changes, then goes live', async () => {
      f = await engineFixture({ backend });
      const s1 = await f.open('w1', 60_000);
      const a = await f.acquire('lease://cl/r/x', s1);
      await f.engine.leases.release(f.admin, 'lease://cl/r/x', proofOf(s1, a.answer.lease));
      await f.restart();
      const sink = new Sink();
      await f.engine.feed.open(f.admin, [selectorOrThrow('lease://cl/**')], false, sink, undefined, 0);
      const b = await f.acquire('lease://cl/r/y', s1);
      assert.deepEqual(
        sink.frames.map((x) => (x.event === 'change' ? `change ${x.id}` : x.event)),
        ['hello', 'subscribed', 'change 1', 'change 2', `change ${b.answer.lease.fencing_token}`],
      );
      assert.equal(JSON.parse(sink.frames[0]!.json).resumed, true);
    });
  });
}
