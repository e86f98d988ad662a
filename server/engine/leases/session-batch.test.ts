/**
 * A session's batched calls in the engine (session-batch.ts, CONTRACT §20),
 * on both stores, with a manual clock: one step renews many leases (each its
 * own outcome) and keeps the session alive; one step acquires several routes
 * or none.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtureEachTest, rejectsWith } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';
import { rid } from '../../testing/harness';
import { requestDigest } from '../core/ids';
import { recordedText } from '../core/idempotency';
import type { PolicyFields } from '../policies/policies';
import type { AcquireItem, RenewItem } from './session-batch';
import type { HeldLease } from '../core/views';

const NONE: PolicyFields = { ttlMinMs: null, ttlMaxMs: null, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs: null, maxWaiters: null };
const REASON = 'policy change for the batch test';

for (const backend of BACKENDS) {
  describe(`session batches: ${backend} store`, () => {
    const f = fixtureEachTest(backend);

    /** The batch's body digest: what the HTTP layer would compute (the items as given, the session, no request_id). */
    const digestOf = (sessionId: string, items: readonly object[]) => requestDigest({ session_id: sessionId, request_id: 'x', leases: items });
    const renewAll = (sessionId: string, items: RenewItem[], requestId = rid()) =>
      f.engine.sessions.renewAll(f.admin, { sessionId, requestId, digest: digestOf(sessionId, items), items });
    const acquireAll = (sessionId: string, items: AcquireItem[], requestId = rid()) =>
      f.engine.sessions.acquireAll(f.admin, { sessionId, requestId, digest: digestOf(sessionId, items), items });
    const item = (l: HeldLease, ttlMs?: number): RenewItem => ({ route: l.route, leaseId: l.lease_id, fencingToken: l.fencing_token, ...(ttlMs === undefined ? {} : { ttlMs }) });

    test('each item is renewed or lost on its own; the session is kept alive; renewals publish hints and no change', async () => {
      const s = await f.open('fleet', 10_000);
      const a = (await f.acquire('lease://b/r/a', s, { ttlMs: 5_000 })).answer.lease;
      const b = (await f.acquire('lease://b/r/b', s, { ttlMs: 5_000 })).answer.lease;
      const c = (await f.acquire('lease://b/r/c', s, { ttlMs: 5_000 })).answer.lease;
      const changes = f.changes().length;
      f.clock.advance(3_000);
      const { answer, replayed } = await renewAll(s, [item(a, 20_000), { ...item(b), fencingToken: b.fencing_token + 100 }, item(c)]);
      assert.equal(replayed, false);
      assert.deepEqual(answer.results.map((r) => [r.route, r.code]), [['lease://b/r/a', 'lease_renewed'], ['lease://b/r/b', 'lease_lost'], ['lease://b/r/c', 'lease_renewed']]);
      const [ra, , rc] = answer.results;
      assert.ok(ra?.code === 'lease_renewed' && rc?.code === 'lease_renewed');
      assert.equal(Date.parse(ra.lease.expires_at), f.clock.t + 20_000);
      assert.deepEqual([ra.lease.renewal_count, ra.lease.fencing_token, ra.lease.lease_id], [1, a.fencing_token, a.lease_id]);
      assert.equal(Date.parse(rc.lease.expires_at), f.clock.t + 5_000, 'without ttl_ms, the lease’s own TTL');
      assert.equal((await f.engine.leases.inspect(f.admin, 'lease://b/r/b')).lease.renewal_count, 0, 'the lost item changed nothing');
      assert.equal(Date.parse(answer.session.expires_at), f.clock.t + 10_000, 'kept alive as a keepalive would');
      assert.equal(answer.session.lease_count, 3);
      assert.deepEqual(answer.release_requests, []);
      assert.equal(f.changes().length, changes, 'renewals are no change');
      assert.deepEqual(f.events.filter((e) => e.type === 'renewed').map((e) => (e as { route: string }).route), ['lease://b/r/a', 'lease://b/r/c']);
      // The keepalive holds: past the session's first deadline it is still alive.
      f.clock.advance(8_000);
      await f.engine.sweep();
      assert.equal((await f.engine.sessions.keepAlive(f.admin, s)).session.lease_count, 1, 'b and c expired meanwhile (5 s TTL); a (20 s) is held');
    });

    test('a replay answers the same outcomes and changes nothing; other inputs under its request_id are idempotency_conflict', async () => {
      const s = await f.open('fleet', 60_000);
      const a = (await f.acquire('lease://b/p/a', s)).answer.lease;
      const items = [item(a), { route: 'lease://b/p/none', leaseId: 'ls_x', fencingToken: 7 }];
      const requestId = rid();
      const first = await renewAll(s, items, requestId);
      f.clock.advance(1_000);
      const again = await renewAll(s, items, requestId);
      assert.equal(again.replayed, true);
      assert.deepEqual(again.answer.results, first.answer.results);
      assert.deepEqual(again.answer.session, first.answer.session);
      // The record is compact (session-batch.ts, `compactRenewal`); what it answers is the same text, key order included.
      assert.equal(JSON.stringify({ ...again.answer, release_requests: [] }), JSON.stringify({ ...first.answer, release_requests: [] }));
      assert.equal((await f.engine.leases.inspect(f.admin, 'lease://b/p/a')).lease.renewal_count, 1, 'renewed once');
      await rejectsWith(renewAll(s, [item(a, 9_000)], requestId), 'idempotency_conflict');
    });

    test('each route’s policy in force bounds its TTL', async () => {
      await f.engine.policies.set(f.admin, 'lease://short/**', { ...NONE, ttlMaxMs: 5_000 }, REASON);
      await f.engine.policies.set(f.admin, 'lease://long/**', { ...NONE, ttlMinMs: 40_000, ttlMaxMs: 120_000 }, REASON);
      const s = await f.open('fleet', 60_000);
      const short = (await f.acquire('lease://short/a/b', s, { ttlMs: 5_000 })).answer.lease;
      const long = (await f.acquire('lease://long/a/b', s, { ttlMs: 60_000 })).answer.lease;
      const free = (await f.acquire('lease://free/a/b', s, { ttlMs: 60_000 })).answer.lease;
      const { answer } = await renewAll(s, [item(short, 60_000), item(long, 10_000), item(free, 60_000)]);
      assert.deepEqual(
        answer.results.map((r) => (r.code === 'lease_renewed' ? r.lease.ttl_ms : r.code)),
        [5_000, 40_000, 60_000],
      );
    });

    test('a lease found expired is lost and ended as expired; the session count follows', async () => {
      const s = await f.open('fleet', 60_000);
      const a = (await f.acquire('lease://b/e/a', s, { ttlMs: 2_000 })).answer.lease;
      const b = (await f.acquire('lease://b/e/b', s, { ttlMs: 30_000 })).answer.lease;
      f.clock.advance(2_000);
      const { answer } = await renewAll(s, [item(a), item(b)]);
      assert.deepEqual(answer.results.map((r) => r.code), ['lease_lost', 'lease_renewed']);
      assert.equal(answer.session.lease_count, 1);
      assert.deepEqual(f.changes().filter((c) => c.change === 'expired').map((c) => c.route), ['lease://b/e/a']);
    });

    test('the answer’s text, written out lease by lease, is exactly its JSON', async () => {
      const s = await f.open('fleet "é"', 60_000);
      const metadata = { '10': 'ten', '9': 'nine', q: 'say "hi"\n', u: 'é 😀', a: '\u2028', n: -0.5, t: true };
      const m = (await f.acquire('lease://b/j/m', s, { metadata })).answer.lease;
      const r = (await f.acquire('lease://b/j/r', s)).answer.lease;
      const gone = (await f.acquire('lease://b/j/g', s)).answer.lease;
      await f.engine.leases.requestRelease(f.admin, r.route, { requestId: rid(), reason: 'drain "zone" b — é', expectedFencingToken: r.fencing_token, digest: rid() });
      f.clock.advance(1_234);
      const { answer } = await renewAll(s, [item(m, 45_000), item(r), { ...item(gone), leaseId: 'ls_not_it' }]);
      assert.deepEqual(answer.results.map((x) => x.code), ['lease_renewed', 'lease_renewed', 'lease_lost']);
      assert.equal(answer.release_requests.length, 1);
      const text = recordedText(answer);
      assert.ok(text !== undefined, 'the answer carries its text');
      assert.equal(text, JSON.stringify(answer));
    });

    test('the session’s pending release requests are listed, and only its own', async () => {
      const s = await f.open('fleet', 60_000);
      const other = await f.open('other', 60_000);
      const a = (await f.acquire('lease://b/q/a', s)).answer.lease;
      const b = (await f.acquire('lease://b/q/b', s)).answer.lease;
      const o = (await f.acquire('lease://b/q/o', other)).answer.lease;
      for (const l of [b, o]) {
        await f.engine.leases.requestRelease(f.admin, l.route, { requestId: rid(), reason: 'please let go of it now', expectedFencingToken: l.fencing_token, digest: rid() });
      }
      const { answer } = await renewAll(s, [item(a)]);
      assert.deepEqual(answer.release_requests.map((r) => [r.route, r.fencing_token, r.reason]), [['lease://b/q/b', b.fencing_token, 'please let go of it now']]);
      assert.deepEqual((await f.engine.sessions.keepAlive(f.admin, s)).release_requests.map((r) => r.route), ['lease://b/q/b']);
      // Released, its request ends with it.
      await f.engine.leases.release(f.admin, b.route, { sessionId: s, requestId: rid(), leaseId: b.lease_id, fencingToken: b.fencing_token, digest: rid() });
      assert.deepEqual((await renewAll(s, [item(a)])).answer.release_requests, []);
    });

    test('an unknown or closed session is session_not_found for the whole call', async () => {
      const s = await f.open('fleet', 60_000);
      const a = (await f.acquire('lease://b/n/a', s)).answer.lease;
      await rejectsWith(renewAll('ss_unknown', [item(a)]), 'session_not_found');
      await f.engine.sessions.close(f.admin, s);
      await rejectsWith(renewAll(s, [item(a)]), 'session_not_found');
      await rejectsWith(acquireAll(s, [{ route: 'lease://b/n/z', metadata: null }]), 'session_not_found');
    });

    test('an all-or-nothing acquire grants every route, in order, with increasing tokens and one acquired change each', async () => {
      const s = await f.open('fleet', 60_000);
      const items: AcquireItem[] = [
        { route: 'lease://b/all/z', ttlMs: 5_000, metadata: { shard: 1 } },
        { route: 'lease://b/all/a', metadata: null },
        { route: 'lease://b/all/m', maxLifetimeMs: 2_000, metadata: null },
      ];
      const requestId = rid();
      const { answer } = await acquireAll(s, items, requestId);
      assert.deepEqual(answer.leases.map((l) => l.route), items.map((i) => i.route));
      const tokens = answer.leases.map((l) => l.fencing_token);
      assert.ok(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!, `increasing tokens: ${tokens.join(', ')}`);
      assert.deepEqual(answer.leases.map((l) => l.ttl_ms), [5_000, 30_000, 30_000]);
      assert.deepEqual(answer.leases[0]!.metadata, { shard: 1 });
      assert.equal(Date.parse(answer.leases[2]!.expires_at), f.clock.t + 2_000, 'the lifetime caps the first expiry');
      assert.deepEqual(f.changes().map((c) => [c.change, c.route, c.fencingToken]), items.map((i, k) => ['acquired', i.route, tokens[k]]));
      const replay = await acquireAll(s, items, requestId);
      assert.equal(replay.replayed, true);
      assert.deepEqual(replay.answer, answer);
      assert.equal(f.changes().length, 3, 'a replay acquires nothing');
    });

    test('one held route refuses the whole batch: lease_conflict naming it, nothing acquired, no change, no record for the others', async () => {
      const holder = await f.open('holder', 60_000);
      const s = await f.open('fleet', 60_000);
      await f.acquire('lease://b/one/held', holder, { ttlMs: 10_000 });
      f.clock.advance(4_000);
      const changes = f.changes().length;
      const requestId = rid();
      const err = (await rejectsWith(acquireAll(s, [{ route: 'lease://b/one/free', metadata: null }, { route: 'lease://b/one/held', metadata: null }], requestId), 'lease_conflict')) as {
        retryable: boolean;
        retryAfterMs?: number;
        held?: string[];
      };
      assert.deepEqual([err.retryable, err.retryAfterMs, err.held], [true, 6_000, ['lease://b/one/held']]);
      assert.equal(f.changes().length, changes, 'nothing changed');
      await rejectsWith(f.engine.leases.inspect(f.admin, 'lease://b/one/free'), 'lease_not_found');
      // A single acquire of the free route (another request_id) is granted as usual.
      assert.equal((await f.acquire('lease://b/one/free', s)).replayed, false);
      // The refused batch was not recorded: its replay runs again (and is refused again, the route now held by itself).
      const again = (await rejectsWith(acquireAll(s, [{ route: 'lease://b/one/free', metadata: null }, { route: 'lease://b/one/held', metadata: null }], requestId), 'lease_conflict')) as { retryable: boolean; held?: string[] };
      assert.deepEqual([again.retryable, again.held], [false, ['lease://b/one/free', 'lease://b/one/held']], 'a route this session holds: not retryable');
    });

    test('a route in lock-delay counts as held; once the delay ends the batch is granted', async () => {
      await f.engine.policies.set(f.admin, 'lease://delay/**', { ...NONE, lockDelayMs: 5_000 }, REASON);
      const holder = await f.open('holder', 2_000);
      const s = await f.open('fleet', 60_000);
      await f.acquire('lease://delay/a/b', holder, { ttlMs: 30_000 });
      f.clock.advance(2_000); // the holder's session expires: its lease ends without consent, the delay runs 5 s
      const err = (await rejectsWith(acquireAll(s, [{ route: 'lease://b/d/free', metadata: null }, { route: 'lease://delay/a/b', metadata: null }]), 'lease_conflict')) as { retryAfterMs?: number; held?: string[] };
      assert.deepEqual([err.retryAfterMs, err.held], [5_000, ['lease://delay/a/b']]);
      f.clock.advance(5_000);
      const { answer } = await acquireAll(s, [{ route: 'lease://b/d/free', metadata: null }, { route: 'lease://delay/a/b', metadata: null }]);
      assert.deepEqual(answer.leases.map((l) => l.owner_id), ['fleet', 'fleet']);
    });
  });
}
