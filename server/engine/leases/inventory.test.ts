import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import { fixtureEachTest, proofOf, rejectsWith, until } from '../../testing/engine-fixture';
import type { ListQuery } from './inventory';
import { BACKENDS } from '../../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  const f = fixtureEachTest(backend);

  const list = (sel: string, q: Partial<ListQuery> = {}) => f.engine.leases.list(f.admin, selectorOrThrow(sel), { limit: 100, ...q });

  async function listAll(sel: string, q: Partial<ListQuery> = {}): Promise<{ routes: string[]; pages: number }> {
    const routes: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await list(sel, { ...q, cursor });
      pages++;
      routes.push(...page.items.map((i) => i.route));
      if (!page.next_cursor) return { routes, pages };
      cursor = page.next_cursor;
    }
  }

  describe('LIST', () => {
    test('returns held leases matching the selector in route byte order, with the revision', async () => {
      const s = await f.open();
      for (const r of ['lease://acme/r/b', 'lease://acme/r/B', 'lease://acme/r/a', 'lease://acme/x/a', 'lease://other/r/a']) await f.acquire(r, s);
      const page = await list('lease://acme/r/*');
      assert.deepEqual(page.items.map((i) => i.route), ['lease://acme/r/B', 'lease://acme/r/a', 'lease://acme/r/b']);
      assert.equal(page.revision, 5);
      assert.equal(page.next_cursor, null);
      assert.equal(page.epoch, f.engine.parts.store.epoch());
      assert.deepEqual((await list('lease://*/*/a')).items.map((i) => i.route), ['lease://acme/r/a', 'lease://acme/x/a', 'lease://other/r/a']);
      assert.deepEqual((await list('lease://*/x/*')).items.map((i) => i.route), ['lease://acme/x/a']);
      assert.deepEqual((await list('lease://acme/*/a')).items.map((i) => i.route), ['lease://acme/r/a', 'lease://acme/x/a']);
      assert.equal((await list('lease://**')).items.length, 5);
      assert.deepEqual((await list('lease://acme/r/a')).items.map((i) => i.route), ['lease://acme/r/a'], 'an exact selector gives zero or one item');
      assert.deepEqual((await list('lease://acme/r/zz')).items, []);
    });

    test('an exact selector answers its one route with the filters, expiry and a cursor applied, whatever else is held', async () => {
      const s = await f.open('exact-owner');
      for (let i = 0; i < 30; i++) await f.acquire(`lease://acme/many/r${String(i).padStart(2, '0')}`, s);
      const page = await list('lease://acme/many/r07', { limit: 1 });
      assert.deepEqual(page.items.map((i) => i.route), ['lease://acme/many/r07']);
      assert.equal(page.items[0]!.owner_id, 'exact-owner');
      assert.equal(page.next_cursor, null, 'one route: nothing after it');
      assert.equal(page.revision, 30);
      assert.deepEqual((await list('lease://acme/many/r07', { ownerId: 'someone-else' })).items, []);
      assert.deepEqual((await list('lease://acme/many/r07', { ownerId: 'exact-owner' })).items.length, 1);
      const other = await f.open('short');
      await f.acquire('lease://acme/short/x', other, { ttlMs: 1_000 });
      assert.equal((await list('lease://acme/short/x')).items.length, 1);
      f.clock.advance(1_001);
      assert.deepEqual((await list('lease://acme/short/x')).items, [], 'expired at its deadline');
    });

    test('items are read-only views: no session_id or lease_id', async () => {
      const s = await f.open();
      await f.acquire('lease://a/b/c', s, { metadata: { shard: 3 } });
      const [item] = (await list('lease://a/b/c')).items;
      assert.ok(item);
      assert.equal('lease_id' in item, false);
      assert.equal('session_id' in item, false);
      assert.deepEqual(item.metadata, { shard: 3 });
      assert.equal(JSON.stringify(item).includes(s), false);
    });

    test('expired leases never appear, even before the sweep runs', async () => {
      const s = await f.open('w', 300_000);
      await f.acquire('lease://a/b/short', s, { ttlMs: 1_000 });
      await f.acquire('lease://a/b/long', s, { ttlMs: 10_000 });
      f.clock.advance(1_000);
      assert.deepEqual((await list('lease://a/b/*')).items.map((i) => i.route), ['lease://a/b/long']);
    });

    test('pages partition the result: no duplicates, no omissions', async () => {
      const s = await f.open();
      const want: string[] = [];
      for (let i = 0; i < 250; i++) {
        const r = `lease://acme/r/${String(i).padStart(4, '0')}`;
        want.push(r);
        await f.acquire(r, s);
      }
      const { routes, pages } = await listAll('lease://acme/**', { limit: 100 });
      assert.deepEqual(routes, want);
      assert.equal(pages, 3);
    });

    test('a sparse selector makes progress within the examined-routes budget', async () => {
      const s = await f.open();
      // Resource x in 30 areas of acme, and one more in zeta: `lease://*/r29/x`
      // reads resource x's index range and tests the area per examined row.
      for (let i = 0; i < 30; i++) await f.acquire(`lease://acme/r${String(i).padStart(2, '0')}/x`, s);
      await f.acquire('lease://zeta/r29/x', s);
      const first = await list('lease://*/r29/x', { budget: 10 });
      assert.deepEqual(first.items, [], 'the first 10 routes examined hold no match');
      assert.ok(first.next_cursor, 'a budget-limited page still gives a cursor');
      const { routes, pages } = await listAll('lease://**', { budget: 10, limit: 5 });
      assert.equal(routes.length, 31);
      assert.ok(pages >= 7);
      const sparse = await listAll('lease://*/r29/x', { budget: 7 });
      assert.deepEqual(sparse.routes, ['lease://acme/r29/x', 'lease://zeta/r29/x']);
      assert.ok(sparse.pages > 1, 'the scan took several budget-limited pages');
    });

    test('filters by owner and incarnation narrow the match', async () => {
      const a = await f.open('alpha');
      const b = await f.open('beta');
      await f.acquire('lease://a/b/1', a);
      await f.acquire('lease://a/b/2', b);
      const { answer } = await f.acquire('lease://a/b/3', b);
      assert.deepEqual((await list('lease://a/b/*', { ownerId: 'beta' })).items.map((i) => i.route), ['lease://a/b/2', 'lease://a/b/3']);
      const inc = answer.lease.holder_incarnation;
      assert.equal((await list('lease://a/b/*', { incarnation: inc })).items.length, 2);
      assert.equal((await list('lease://a/b/*', { incarnation: 'hi_nobody' })).items.length, 0);
    });

    test('a cursor is bound to its selector, filters, family and epoch, and tamper-evident', async () => {
      const s = await f.open();
      for (let i = 0; i < 3; i++) await f.acquire(`lease://a/b/${i}`, s);
      const { next_cursor } = await list('lease://a/**', { limit: 1 });
      assert.ok(next_cursor);
      await rejectsWith(list('lease://a/b/*', { cursor: next_cursor }), 'cursor_invalid');
      await rejectsWith(list('lease://a/**', { cursor: next_cursor, ownerId: 'worker' }), 'cursor_invalid');
      const other = await f.engine.tokens.create(f.admin, { name: 'o', grants: ['lease://**#admin'], family: 'other' });
      const p = await f.engine.tokens.authenticate(other.token);
      await rejectsWith(f.engine.leases.list(p, selectorOrThrow('lease://a/**'), { limit: 1, cursor: next_cursor }), 'cursor_invalid');
      const flipped = next_cursor.slice(0, 5) + (next_cursor[5] === 'A' ? 'B' : 'A') + next_cursor.slice(6);
      await rejectsWith(list('lease://a/**', { cursor: flipped }), 'cursor_invalid');
      await rejectsWith(list('lease://a/**', { cursor: 'garbage' }), 'cursor_invalid');
      assert.equal((await list('lease://a/**', { cursor: next_cursor })).items.length, 2, 'the right cursor resumes');
    });

    test('families are isolated: nothing crosses', async () => {
      const s = await f.open();
      await f.acquire('lease://a/b/c', s);
      const other = await f.engine.tokens.create(f.admin, { name: 'o', grants: ['lease://**#admin'], family: 'other' });
      const p = await f.engine.tokens.authenticate(other.token);
      assert.equal((await f.engine.leases.list(p, selectorOrThrow('lease://**'), { limit: 100 })).items.length, 0);
      await rejectsWith(f.engine.leases.inspect(p, 'lease://a/b/c'), 'lease_not_found');
    });
  });

  describe('restart', () => {
    test('every lease, token, checkpoint and idempotency record survives; tokens keep increasing', async () => {
      const s = await f.open('w', 300_000);
      const body = { session_id: s, request_id: 'keep' };
      const first = await f.acquire('lease://a/b/c', s, { requestId: 'keep', body, ttlMs: 600_000 });
      await f.engine.leases.writeCheckpoint(f.admin, 'lease://a/b/c', { ...proofOf(s, first.answer.lease), value: '{"k":1}' });
      const epoch = f.engine.parts.store.epoch();
      await f.restart();
      assert.equal(f.engine.parts.store.epoch(), epoch, 'the epoch survives a restart');
      assert.equal((await f.engine.leases.inspect(f.admin, 'lease://a/b/c')).lease.fencing_token, first.answer.lease.fencing_token);
      assert.deepEqual((await f.engine.leases.readCheckpoint(f.admin, 'lease://a/b/c')).checkpoint.value, { k: 1 });
      const replay = await f.acquire('lease://a/b/c', s, { requestId: 'keep', body });
      assert.equal(replay.replayed, true);
      assert.deepEqual(replay.answer, first.answer);
      await f.engine.leases.release(f.admin, 'lease://a/b/c', proofOf(s, first.answer.lease));
      const next = await f.acquire('lease://a/b/c', s);
      assert.ok(next.answer.lease.fencing_token > first.answer.lease.fencing_token);
    });

    test('what fell due while the server was down is expired after a start that does not wait for it, in deadline order', async () => {
      const a = await f.open('a', 10_000);
      const b = await f.open('b', 300_000);
      await f.acquire('lease://a/b/1', a, { ttlMs: 60_000 });
      await f.acquire('lease://a/b/2', b, { ttlMs: 5_000 });
      await f.acquire('lease://a/b/3', b, { ttlMs: 600_000 });
      await f.engine.stop();
      f.clock.advance(30_000);
      await f.restart().catch(() => {});
      // The start's sweep runs beside the serving (CONTRACT §19: a backlog never holds up a start).
      await until(f, () => f.changes().length >= 2, undefined, 'the two expirations');
      const changes = f.changes();
      assert.deepEqual(
        changes.map((c) => [c.route, c.change]),
        [
          ['lease://a/b/2', 'expired'],
          ['lease://a/b/1', 'session_closed'],
        ],
      );
      assert.deepEqual((await list('lease://**')).items.map((i) => i.route), ['lease://a/b/3']);
    });
  });

 });
}
