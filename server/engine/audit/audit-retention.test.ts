import { addMs } from '../../store/millis';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { engineFixture } from '../../testing/engine-fixture';
import { PRUNE_BATCH } from './audit';
import { ALL_SEL, allEvents, forceBody, sessionEvent } from './audit-fixtures';
import { BACKENDS } from '../../testing/pg';

// Retention and the quotas, on every store backend (the conformance suite; the rest of the trail is in audit.test.ts).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  describe('retention', () => {
    test('retention prunes events older than the retention age', async () => {
      const f = await engineFixture({ backend, audit: { retentionMs: 86_400_000, maxRows: 1_000_000 } });
      try {
        for (let i = 0; i < 30; i++) await f.open(`old-${i}`);
        await f.engine.audit.flush();
        f.clock.advance(86_400_000 - 1_000);
        for (let i = 0; i < 20; i++) await f.open(`young-${i}`);
        await f.engine.audit.flush();
        f.clock.advance(2_000);
        const pruned = await f.engine.audit.prune();
        assert.equal(pruned, 30);
        const left = await allEvents(f);
        assert.equal(left.length, 20);
        assert.ok(left.every((e) => e.owner_id?.startsWith('young-')));
        assert.equal(await f.engine.audit.prune(), 0, 'nothing else is due');
      } finally {
        await f.close();
      }
    });

    test('retention keeps at most the newest max-rows events, pruning in bounded steps', async () => {
      const f = await engineFixture({ backend, audit: { retentionMs: 365 * 86_400_000, maxRows: 1_000 } });
      try {
        for (let i = 0; i < 5_000; i++) f.engine.audit.record(sessionEvent(f, `w-${i}`, addMs(f.clock.now(), i)));
        await f.engine.audit.flush();
        // One step deletes at most PRUNE_BATCH (500): the first call is one step;
        // the second deletes the rest (3,500), in bounded steps.
        assert.equal(await f.engine.audit.prune(1), PRUNE_BATCH);
        assert.equal(await f.engine.audit.prune(), 4_000 - PRUNE_BATCH);
        const left = await allEvents(f);
        assert.equal(left.length, 1_000);
        assert.equal(left[0]!.owner_id, 'w-4999');
        assert.equal(left[999]!.owner_id, 'w-4000');
      } finally {
        await f.close();
      }
    });

    test('one family’s volume prunes only its own events (its quota), never another family’s force-release', async () => {
      const f = await engineFixture({ backend, audit: { retentionMs: 365 * 86_400_000, maxRows: 1_000_000, maxRowsPerFamily: 1_000 } });
      try {
        const s = await f.open('victim');
        const route = 'lease://quota/victim/a';
        const held = (await f.acquire(route, s)).answer.lease;
        await f.engine.operators.forceRelease(f.admin, route, forceBody(held.fencing_token));
        await f.engine.audit.flush();
        const victimBefore = await allEvents(f);
        // Another family floods the trail: 3,000 events, three times its quota.
        for (let i = 0; i < 3_000; i++) f.engine.audit.record({ ...sessionEvent(f, `flood-${i}`, addMs(f.clock.now(), i)), family: 'tenant-b' });
        await f.engine.audit.flush();
        const pruned = await f.engine.audit.prune();
        assert.equal(pruned, 2_000, 'the flooding family is cut to its quota');
        const victimAfter = await allEvents(f);
        assert.deepEqual(victimAfter, victimBefore, 'the victim family’s trail is untouched');
        assert.ok(victimAfter.some((e) => e.event_type === 'lease_force_release'));
        const other = { ...f.admin, family: 'tenant-b' };
        const left = (await f.engine.audit.list(other, { selector: ALL_SEL, limit: 1_000 })).items;
        assert.equal(left.length, 1_000);
        assert.deepEqual([left[0]!.owner_id, left[999]!.owner_id], ['flood-2999', 'flood-2000'], 'it keeps its newest');
        assert.equal(await f.engine.audit.prune(), 0, 'nothing else is due');
      } finally {
        await f.close();
      }
    });

    test('the global ceiling still holds across families, oldest first', async () => {
      const f = await engineFixture({ backend, audit: { retentionMs: 365 * 86_400_000, maxRows: 1_000, maxRowsPerFamily: 1_000 } });
      try {
        for (let i = 0; i < 800; i++) f.engine.audit.record({ ...sessionEvent(f, `a-${i}`, addMs(f.clock.now(), i)), family: 'fam-a' });
        for (let i = 0; i < 800; i++) f.engine.audit.record({ ...sessionEvent(f, `b-${i}`, addMs(f.clock.now(), 800 + i)), family: 'fam-b' });
        await f.engine.audit.flush();
        assert.equal(await f.engine.audit.prune(), 600);
        const a = (await f.engine.audit.list({ ...f.admin, family: 'fam-a' }, { selector: ALL_SEL, limit: 1_000 })).items;
        const b = (await f.engine.audit.list({ ...f.admin, family: 'fam-b' }, { selector: ALL_SEL, limit: 1_000 })).items;
        assert.deepEqual([a.length, b.length], [200, 800]);
        assert.equal(a[a.length - 1]!.owner_id, 'a-600');
      } finally {
        await f.close();
      }
    });
  });
 });
}
