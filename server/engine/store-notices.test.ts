/**
 * What the engine does with what its store says outside any step
 * (StoreNotice, CONTRACT §19 "A failure answer is the truth"): changes the
 * store applied that no step published resync every stream, and while the
 * store refuses writes (a full disk) the audit trail is still read, as
 * stored, and inspect and LIST leave out what fell due without ending it.
 * The store here is the real SQLite store behind a thin wrapper that
 * plays the notices and the refusals.
 */

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorOrThrow } from '@/lib/selector';
import { StoreUnavailableError, type Store, type StoreNotice, type Tx, type WriteFault } from '../store/types';
import { engineFixture, rejectsWith, type EngineFixture } from '../testing/engine-fixture';
import { RecordingSink } from '../testing/feed-sink';

/** What a step may not call while the store refuses writes (here: the writes of ending leases and sessions, and audit). */
const WRITES = new Set<string | symbol>(['insertAudit', 'deleteLease', 'bumpRevision', 'deleteSession', 'setSessionExpiry', 'setSessionEnding', 'insertLease']);

/**
 * The real store, with notices sent by the test and (while `fault` is set)
 * writes refused as a full disk refuses them. `refuseNextBatch` plays the
 * SQLite store's failed group commit: the next step is refused with the
 * batch it shared (as a read after a write the disk refused is), and from
 * then on the store refuses writes (unless `refusalKeepsWrites`).
 */
function playing(state: { fault?: WriteFault; listener?: (n: StoreNotice) => void; refuseNextBatch?: boolean; refusalKeepsWrites?: boolean }) {
  return (inner: Store): Store => ({
    kind: inner.kind,
    now: () => inner.now(),
    epoch: () => inner.epoch(),
    queueDelayMs: (family) => inner.queueDelayMs(family),
    close: () => inner.close(),
    writeFault: () => state.fault,
    subscribe: (l) => {
      state.listener = l;
      return () => (state.listener = undefined);
    },
    atomic: (fn, scope) => {
      if (state.refuseNextBatch) {
        state.refuseNextBatch = false;
        if (!state.refusalKeepsWrites) state.fault = 'no_space';
        return Promise.reject(new StoreUnavailableError('injected: its batch was refused for space', false));
      }
      return inner.atomic(
        (tx) =>
          fn(
            state.fault === undefined
              ? tx
              : (new Proxy(tx, {
                  get: (t, k) => (WRITES.has(k) ? () => Promise.reject(new StoreUnavailableError('injected: no space', false)) : Reflect.get(t, k)),
                }) as Tx),
          ),
        scope,
      );
    },
  });
}

const fixtures: EngineFixture[] = [];
after(async () => {
  for (const f of fixtures) await f.close();
});

test('changes the store applied without publishing them send every stream resync', async () => {
  const state: Parameters<typeof playing>[0] = {};
  const f = await engineFixture({}, playing(state));
  fixtures.push(f);
  const a = new RecordingSink();
  const b = new RecordingSink();
  f.engine.parts.feed.open({ tokenId: 'tk_a', family: 'default', expiresAt: null }, [selectorOrThrow('lease://**')], false, a, 0);
  f.engine.parts.feed.open({ tokenId: 'tk_b', family: 'other', expiresAt: null }, [selectorOrThrow('lease://**')], false, b, 0);
  state.listener!({ type: 'writes_refused', fault: 'no_space', message: 'injected' });
  assert.deepEqual([a.ended, b.ended], [undefined, undefined], 'refused writes change nothing: no resync');
  state.listener!({ type: 'unpublished' });
  for (const s of [a, b]) assert.deepEqual([s.ended?.event, s.ended?.json], ['overflow', JSON.stringify({ reason: 'resync' })]);
});

test('while the store refuses writes, the audit trail is read as stored; the buffered events wait for room', async () => {
  const state: Parameters<typeof playing>[0] = {};
  const f = await engineFixture({}, playing(state));
  fixtures.push(f);
  const all = selectorOrThrow('lease://**');
  await f.open('before');
  const stored = (await f.engine.audit.list(f.admin, { selector: all, limit: 100 })).items.filter((e) => e.event_type === 'session_open');
  assert.deepEqual(stored.map((e) => e.owner_id), ['before']);
  state.fault = 'no_space';
  await f.open('while-full');
  const read = (await f.engine.audit.list(f.admin, { selector: all, limit: 100 })).items.filter((e) => e.event_type === 'session_open');
  assert.deepEqual(read.map((e) => e.owner_id), ['before'], 'answered from what is stored');
  state.fault = undefined;
  const later = (await f.engine.audit.list(f.admin, { selector: all, limit: 100 })).items.filter((e) => e.event_type === 'session_open');
  assert.deepEqual(later.map((e) => e.owner_id), ['while-full', 'before'], 'written once there is room');
});

