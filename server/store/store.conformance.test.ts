/**
 * The store conformance suite: the Store boundary itself, on every backend
 * (SQLite in a temporary directory, PostgreSQL in a fresh database). The
 * engine-level behaviour runs on both backends too (server/engine/*.test.ts).
 */

import { millis } from './millis';
import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelector } from '@/lib/selector';
import { openStore } from './factory';
import { scanAccepts, StoreUnavailableError, type AuditRow, type LeaseRow, type Store } from './types';
import { BACKENDS, createTestDatabase } from '../testing/pg';
import { storeEachTest } from '../testing/store-each-test';

function lease(route: string, token: number, over: Partial<LeaseRow> = {}): LeaseRow {
  return {
    family: 'default', route, leaseId: `ls_${token}`, fencingToken: token, sessionHash: 'h1', ownerId: 'o', incarnation: 'hi_1',
    acquiredAt: millis(1), renewedAt: millis(1), expiresAt: millis(10_000), maxExpiresAt: millis(20_000), ttlMs: 5_000, renewalCount: 0, revision: token, metadata: null, ...over,
  };
}

for (const backend of BACKENDS) {
  describe(`store conformance: ${backend}`, () => {
    const fx = storeEachTest(backend);
    const clock = fx.clock;
    let store: Store;
    beforeEach(async () => {
      store = await fx.open();
    });

    test('kind, epoch kept across reopening, backend time from the clock', async () => {
      assert.equal(store.kind, backend);
      const epoch = store.epoch();
      assert.match(epoch, /^ep_/);
      assert.equal(await store.atomic(async (tx) => tx.now), clock.now());
      await store.close();
      store = await fx.open();
      assert.equal(store.epoch(), epoch);
    });

    test('a step that throws changes nothing; a step that returns commits all', async () => {
      await assert.rejects(
        store.atomic(async (tx) => {
          await tx.bumpRevision('default');
          await tx.insertLease(lease('lease://a/b/c', 1));
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal(await store.atomic((tx) => tx.revision('default')), 0);
      assert.equal(await store.atomic((tx) => tx.getLease('default', 'lease://a/b/c')), undefined);
      await store.atomic(async (tx) => {
        assert.equal(await tx.bumpRevision('default'), 1);
        assert.equal(await tx.bumpRevision('default'), 2);
        await tx.insertLease(lease('lease://a/b/c', 2));
      }, { family: 'default' });
      assert.equal(await store.atomic((tx) => tx.revision('default')), 2);
    });

    test('steps started together each keep their own outcome, and each sees the steps committed before it', async () => {
      // 48 steps in flight at once (one batch on SQLite): every third throws after writing.
      const steps = Array.from({ length: 48 }, (_, i) =>
        store.atomic(async (tx) => {
          const route = `lease://batch/r/${i}`;
          const rev = await tx.bumpRevision('default');
          await tx.insertLease(lease(route, rev));
          await tx.putIdempotency({ family: 'default', op: 'acquire', route, requestId: `q${i}`, digest: 'd', status: 0, answer: `{"i":${i}}`, expiresAt: millis(10_000) });
          await tx.insertAudit([{ time: millis(i), eventType: 'lease_acquire', family: 'default', route, tokenId: null, subjectTokenId: null, ownerId: 'o', incarnation: null, result: 'lease_acquired', fencingToken: rev, reason: null, correlationId: `c${i}`, latencyMs: 0 }]);
          if (i % 3 === 0) throw new Error(`boom ${i}`);
          return rev;
        }, { family: 'default' }),
      );
      const outcomes = await Promise.allSettled(steps);
      const kept = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ i, rev: o.value }] : []));
      assert.equal(kept.length, 32);
      outcomes.forEach((o, i) => assert.equal(o.status === 'rejected', i % 3 === 0, `step ${i}`));
      // Revisions of the kept steps are contiguous: a thrown step's bump was undone before the next step read it.
      assert.deepEqual(kept.map((k) => k.rev).sort((a, b) => a - b), Array.from({ length: 32 }, (_, i) => i + 1));
      assert.equal(await store.atomic((tx) => tx.revision('default')), 32);
      const scan = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: ['batch', 'r', null], after: null, want: 100, budget: 1_000, now: millis(0) }));
      assert.deepEqual(scan.rows.map((r) => r.route).sort(), kept.map((k) => `lease://batch/r/${k.i}`).sort());
      for (let i = 0; i < 48; i++) {
        const rec = await store.atomic((tx) => tx.getIdempotency('default', 'acquire', `lease://batch/r/${i}`, `q${i}`));
        assert.equal(rec?.answer, i % 3 === 0 ? undefined : `{"i":${i}}`);
      }
      const audit = await store.atomic((tx) => tx.scanAudit({ family: 'default', triple: [null, null, null], routeless: true, before: null, limit: 100, budget: 1_000 }));
      assert.deepEqual(audit.rows.map((r) => r.correlationId).sort(), kept.map((k) => `c${k.i}`).sort());
    });

    test('a step that scans after its own writes sees them, and a throw after the scan still undoes them all', async () => {
      await store.atomic((tx) => tx.insertLease(lease('lease://scan/r/keep', 1)));
      const seen = await Promise.allSettled([
        store.atomic(async (tx) => {
          await tx.insertLease(lease('lease://scan/r/a', 2));
          await tx.deleteLease('default', 'lease://scan/r/keep', 'ls_1', 1);
          const s = await tx.scanLeases({ family: 'default', triple: ['scan', 'r', null], after: null, want: 10, budget: 100, now: millis(0) });
          await tx.insertLease(lease('lease://scan/r/b', 3));
          await tx.putCheckpoint({ family: 'default', route: 'lease://scan/r/a', value: '1', fencingToken: 2, leaseId: 'ls_2', writtenAt: millis(0), version: 1 });
          throw new Error(`saw ${s.rows.map((r) => r.route).join(',')}`);
        }),
        store.atomic(async (tx) => {
          await tx.insertLease(lease('lease://scan/r/c', 4));
          return (await tx.scanLeases({ family: 'default', triple: ['scan', 'r', null], after: null, want: 10, budget: 100, now: millis(0) })).rows.map((r) => r.route);
        }),
      ]);
      assert.equal(seen[0]!.status, 'rejected');
      assert.match(String((seen[0] as PromiseRejectedResult).reason), /saw lease:\/\/scan\/r\/a$/);
      assert.deepEqual((seen[1] as PromiseFulfilledResult<string[]>).value, ['lease://scan/r/c', 'lease://scan/r/keep']);
      const after = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: ['scan', 'r', null], after: null, want: 10, budget: 100, now: millis(0) }));
      assert.deepEqual(after.rows.map((r) => r.route), ['lease://scan/r/c', 'lease://scan/r/keep']);
      assert.equal(await store.atomic((tx) => tx.getCheckpoint('default', 'lease://scan/r/a')), undefined);
    });

    test('64-bit integers come back as numbers; JSON values round-trip as text exactly', async () => {
      const big = 2 ** 53 - 1;
      const value = '{"b":[1,2.5,"\\u00e9\\ud83d\\ude00"],"a":null,"n":-0.000001}';
      await store.atomic(async (tx) => {
        await tx.insertLease(lease('lease://a/b/c', big, { expiresAt: millis(big), metadata: '{"k":"v","n":1}' }));
        await tx.putCheckpoint({ family: 'default', route: 'lease://a/b/c', value, fencingToken: big, leaseId: 'ls', writtenAt: millis(big), version: 1 });
      });
      const [l, c] = await store.atomic(async (tx) => [await tx.getLease('default', 'lease://a/b/c'), await tx.getCheckpoint('default', 'lease://a/b/c')] as const);
      assert.equal(l!.fencingToken, big);
      assert.equal(typeof l!.expiresAt, 'number');
      assert.equal(l!.metadata, '{"k":"v","n":1}');
      assert.equal(c!.value, value);
      assert.equal(c!.fencingToken, big);
      assert.equal(await store.atomic((tx) => tx.countLeases(null)), 1);
    });

    test('routes compare in byte order in scans (upper case before lower, "-" before "0", "~" last)', async () => {
      const routes = ['lease://r/a/b', 'lease://r/a/B', 'lease://r/a/-x', 'lease://r/a/0', 'lease://r/a/~', 'lease://r/a/_'];
      await store.atomic(async (tx) => {
        let t = 1;
        for (const r of routes) await tx.insertLease(lease(r, t++));
      });
      const sel = parseSelector('lease://r/a/*');
      assert.ok(sel.ok);
      const scan = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: sel.value.triple, after: null, want: 100, budget: 100, now: millis(0) }));
      const bytes = [...routes].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      assert.deepEqual(scan.rows.map((r) => r.route), bytes);
      assert.equal(scan.exhausted, true);
      // Keyset pages with a budget: every route once.
      const seen: string[] = [];
      let after: string | null = null;
      for (let i = 0; i < 10; i++) {
        const page = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: sel.value.triple, after, want: 2, budget: 3, now: millis(0) }));
        seen.push(...page.rows.map((r) => r.route));
        if (page.exhausted) break;
        after = page.lastExamined;
      }
      assert.deepEqual(seen, bytes);
    });

    test('LIST scan plans: each selector shape walks exactly its matches in route order, a dense page reads only its page, a sparse one stops at the budget', async () => {
      // Two families; three realms, areas and resources; some expired, some of another owner.
      const rows: LeaseRow[] = [];
      let t = 1;
      for (const family of ['default', 'other'])
        for (const realm of ['r1', 'r2', 'r3'])
          for (const area of ['a1', 'a2', 'a3'])
            for (const res of ['x', 'y', 'z']) {
              const n = t++;
              rows.push(lease(`lease://${realm}/${area}/${res}`, n, { family, expiresAt: millis(n % 7 === 0 ? 5 : 10_000), ownerId: n % 5 === 0 ? 'p' : 'o' }));
            }
      await store.atomic(async (tx) => {
        for (const r of rows) await tx.insertLease(r);
      });
      const now = millis(100);
      const selectors = ['lease://r2/a1/*', 'lease://r2/*/y', 'lease://r2/**', 'lease://*/*/z', 'lease://*/a3/*', 'lease://*/a2/x', 'lease://**'];
      for (const text of selectors) {
        const sel = parseSelector(text);
        assert.ok(sel.ok, text);
        for (const ownerId of [undefined, 'o']) {
          const expected: string[] = rows
            .filter((r) => r.family === 'default' && scanAccepts({ family: 'default', triple: sel.value.triple, after: null, want: 0, budget: 0, now, ownerId }, r))
            .map((r) => r.route)
            .sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
          const seen: string[] = [];
          let after: string | null = null;
          for (let i = 0; i < 100; i++) {
            const page = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: sel.value.triple, after, want: 2, budget: 4, now, ownerId }));
            assert.ok(page.examined <= 4, `${text}: examined ${page.examined} > budget`);
            seen.push(...page.rows.map((r) => r.route));
            if (page.exhausted) break;
            after = page.rows.length === 2 ? page.rows[1]!.route : page.lastExamined;
          }
          assert.deepEqual(seen, expected, `${text} owner=${ownerId}`);
        }
      }
      // Dense: the first page of a realm/area prefix examines only the page.
      const dense = parseSelector('lease://r1/a2/*');
      assert.ok(dense.ok);
      const d = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: dense.value.triple, after: null, want: 2, budget: 1_000, now: millis(0) }));
      assert.deepEqual([d.rows.length, d.examined, d.exhausted], [2, 2, false]);
      // A literal realm and resource reads that resource's index: the realm's 3 rows of resource y, not its 9 routes.
      const realmRes = parseSelector('lease://r3/*/y');
      assert.ok(realmRes.ok);
      const rr = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: realmRes.value.triple, after: null, want: 100, budget: 1_000, now: millis(0) }));
      assert.deepEqual([rr.rows.map((r) => r.route), rr.examined, rr.exhausted], [['lease://r3/a1/y', 'lease://r3/a2/y', 'lease://r3/a3/y'], 3, true]);
      // Sparse: the budget ends the page, and the position to resume from is the last route examined.
      const sparse = parseSelector('lease://*/a2/x');
      assert.ok(sparse.ok);
      const sp = await store.atomic((tx) => tx.scanLeases({ family: 'default', triple: sparse.value.triple, after: null, want: 100, budget: 3, now: millis(0) }));
      assert.deepEqual([sp.rows.map((r) => r.route), sp.examined, sp.lastExamined, sp.exhausted], [['lease://r1/a2/x'], 3, 'lease://r1/a3/x', false]);
    });

    test('compare-and-delete only removes the exact lease id and token', async () => {
      await store.atomic((tx) => tx.insertLease(lease('lease://a/b/c', 5)));
      assert.equal(await store.atomic((tx) => tx.deleteLease('default', 'lease://a/b/c', 'ls_5', 4)), false);
      assert.equal(await store.atomic((tx) => tx.deleteLease('default', 'lease://a/b/c', 'ls_4', 5)), false);
      assert.equal(await store.atomic((tx) => tx.deleteLease('default', 'lease://a/b/c', 'ls_5', 5)), true);
    });

    test('a session’s leases with a release request, by route, at most limit; pending writes of the batch included', async () => {
      await store.atomic(async (tx) => {
        for (const t of [3, 1, 2]) await tx.insertLease(lease(`lease://a/b/${t}`, t));
        await tx.insertLease(lease('lease://a/b/4', 4, { sessionHash: 'h2' }));
        // A new lease never carries a request: one is set on a held lease.
        await tx.setReleaseRequest('default', 'lease://a/b/3', 'ls_3', 3, '{"at":1}');
        await tx.setReleaseRequest('default', 'lease://a/b/1', 'ls_1', 1, '{"at":2}');
        await tx.setReleaseRequest('default', 'lease://a/b/4', 'ls_4', 4, '{"at":3}');
      });
      const routes = (rows: LeaseRow[]) => rows.map((r) => [r.route, r.releaseRequest]);
      assert.deepEqual(routes(await store.atomic((tx) => tx.sessionReleaseRequests('h1', 10))), [['lease://a/b/1', '{"at":2}'], ['lease://a/b/3', '{"at":1}']]);
      assert.deepEqual(routes(await store.atomic((tx) => tx.sessionReleaseRequests('h1', 1))), [['lease://a/b/1', '{"at":2}']]);
      // A request set by an earlier step of the same batch (held in its caches on both stores) is found too.
      const [, found] = await Promise.all([
        store.atomic((tx) => tx.setReleaseRequest('default', 'lease://a/b/2', 'ls_2', 2, '{"at":4}'), { family: 'default' }),
        store.atomic((tx) => tx.sessionReleaseRequests('h1', 10), { family: 'default' }),
      ]);
      assert.deepEqual(routes(found), [['lease://a/b/1', '{"at":2}'], ['lease://a/b/2', '{"at":4}'], ['lease://a/b/3', '{"at":1}']]);
      assert.deepEqual(routes(await store.atomic((tx) => tx.sessionReleaseRequests('h3', 10))), []);
    });

    test('idempotency records replace, expire and prune; meta is set once', async () => {
      const rec = { family: 'default', op: 'acquire', route: 'lease://a/b/c', requestId: 'r1', digest: 'd1', status: 0, answer: '{"x":1}', expiresAt: millis(100) };
      await store.atomic((tx) => tx.putIdempotency(rec));
      await store.atomic((tx) => tx.putIdempotency({ ...rec, digest: 'd2' }));
      assert.equal((await store.atomic((tx) => tx.getIdempotency('default', 'acquire', 'lease://a/b/c', 'r1')))!.digest, 'd2');
      assert.equal(await store.atomic((tx) => tx.pruneIdempotency(millis(100), 10)), 1);
      assert.equal(await store.atomic((tx) => tx.getIdempotency('default', 'acquire', 'lease://a/b/c', 'r1')), undefined);
      assert.equal(await store.atomic((tx) => tx.initMeta('secret', 'one')), 'one');
      assert.equal(await store.atomic((tx) => tx.initMeta('secret', 'two')), 'one');
    });

    test('token chains: a token and its creators up to the nearest root, oldest first, at most max; lineages do not descend into roots', async () => {
      const tok = (id: string, createdBy: string | null, root = false) => ({ id, secretHash: `h_${id}`, name: id, family: 'default', grants: [], root, kind: 'api' as const, createdAt: millis(1), expiresAt: null, revokedAt: null, createdBy });
      await store.atomic(async (tx) => {
        for (const t of [tok('c_boot', null, true), tok('c_a', 'c_boot'), tok('c_b', 'c_a'), tok('c_root2', 'c_b', true), tok('c_d', 'c_root2'), tok('c_e', 'c_d')]) await tx.insertToken(t);
      });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      for (const lock of [false, true]) {
        assert.deepEqual(ids(await store.atomic((tx) => tx.tokenChain('c_b', 32, lock))), ['c_boot', 'c_a', 'c_b']);
        assert.deepEqual(ids(await store.atomic((tx) => tx.tokenChain('c_e', 32, lock))), ['c_root2', 'c_d', 'c_e'], 'a root is its own anchor');
        assert.deepEqual(ids(await store.atomic((tx) => tx.tokenChain('c_root2', 32, lock))), ['c_root2']);
        assert.deepEqual(ids(await store.atomic((tx) => tx.tokenChain('c_b', 2, lock))), ['c_a', 'c_b'], 'at most max');
        assert.deepEqual(await store.atomic((tx) => tx.tokenChain('c_none', 32, lock)), []);
      }
      assert.deepEqual(ids(await store.atomic((tx) => tx.tokenLineage('c_a'))).sort(), ['c_a', 'c_b']);
    });

    test('idempotency records: many at once, replaced, forgotten, undone with a failed step, kept across reopening', async () => {
      const rec = (i: number, digest = 'd') => ({ family: 'default', op: 'acquire', route: `lease://i/r/${i % 7}`, requestId: `q${i}`, digest, status: 0, answer: `{"i":${i}}`, expiresAt: millis(1_000_000) });
      // More records than one sorted run (4,096 on SQLite), in batches of 64 steps.
      for (let b = 0; b < 80; b++) {
        await Promise.all(Array.from({ length: 64 }, (_, k) => store.atomic((tx) => tx.putIdempotency(rec(b * 64 + k)))));
      }
      await store.atomic(async (tx) => {
        await tx.putIdempotency(rec(5, 'd2'));
        await tx.deleteIdempotency('default', 'acquire', 'lease://i/r/6', 'q6');
      });
      // A step that writes through (a token insert) and then throws undoes its records too.
      await assert.rejects(
        store.atomic(async (tx) => {
          await tx.putIdempotency(rec(9_000));
          await tx.deleteIdempotency('default', 'acquire', 'lease://i/r/0', 'q7');
          await tx.insertToken({ id: 'tk_x', secretHash: 'h_x', name: 'x', family: 'default', grants: [], root: false, kind: 'api', createdAt: millis(0), expiresAt: null, revokedAt: null, createdBy: null });
          throw new Error('boom');
        }),
        /boom/,
      );
      const check = async () => {
        const get = (i: number) => store.atomic((tx) => tx.getIdempotency('default', 'acquire', `lease://i/r/${i % 7}`, `q${i}`));
        assert.equal((await get(5))?.digest, 'd2');
        assert.equal(await get(6), undefined);
        assert.equal((await get(7))?.answer, '{"i":7}');
        assert.equal(await get(9_000), undefined);
        for (const i of [0, 4_095, 4_096, 5_119]) assert.equal((await get(i))?.answer, `{"i":${i}}`);
      };
      await check();
      await store.close();
      store = await fx.open();
      await check();
      // Pruning sees every record, however recent.
      assert.equal(await store.atomic((tx) => tx.pruneIdempotency(millis(2_000_000), 10_000)), 80 * 64 - 1);
    });

    test("a session's lease count follows its leases: cached and written through, a thrown step's moves undone, kept across reopening", async () => {
      const count = async () => [await store.atomic((tx) => tx.countSessionLeases('h1')), (await store.atomic((tx) => tx.getSession('h1')))?.leaseCount ?? 0];
      await store.atomic((tx) => tx.insertSession({ idHash: 'h1', family: 'default', incarnation: 'hi_1', ownerId: 'o', ttlMs: 5_000, createdAt: millis(0), expiresAt: millis(10_000) }));
      assert.deepEqual(await count(), [0, 0]);
      // Steps of one batch (cached rows), one of them thrown after inserting.
      const steps = [1, 2, 3, 4].map((i) =>
        store.atomic(async (tx) => {
          await tx.getSession('h1');
          await tx.insertLease(lease(`lease://n/r/${i}`, i));
          if (i === 4) throw new Error('boom');
        }, { family: 'default', prefetch: { sessionHash: 'h1' } }),
      );
      const outcomes = await Promise.allSettled(steps);
      assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
      assert.deepEqual(await count(), [3, 3]);
      // A compare-and-delete that misses moves nothing; one that hits, one down.
      assert.equal(await store.atomic((tx) => tx.deleteLease('default', 'lease://n/r/1', 'ls_1', 99), { family: 'default' }), false);
      assert.equal(await store.atomic((tx) => tx.deleteLease('default', 'lease://n/r/1', 'ls_1', 1), { family: 'default' }), true);
      assert.deepEqual(await count(), [2, 2]);
      // Written through: an uncached write first (a lock-delay), then the lease rows.
      await store.atomic(async (tx) => {
        await tx.policies.setLockDelay({ family: 'default', route: 'lease://n/r/9', until: millis(50_000) });
        await tx.insertLease(lease('lease://n/r/5', 5));
        assert.equal(await tx.deleteLease('default', 'lease://n/r/2', 'ls_2', 2), true);
        await tx.insertLease(lease('lease://n/r/6', 6));
      }, { family: 'default' });
      assert.deepEqual(await count(), [3, 3]);
      await assert.rejects(
        store.atomic(async (tx) => {
          await tx.policies.setLockDelay({ family: 'default', route: 'lease://n/r/8', until: millis(50_000) });
          await tx.insertLease(lease('lease://n/r/7', 7));
          throw new Error('boom');
        }, { family: 'default' }),
        /boom/,
      );
      assert.deepEqual(await count(), [3, 3]);
      await store.close();
      store = await fx.open();
      assert.deepEqual(await count(), [3, 3]);
      assert.equal((await store.atomic((tx) => tx.sessionLeases('h1'))).length, 3);
    });

    test('rows read in one step are still right in later steps after other steps changed or undid them', async () => {
      await store.atomic(async (tx) => {
        await tx.insertSession({ idHash: 'h1', family: 'default', incarnation: 'hi_1', ownerId: 'o', ttlMs: 5_000, createdAt: millis(0), expiresAt: millis(10_000) });
        await tx.insertLease(lease('lease://k/r/a', await tx.bumpRevision('default')));
      });
      assert.equal((await store.atomic((tx) => tx.getLease('default', 'lease://k/r/a')))?.fencingToken, 1);
      // Changed by a step that writes through (a policy), then undone by a throw.
      await assert.rejects(
        store.atomic(async (tx) => {
          await tx.deleteLease('default', 'lease://k/r/a', 'ls_1', 1);
          await tx.setSessionExpiry('h1', millis(20_000));
          await tx.policies.setLockDelay({ family: 'default', route: 'lease://k/r/a', until: millis(50_000) });
          await tx.bumpRevision('default');
          throw new Error('boom');
        }),
        /boom/,
      );
      assert.equal((await store.atomic((tx) => tx.getLease('default', 'lease://k/r/a')))?.fencingToken, 1);
      assert.equal((await store.atomic((tx) => tx.getSession('h1')))?.expiresAt, 10_000);
      assert.equal(await store.atomic((tx) => tx.revision('default')), 1);
      assert.equal(await store.atomic((tx) => tx.policies.getLockDelay('default', 'lease://k/r/a')), undefined);
      // Changed by a step that writes through and commits.
      await store.atomic(async (tx) => {
        await tx.policies.setLockDelay({ family: 'default', route: 'lease://k/r/b', until: millis(50_000) });
        await tx.deleteLease('default', 'lease://k/r/a', 'ls_1', 1);
        await tx.bumpRevision('default');
      });
      assert.equal(await store.atomic((tx) => tx.getLease('default', 'lease://k/r/a')), undefined);
      assert.equal(await store.atomic((tx) => tx.revision('default')), 2);
      assert.equal(await store.atomic((tx) => tx.policies.getLockDelay('default', 'lease://k/r/b')), 50_000);
      await store.atomic((tx) => tx.policies.deleteLockDelay('default', 'lease://k/r/b', millis(50_000)));
      assert.equal(await store.atomic((tx) => tx.policies.getLockDelay('default', 'lease://k/r/b')), undefined);
    });

    test('due leases and sessions by family, and the families with something due', async () => {
      await store.atomic(async (tx) => {
        await tx.insertLease(lease('lease://a/b/1', 1, { expiresAt: millis(50) }));
        await tx.insertLease(lease('lease://a/b/2', 2, { family: 'other', expiresAt: millis(40) }));
        await tx.insertLease(lease('lease://a/b/3', 3, { expiresAt: millis(500) }));
        await tx.insertSession({ family: 'third', idHash: 's1', incarnation: 'hi_s1', ownerId: 'o', ttlMs: 10, createdAt: millis(0), expiresAt: millis(60) });
      });
      assert.deepEqual(await store.atomic((tx) => tx.dueFamilies(millis(100), 10)), ['default', 'other', 'third']);
      assert.deepEqual((await store.atomic((tx) => tx.dueLeases(millis(100), 10))).map((l) => l.route), ['lease://a/b/2', 'lease://a/b/1']);
      assert.deepEqual((await store.atomic((tx) => tx.dueLeases(millis(100), 10, 'default'))).map((l) => l.route), ['lease://a/b/1']);
      assert.deepEqual((await store.atomic((tx) => tx.dueSessions(millis(100), 10, 'default'))).length, 0);
      assert.deepEqual((await store.atomic((tx) => tx.dueSessions(millis(100), 10, 'third'))).map((s) => s.idHash), ['s1']);
    });

    test('due leases stay exact while renewals move deadlines later and earlier (the sweep horizon)', async () => {
      await store.atomic(async (tx) => {
        await tx.insertLease(lease('lease://a/b/1', 1, { expiresAt: millis(50) }));
        await tx.insertLease(lease('lease://a/b/2', 2, { expiresAt: millis(60) }));
        await tx.insertLease(lease('lease://a/b/3', 3, { expiresAt: millis(10_000) }));
        await tx.insertLease(lease('lease://a/b/4', 4, { expiresAt: millis(10_000) }));
      });
      const due = async (now: number) => (await store.atomic((tx) => tx.dueLeases(millis(now), 10, 'default'))).map((l) => l.route);
      // A read the caches cannot answer: SQLite's pending rows are in the database from here (write-behind.ts).
      assert.deepEqual(await due(100), ['lease://a/b/1', 'lease://a/b/2']);
      // Later, through a family's batch; earlier (a shorter TTL), through it and directly.
      await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://a/b/1', 'ls_1', 40, 5_000, 4_960, 1), { family: 'default' });
      await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://a/b/3', 'ls_3', 40, 80, 40, 1), { family: 'default' });
      await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://a/b/4', 'ls_4', 40, 90, 50, 1));
      assert.deepEqual(await due(100), ['lease://a/b/2', 'lease://a/b/3', 'lease://a/b/4']);
      assert.deepEqual(await store.atomic((tx) => tx.dueFamilies(millis(100), 10)), ['default']);
      assert.equal(await store.atomic((tx) => tx.countBacklog('default', millis(100), 100)), 3);
      // The re-arm moves the renewed lease's horizon on; nothing changes for the reads.
      const rearmed = await store.atomic(async (tx) => tx.rearmLeases?.(millis(100), 10));
      assert.equal(rearmed, 1);
      assert.deepEqual(await due(100), ['lease://a/b/2', 'lease://a/b/3', 'lease://a/b/4']);
      assert.equal((await store.atomic((tx) => tx.getLease('default', 'lease://a/b/1')))?.expiresAt, 5_000);
      assert.deepEqual(await due(5_000), ['lease://a/b/2', 'lease://a/b/3', 'lease://a/b/4', 'lease://a/b/1']);
      assert.deepEqual(await due(4_999), ['lease://a/b/2', 'lease://a/b/3', 'lease://a/b/4']);
    });

    test('a due lease behind thousands of renewed ones is found once they are re-armed, each read bounded', async () => {
      const renewed = 5_000;
      await store.atomic(async (tx) => {
        for (let i = 0; i < renewed; i++) await tx.insertLease(lease(`lease://a/r/${String(i).padStart(5, '0')}`, i + 1, { expiresAt: millis(10 + (i % 50)) }));
        await tx.insertLease(lease('lease://a/due/x', renewed + 1, { expiresAt: millis(70) }));
      });
      const due = async () => (await store.atomic((tx) => tx.dueLeases(millis(100), 10, 'default'))).map((l) => l.route);
      // Due before their renewal (and, on SQLite, in the database from here: a read the caches cannot answer).
      assert.equal((await due()).length, 10);
      await store.atomic(async (tx) => {
        for (let i = 0; i < renewed; i++) await tx.updateLeaseRenewal('default', `lease://a/r/${String(i).padStart(5, '0')}`, `ls_${i + 1}`, 5, 60_000, 59_995, 1);
      }, { family: 'default' });
      // Past the walk's bound (SWEEP_WALK) the due lease is not reached yet, and the read says so by an empty answer, not a scan of everything.
      assert.deepEqual(await due(), []);
      let moved = 0;
      for (let n; (n = (await store.atomic(async (tx) => tx.rearmLeases!(millis(100), 2_048)))) > 0; ) moved += n;
      assert.equal(moved, renewed);
      assert.deepEqual(await due(), ['lease://a/due/x']);
      assert.deepEqual(await store.atomic((tx) => tx.dueFamilies(millis(100), 10)), ['default']);
    });

    test('as sweeps move the horizon’s floor up, every due lease is still found, a shorter renewal’s too', async () => {
      const rearm = (now: number) => store.atomic(async (tx) => tx.rearmLeases?.(millis(now), 2_048));
      const due = async (now: number) => (await store.atomic((tx) => tx.dueLeases(millis(now), 10, 'default'))).map((l) => l.route);
      await store.atomic(async (tx) => {
        await tx.insertLease(lease('lease://f/a/1', 1, { expiresAt: millis(100_000) }));
        await tx.insertLease(lease('lease://f/a/2', 2, { expiresAt: millis(200_000) }));
      });
      // Sweeps at 50 s and 60 s raise the floor (to 50 s: the lowest live horizon is 100 s, less the margin below now).
      await rearm(50_000);
      await rearm(60_000);
      // Renewed at 60 s with a 10 s TTL: due at 70 s, above the floor.
      await store.atomic((tx) => tx.updateLeaseRenewal('default', 'lease://f/a/2', 'ls_2', 60_000, 70_000, 10_000, 1), { family: 'default' });
      assert.deepEqual(await due(69_999), []);
      assert.deepEqual(await due(70_000), ['lease://f/a/2']);
      assert.deepEqual(await store.atomic((tx) => tx.dueFamilies(millis(70_000), 10)), ['default']);
      await rearm(90_000);
      assert.deepEqual(await due(100_000), ['lease://f/a/2', 'lease://f/a/1']);
      assert.equal(await store.atomic((tx) => tx.countBacklog('default', millis(100_000), 10)), 2);
      // A lease written now is above any floor.
      await rearm(100_000);
      await store.atomic((tx) => tx.insertLease(lease('lease://f/a/3', 3, { expiresAt: millis(101_000) })));
      assert.deepEqual(await due(101_000), ['lease://f/a/2', 'lease://f/a/1', 'lease://f/a/3']);
    });

    test('audit rows get increasing seqs, scan newest first, prune from the low end', async () => {
      const row = (time: number, route: string | null) => ({
        time: millis(time), eventType: 'lease_acquire', family: 'default', route, tokenId: null, subjectTokenId: null, ownerId: 'o', incarnation: null,
        result: 'lease_acquired', fencingToken: 1, reason: null, correlationId: 'c', latencyMs: 2,
      });
      await store.atomic((tx) => tx.insertAudit([row(1, 'lease://a/b/c'), row(2, 'lease://a/x/c'), row(3, null)]));
      const sel = parseSelector('lease://a/b/*');
      assert.ok(sel.ok);
      const all = await store.atomic((tx) => tx.scanAudit({ family: 'default', triple: [null, null, null], routeless: true, before: null, limit: 10, budget: 100 }));
      assert.deepEqual(all.rows.map((r) => r.time), [3, 2, 1]);
      assert.ok(all.rows[0]!.seq > all.rows[1]!.seq);
      const some = await store.atomic((tx) => tx.scanAudit({ family: 'default', triple: sel.value.triple, routeless: false, before: null, limit: 10, budget: 100 }));
      assert.deepEqual(some.rows.map((r) => r.route), ['lease://a/b/c']);
      assert.equal(await store.atomic((tx) => tx.pruneAudit(millis(3), 1_000, 10)), 2);
      const left = await store.atomic((tx) => tx.scanAudit({ family: 'default', triple: [null, null, null], routeless: true, before: null, limit: 10, budget: 100 }));
      assert.deepEqual(left.rows.map((r) => r.time), [3]);
    });

    test('audit scan plans: one route oldest first, a rare type, the bounded time order with its budget and edge; per-family prune keeps the newest', async () => {
      const row = (time: number, family: string, eventType: string, route: string | null) => ({
        time: millis(time), eventType, family, route, tokenId: null, subjectTokenId: null, ownerId: 'o', incarnation: null,
        result: 'ok', fencingToken: 1, reason: null, correlationId: 'c', latencyMs: 2,
      });
      const routes = ['lease://a/b/c', 'lease://a/x/c', 'lease://q/b/c'];
      const batch: Array<ReturnType<typeof row>> = [];
      for (let i = 0; i < 30; i++) batch.push(row(100 + i, 'default', i % 10 === 3 ? 'lease_revoke' : 'lease_acquire', i % 6 === 5 ? null : routes[i % 3]!));
      batch.push(row(100, 'other', 'lease_acquire', 'lease://a/b/c'));
      await store.atomic((tx) => tx.insertAudit(batch));
      const scan = (q: Partial<Parameters<Parameters<Store['atomic']>[0]>[0]['scanAudit'] extends (s: infer S) => unknown ? S : never>) =>
        store.atomic((tx) => tx.scanAudit({ family: 'default', triple: [null, null, null], routeless: true, before: null, limit: 100, budget: 1_000, ...q }));
      const times = (rows: AuditRow[]) => rows.map((r) => r.time);
      // One exact route, oldest first, resumed after a keyset position, within a time window.
      const exact = await scan({ triple: ['a', 'b', 'c'], routeless: false, oldestFirst: true, since: millis(103), limit: 3 });
      assert.deepEqual(times(exact.rows), [103, 106, 109]);
      const more = await scan({ triple: ['a', 'b', 'c'], routeless: false, oldestFirst: true, before: [exact.rows[2]!.time, exact.rows[2]!.seq], limit: 100 });
      assert.deepEqual(times(more.rows), [112, 115, 118, 121, 124, 127]);
      assert.equal(more.exhausted, true);
      // A rare event type, newest first, under a selector.
      const rare = await scan({ triple: ['a', null, null], routeless: false, eventType: 'lease_revoke' });
      assert.deepEqual(times(rare.rows), [113, 103]);
      // The time order: routeless events only when asked; an event type filtered per examined event.
      assert.equal((await scan({})).rows.length, 30);
      assert.equal((await scan({ routeless: false })).rows.length, 25);
      assert.deepEqual(times((await scan({ triple: ['a', 'x', null], routeless: false, eventType: 'lease_acquire', until: millis(110) })).rows), [107, 104, 101]);
      // Bounded: the 5 newest events hold 1 match of lease://q/**; the edge is the 5th examined, to resume from.
      const q = await scan({ triple: ['q', null, null], routeless: false, budget: 5, limit: 10 });
      assert.deepEqual([times(q.rows), q.lastExamined?.[0], q.exhausted], [[126], 125, false]);
      const q2 = await scan({ triple: ['q', null, null], routeless: false, budget: 5, limit: 10, before: q.lastExamined as [ReturnType<typeof millis>, number] });
      assert.deepEqual([times(q2.rows), q2.lastExamined?.[0], q2.exhausted], [[120], 120, false]);
      const end = await scan({ triple: ['q', null, null], routeless: false, budget: 500, limit: 10, since: millis(125) });
      assert.deepEqual([times(end.rows), end.lastExamined, end.exhausted], [[126], null, true]);
      // Per-family prune: the oldest by time go, the newest `keep` stay, the other family untouched.
      assert.equal(await store.atomic((tx) => tx.pruneAuditFamily('default', 25, 3)), 3);
      assert.equal(await store.atomic((tx) => tx.pruneAuditFamily('default', 25, 100)), 2);
      assert.equal(await store.atomic((tx) => tx.pruneAuditFamily('default', 25, 100)), 0);
      assert.deepEqual(times((await scan({})).rows).slice(-1), [105]);
      assert.deepEqual(await store.atomic((tx) => tx.auditCounts()), new Map([['default', 25], ['other', 1]]));
    });

    test('a closed store refuses steps with StoreUnavailableError', async () => {
      await store.close();
      await assert.rejects(store.atomic((tx) => tx.revision('default')), StoreUnavailableError);
      store = await fx.open();
    });
  });
}

