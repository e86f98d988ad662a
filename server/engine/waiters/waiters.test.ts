import { afterEach, beforeEach, test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { endWait, engineFixture, proofOf, rejectsWith, settleWithTime, until, type EngineFixture } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  let f: EngineFixture;
  beforeEach(async () => {
    f = await engineFixture({ backend, limits: { waitersPerRoute: 3 } });
  });
  afterEach(async () => {
    await f.close();
  });

  const R = 'lease://acme/queue/doc-1';

  /** Resolves when the engine has this many waiters queued. */
  async function queued(n: number): Promise<void> {
    await until(f, () => f.engine.stats.waiters() === n);
    assert.equal(f.engine.stats.waiters(), n);
  }

  test('waiters are granted in FIFO order, each in the step that frees the route, with queued: true', async () => {
    const holder = await f.open('holder');
    const w1 = await f.open('w1');
    const w2 = await f.open('w2');
    const held = await f.acquire(R, holder);
    const p1 = f.acquire(R, w1, { waitMs: 5_000 });
    await queued(1);
    const p2 = f.acquire(R, w2, { waitMs: 5_000 });
    await queued(2);
    assert.equal((await f.engine.leases.inspect(f.admin, R)).lease.waiters, 2);

    await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
    const g1 = await p1;
    assert.equal(g1.answer.queued, true);
    assert.equal(g1.answer.lease.owner_id, 'w1');
    assert.ok(g1.answer.lease.fencing_token > held.answer.lease.fencing_token);

    await f.engine.leases.release(f.admin, R, proofOf(w1, g1.answer.lease));
    const g2 = await p2;
    assert.equal(g2.answer.lease.owner_id, 'w2');
    assert.deepEqual(
      f.changes().map((c) => [c.change, c.queued ?? null]),
      [
        ['acquired', false],
        ['released', null],
        ['acquired', true],
        ['released', null],
        ['acquired', true],
      ],
    );
  });

  test('a waiter whose deadline passes gets lease_conflict and leaves the queue', async () => {
    const holder = await f.open('holder');
    const w = await f.open('w');
    await f.acquire(R, holder);
    const mark = f.clock.mark();
    const p = f.acquire(R, w, { waitMs: 60 });
    await queued(1);
    // Armed after its step commits (on PostgreSQL, after it joined the queue): 59 ms from then.
    await until(f, () => f.clock.armedSince(mark, 60) !== undefined, undefined, 'the wait armed');
    f.clock.advance(59);
    await until(f, () => false, 3);
    assert.equal(f.engine.stats.waiters(), 1, 'still waiting before its deadline');
    await settleWithTime(f, [p.catch(() => undefined)], 1);
    const err = await rejectsWith(p, 'lease_conflict');
    assert.equal(err.retryable, true);
    assert.ok((err.retryAfterMs ?? 0) >= 50);
    assert.equal(f.engine.stats.waiters(), 0);
  });

  test('a waiter whose client disconnects is removed and never granted', async () => {
    const holder = await f.open('holder');
    const w = await f.open('w');
    const held = await f.acquire(R, holder);
    const ac = new AbortController();
    const p = f.acquire(R, w, { waitMs: 5_000, signal: ac.signal });
    await queued(1);
    ac.abort();
    await rejectsWith(p, 'lease_conflict');
    assert.equal(f.engine.stats.waiters(), 0);
    await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
    await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found');
  });

  test('a client that leaves while the step queuing it commits is removed at once, not at its deadline', async () => {
    const holder = await f.open('holder');
    const w = await f.open('w');
    await f.acquire(R, holder);
    const ac = new AbortController();
    const p = f.acquire(R, w, { waitMs: 5_000, signal: ac.signal });
    ac.abort(); // before the acquire's step has committed
    const err = (await p.then(
      () => assert.fail('granted'),
      (e: unknown) => e,
    )) as { code: string; message: string };
    assert.equal(err.code, 'lease_conflict');
    assert.match(err.message, /went away/, 'refused for leaving, with no clock advanced to its deadline');
    assert.equal(f.engine.stats.waiters(), 0);
  });

  test('a grant whose client left before delivery is rolled back and the next waiter is granted', async () => {
    const holder = await f.open('holder');
    const gone = await f.open('gone');
    const next = await f.open('next');
    const held = await f.acquire(R, holder);
    const ac = new AbortController();
    const lost = f.acquire(R, gone, { waitMs: 5_000, signal: ac.signal, requestId: 'gone-req' });
    lost.catch(() => {});
    await queued(1);
    const p2 = f.acquire(R, next, { waitMs: 5_000 });
    await queued(2);
    // The client goes away after the grant committed but before it was answered.
    const off = f.engine.stats.subscribe((e) => {
      if (e.type === 'change' && e.change === 'acquired' && e.lease?.owner_id === 'gone') ac.abort();
    });
    await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
    const g = await p2;
    off();
    assert.equal(g.answer.lease.owner_id, 'next');
    const kinds = f.changes().map((c) => c.change);
    assert.deepEqual(kinds, ['acquired', 'released', 'acquired', 'rolled_back', 'acquired']);
    const revs = f.changes().map((c) => c.revision);
    assert.deepEqual(revs, [...revs].sort((a, b) => a - b), 'revisions increase');
    // The rolled-back grant's idempotency record went with it: its retry runs again (and now conflicts).
    await rejectsWith(f.acquire(R, gone, { requestId: 'gone-req' }), 'lease_conflict');
  });

  test('a session already holding or waiting gets a non-retryable conflict at once; a full queue is rate_limited', async () => {
    const holder = await f.open('holder');
    await f.acquire(R, holder);
    assert.equal((await rejectsWith(f.acquire(R, holder, { waitMs: 1_000 }), 'lease_conflict')).retryable, false);
    const ws = await Promise.all([f.open('a'), f.open('b'), f.open('c'), f.open('d')]);
    const pending = ws.slice(0, 3).map((s) => f.acquire(R, s, { waitMs: 300 }).catch((e: unknown) => e));
    await queued(3);
    assert.equal((await rejectsWith(f.acquire(R, ws[0]!, { waitMs: 1_000 }), 'lease_conflict')).retryable, false);
    await rejectsWith(f.acquire(R, ws[3]!, { waitMs: 1_000 }), 'rate_limited');
    await settleWithTime(f, pending);
  });

  test('a duplicate of a waiting acquire is idempotency_conflict, retryable only with the same inputs', async () => {
    const holder = await f.open('holder');
    const w = await f.open('w');
    await f.acquire(R, holder);
    const body = { session_id: w, request_id: 'dup', wait_ms: 300 };
    const p = f.acquire(R, w, { waitMs: 300, requestId: 'dup', body }).catch((e: unknown) => e);
    await queued(1);
    assert.equal((await rejectsWith(f.acquire(R, w, { waitMs: 300, requestId: 'dup', body }), 'idempotency_conflict')).retryable, true);
    assert.equal(
      (await rejectsWith(f.acquire(R, w, { waitMs: 300, requestId: 'dup', body: { ...body, wait_ms: 200 } }), 'idempotency_conflict')).retryable,
      false,
    );
    await settleWithTime(f, [p]);
  });

  test('closing a waiting session drops its wait with session_not_found', async () => {
    const holder = await f.open('holder');
    const w = await f.open('w');
    await f.acquire(R, holder);
    const p = f.acquire(R, w, { waitMs: 5_000 });
    await queued(1);
    await f.engine.sessions.close(f.admin, w);
    await rejectsWith(p, 'session_not_found');
    assert.equal(f.engine.stats.waiters(), 0);
  });

  test('expiry of the holder grants the route to the head waiter', async () => {
    const holder = await f.open('holder', 300_000);
    const w = await f.open('w', 300_000);
    await f.acquire(R, holder, { ttlMs: 2_000 });
    const p = f.acquire(R, w, { waitMs: 5_000 });
    await queued(1);
    f.clock.advance(2_000);
    await f.engine.sweep();
    const g = await p;
    assert.equal(g.answer.lease.owner_id, 'w');
    assert.deepEqual(f.changes().map((c) => c.change), ['acquired', 'expired', 'acquired']);
  });

  test('an answer that processes a due expiry reports the waiter it granted, not a free route', async () => {
    const holder = await f.open('holder', 300_000);
    const w = await f.open('w', 300_000);
    const other = await f.open('other', 300_000);
    await f.acquire(R, holder, { ttlMs: 2_000 });
    const p = f.acquire(R, w, { waitMs: 5_000 });
    await queued(1);
    f.clock.advance(2_000);
    // No sweep: the inspect itself finds the expiry due.
    const seen = await f.engine.leases.inspect(f.admin, R);
    assert.equal(seen.lease.owner_id, 'w');
    assert.equal((await p).answer.lease.fencing_token, seen.lease.fencing_token);
    const err = await rejectsWith(f.acquire(R, other), 'lease_conflict');
    assert.equal(err.retryable, true, 'the waiter was first in line: the newcomer conflicts');
  });


  test('the waiters gauge counts per family and in all, and returns to zero after grants, deadlines, disconnects and closes', async () => {
    const fam = () => [f.engine.stats.waiters(), f.engine.stats.waiters('default')];
    const holder = await f.open('holder');
    const [w1, w2, w3] = [await f.open('w1'), await f.open('w2'), await f.open('w3')];
    let held = await f.acquire(R, holder);
    const ac = new AbortController();
    const p1 = f.acquire(R, w1, { waitMs: 5_000 });
    await queued(1);
    const p2 = f.acquire(R, w2, { waitMs: 5_000, signal: ac.signal });
    await queued(2);
    const p3 = f.acquire(R, w3, { waitMs: 5_000 });
    await queued(3);
    assert.deepEqual(fam(), [3, 3]);
    // A queued grant (the claim of the head waiter inside the releasing step).
    await f.engine.leases.release(f.admin, R, proofOf(holder, held.answer.lease));
    held = await p1;
    assert.deepEqual(fam(), [2, 2], 'a grant takes one waiter off the family too');
    // A disconnect, then a close of a waiting session.
    ac.abort();
    await rejectsWith(p2, 'lease_conflict');
    assert.deepEqual(fam(), [1, 1]);
    await f.engine.sessions.close(f.admin, w3);
    await rejectsWith(p3, 'session_not_found');
    assert.deepEqual(fam(), [0, 0]);
    // A deadline (on the manual clock).
    const mark = f.clock.mark();
    const late = f.acquire(R, w2, { waitMs: 60 });
    late.catch(() => undefined);
    await endWait(f, late, 60, mark);
    await rejectsWith(late, 'lease_conflict');
    assert.deepEqual(fam(), [0, 0]);
    // And once more through a grant, so a drift would show as 1.
    const p4 = f.acquire(R, w2, { waitMs: 5_000 });
    await queued(1);
    await f.engine.leases.release(f.admin, R, proofOf(w1, held.answer.lease));
    await p4;
    assert.deepEqual(fam(), [0, 0]);
  });

 });
}
