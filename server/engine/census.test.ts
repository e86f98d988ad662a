import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelector } from '@/lib/selector';
import { engineFixture } from '../testing/engine-fixture';
import type { CensusEvent, ListedEvent } from './core/events';

test('census publishes every family’s held leases and live sessions, in order after earlier changes', async () => {
  const f = await engineFixture();
  try {
    const a = await f.open('a');
    await f.open('idle');
    await f.acquire('lease://c/a/1', a);
    await f.acquire('lease://c/a/2', a);
    const beta = await f.engine.tokens.authenticate(
      (await f.engine.tokens.create(f.admin, { name: 'beta', grants: ['lease://**#admin'], family: 'beta' })).token,
    );
    await f.engine.sessions.open(beta, 'b', 15_000);
    const before = f.events.length;
    await f.engine.stats.census();
    const census = f.events.slice(before).filter((e): e is CensusEvent => e.type === 'census');
    assert.equal(census.length, 1);
    assert.deepEqual(
      [...census[0]!.families].sort((x, y) => (x.family < y.family ? -1 : 1)),
      [
        { family: 'beta', leases: 0, sessions: 1 },
        { family: 'default', leases: 2, sessions: 2 },
      ],
    );
  } finally {
    await f.close();
  }
});

test('a LIST page publishes how many routes it examined and how many items it returned', async () => {
  const f = await engineFixture();
  try {
    const a = await f.open('a');
    for (const n of [1, 2, 3]) await f.acquire(`lease://l/a/${n}`, a);
    const sel = parseSelector('lease://l/a/*');
    assert.ok(sel.ok);
    const before = f.events.length;
    const page = await f.engine.leases.list(f.admin, sel.value, { limit: 2 });
    assert.equal(page.items.length, 2);
    const listed = f.events.slice(before).filter((e): e is ListedEvent => e.type === 'listed');
    assert.deepEqual(listed, [{ type: 'listed', family: 'default', examined: 3, returned: 2 }]);
  } finally {
    await f.close();
  }
});