test('while the store refuses writes, inspect and LIST leave out what fell due instead of ending it', async () => {
  const state: Parameters<typeof playing>[0] = {};
  const f = await engineFixture({}, playing(state));
  fixtures.push(f);
  const live = await f.open('live', 60_000);
  const brief = await f.open('brief', 2_000);
  await f.acquire('lease://ro/a/lapsed', live, { ttlMs: 5_000 });
  await f.acquire('lease://ro/a/held', live, { ttlMs: 60_000 });
  await f.acquire('lease://ro/a/orphaned', brief, { ttlMs: 60_000 });
  f.clock.advance(6_000);
  state.fault = 'no_space';
  await rejectsWith(f.engine.leases.inspect(f.admin, 'lease://ro/a/lapsed'), 'lease_not_found');
  await rejectsWith(f.engine.leases.inspect(f.admin, 'lease://ro/a/orphaned'), 'lease_not_found');
  assert.equal((await f.engine.leases.inspect(f.admin, 'lease://ro/a/held')).lease.route, 'lease://ro/a/held');
  const page = await f.engine.leases.list(f.admin, selectorOrThrow('lease://ro/**'), { limit: 100 });
  assert.deepEqual(page.items.map((l) => l.route), ['lease://ro/a/held']);
  assert.deepEqual(f.changes().filter((c) => c.change !== 'acquired'), [], 'nothing was ended while writes were refused');
  state.fault = undefined;
  await rejectsWith(f.engine.leases.inspect(f.admin, 'lease://ro/a/lapsed'), 'lease_not_found');
  assert.deepEqual(f.changes().filter((c) => c.change === 'expired').map((c) => c.route), ['lease://ro/a/lapsed'], 'ended once writes are taken');
});

test('a read refused with its batch when the disk filled runs again, read-only, and answers', async () => {
  const state: Parameters<typeof playing>[0] = {};
  const f = await engineFixture({}, playing(state));
  fixtures.push(f);
  const route = 'lease://ro/b/held';
  const session = await f.open('reader', 60_000);
  const { lease } = (await f.acquire(route, session, { ttlMs: 60_000 })).answer;
  await f.engine.leases.writeCheckpoint(f.admin, route, { sessionId: session, leaseId: lease.lease_id, fencingToken: lease.fencing_token, requestId: 'cp-1', digest: 'cp-1', value: '{"n":1}' });
  await f.engine.audit.list(f.admin, { selector: selectorOrThrow('lease://**'), limit: 1 }); // the audit buffer is written: the next read is one step
  const reads: Array<[string, () => Promise<unknown>, (v: unknown) => unknown]> = [
    ['inspect', () => f.engine.leases.inspect(f.admin, route), (v) => (v as { lease: { route: string } }).lease.route],
    ['list', () => f.engine.leases.list(f.admin, selectorOrThrow('lease://ro/**'), { limit: 10 }), (v) => (v as { items: Array<{ route: string }> }).items.map((l) => l.route).join()],
    ['checkpoint', () => f.engine.leases.readCheckpoint(f.admin, route), (v) => (v as { checkpoint: { route: string } }).checkpoint.route],
    ['audit', () => f.engine.audit.list(f.admin, { selector: selectorOrThrow(route), limit: 10 }), (v) => ((v as { items: unknown[] }).items.length > 0 ? route : 'no events')],
  ];
  for (const [what, read, seen] of reads) {
    state.fault = undefined;
    state.refuseNextBatch = true;
    assert.equal(seen(await read()), route, `${what}: answered by the read-only run`);
    assert.equal(state.fault, 'no_space', `${what}: the refusal was played`);
  }
  // A refusal while the store still takes writes is no full disk: it is the answer, not run again.
  state.fault = undefined;
  state.refuseNextBatch = true;
  state.refusalKeepsWrites = true;
  await rejectsWith(f.engine.leases.inspect(f.admin, route), 'backend_unavailable');
  assert.equal(state.refuseNextBatch, false, 'played once');
});
