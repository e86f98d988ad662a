/**
 * `endWait` (engine-fixture.ts) on every store backend: a wait whose step
 * is answered late, after many store turns (a commit slowed by a loaded
 * machine), is still ended at its deadline exactly, with the clock stopped
 * there (docs/design.md "Flake hunting", the `queue-tickets` row).
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endWait, engineFixture, rejectsWith, storeTurn } from './engine-fixture';
import { gatedStore } from './gated-store';
import { BACKENDS } from './pg';

for (const backend of BACKENDS) {
  test(`${backend}: endWait ends a wait armed 200 store turns late at its deadline, and the clock stops there`, async () => {
    let gated!: ReturnType<typeof gatedStore>;
    const f = await engineFixture({ backend }, (s) => (gated = gatedStore(s)));
    try {
      const R = 'lease://acme/end-wait/doc';
      const holder = await f.open('holder');
      const first = await f.open('first');
      await f.acquire(R, holder);
      const t0 = f.clock.now();
      const mark = f.clock.mark();
      const open = gated.hold();
      const p = f.acquire(R, first, { waitMs: 100 });
      p.catch(() => undefined);
      const ended = endWait(f, p, 100, mark);
      // The acquire's step commits, but its answer, after which its wait is armed, is held.
      for (let i = 0; i < 200; i++) await storeTurn(f);
      assert.equal(f.clock.armedSince(mark, 100), undefined, 'not armed while its answer is held');
      assert.equal(f.clock.now() - t0, 0, 'the clock waits for the wait');
      open();
      await ended;
      const e = (await rejectsWith(p, 'lease_conflict')) as { queueTicket?: string };
      assert.match(e.queueTicket ?? '', /^qt_/, 'timed out at its deadline: its place parked');
      assert.equal(f.clock.now() - t0, 100, 'the clock stopped at the deadline');
    } finally {
      await f.close();
    }
  });
}