describe('PostgreSQL: two stores (instances) on one database', () => {
  test("a family's steps serialize across stores: contiguous revisions, and the database clock never goes back along them", async () => {
    const db = await createTestDatabase();
    const [s1, s2] = await Promise.all([openStore(db.url, { postgres: { poolSize: 8 } }), openStore(db.url, { postgres: { poolSize: 8 } })]);
    try {
      const steps = Array.from({ length: 60 }, (_, i) =>
        (i % 2 ? s1 : s2).atomic(
          async (tx) => {
            const before = await tx.revision('f');
            // A round trip in between: the other store's steps run meanwhile, and must wait for this one.
            assert.equal(await tx.revision('f'), before);
            const revision = await tx.bumpRevision('f');
            assert.equal(revision, before + 1, 'nobody bumped in between');
            return { revision, now: millis(tx.now) };
          },
          { family: 'f' },
        ),
      );
      const done = (await Promise.all(steps)).sort((a, b) => a.revision - b.revision);
      assert.deepEqual(done.map((d) => d.revision), Array.from({ length: 60 }, (_, i) => i + 1));
      for (let i = 1; i < done.length; i++) assert.ok(done[i]!.now >= done[i - 1]!.now, `time went back at revision ${done[i]!.revision}`);
      assert.equal(s1.epoch(), s2.epoch());
    } finally {
      await s1.close();
      await s2.close();
      await db.drop();
    }
  });
});
