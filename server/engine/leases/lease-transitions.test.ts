/**
 * The two transition functions (docs/design.md "Lease and waiter
 * transitions"), as pure functions: every action from every state it applies
 * to, and the moves they refuse. Time is a number passed in; nothing here
 * touches a store or a timer. The same transitions on both stores, through
 * the engine, are the engine suites' (leases, waiters, policies, …).
 */

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { millis, type Millis } from '../../store/millis';
import type { LeaseRow } from '../../store/types';
import { IllegalLeaseTransition, leaseTransition, type AcquireAction, type LeaseEnd } from './lease-transitions';
import { leaseView } from '../core/views';
import { IllegalWaiterTransition, transitionWaiter, type WaiterState } from '../waiters/waiters';

const T0 = millis(1_700_000_000_000);
const at = (ms: number): Millis => millis(T0 + ms);

function acquire(over: Partial<AcquireAction> = {}, terms: Partial<AcquireAction['terms']> = {}): AcquireAction {
  return {
    type: 'acquire',
    revision: 7,
    leaseId: 'ls_one',
    terms: { family: 'acme', route: 'lease://acme/jobs/1', ttlMs: 30_000, maxLifetimeMs: 3_600_000, metadata: null, ...terms },
    session: { idHash: 'sess-hash', ownerId: 'worker-1', incarnation: 'inc-1' },
    queued: false,
    waiters: 0,
    ...over,
  };
}

/** A lease acquired at T0 with a 30 s TTL and a 100 s max lifetime. */
function held(over: Partial<LeaseRow> = {}): LeaseRow {
  return { ...leaseTransition(undefined, acquire({}, { maxLifetimeMs: 100_000 }), T0).row, ...over };
}

const ENDS: readonly LeaseEnd[] = ['released', 'expired', 'session_closed', 'force_released', 'revoked', 'rolled_back'];

describe('leaseTransition', () => {
  test('acquire: a new row whose token is the revision, expiring after its TTL, and an `acquired` change with its view', () => {
    const action = acquire({ queued: true, waiters: 2 }, { metadata: { job: 'nightly', n: 3 } });
    const { row, event } = leaseTransition(undefined, action, at(5));
    assert.deepEqual(row, {
      family: 'acme',
      route: 'lease://acme/jobs/1',
      leaseId: 'ls_one',
      fencingToken: 7,
      sessionHash: 'sess-hash',
      ownerId: 'worker-1',
      incarnation: 'inc-1',
      acquiredAt: at(5),
      renewedAt: at(5),
      expiresAt: at(30_005),
      maxExpiresAt: at(3_600_005),
      ttlMs: 30_000,
      renewalCount: 0,
      revision: 7,
      metadata: '{"job":"nightly","n":3}',
    });
    assert.deepEqual(event, {
      type: 'change',
      family: 'acme',
      route: 'lease://acme/jobs/1',
      change: 'acquired',
      revision: 7,
      fencingToken: 7,
      queued: true,
      lease: leaseView(row, at(5), 2),
    });
    assert.equal('lease_id' in event.lease, false, 'observers never see the lease_id');
    assert.equal(event.lease.waiters, 2);
    assert.deepEqual(event.lease.metadata, { job: 'nightly', n: 3 });
  });

  test('acquire: the first expiry is capped by the max lifetime', () => {
    const { row } = leaseTransition(undefined, acquire({}, { ttlMs: 60_000, maxLifetimeMs: 10_000 }), T0);
    assert.equal(row.expiresAt, at(10_000));
    assert.equal(row.maxExpiresAt, at(10_000));
    assert.equal(row.ttlMs, 60_000, 'the granted TTL is kept for later renewals');
  });

  test('acquire on a held route is refused', () => {
    assert.throws(() => leaseTransition(held(), acquire(), at(1)), IllegalLeaseTransition);
  });

  test('renew: a new expiry from now, renewal_count + 1, same token and lease_id; a `renewed` event', () => {
    const l = held();
    const { row, event } = leaseTransition(l, { type: 'renew', ttlMs: 20_000 }, at(10_000));
    assert.deepEqual(row, { ...l, renewedAt: at(10_000), expiresAt: at(30_000), ttlMs: 20_000, renewalCount: 1 });
    assert.deepEqual(event, { type: 'renewed', family: l.family, route: l.route, expiresAt: at(30_000), renewalCount: 1 });
    assert.equal(l.renewalCount, 0, 'the current row is not changed');
    const again = leaseTransition(row, { type: 'renew', ttlMs: 20_000 }, at(20_000));
    assert.deepEqual([again.row.renewalCount, again.row.fencingToken, again.row.leaseId, again.row.acquiredAt], [2, l.fencingToken, l.leaseId, T0]);
  });

  test('renew: the new expiry never passes the max lifetime', () => {
    // Renewed until 95 s; at 90 s a 30 s TTL would run to 120 s.
    const l = held({ expiresAt: at(95_000) });
    const { row } = leaseTransition(l, { type: 'renew', ttlMs: 30_000 }, at(90_000));
    assert.equal(row.expiresAt, l.maxExpiresAt);
    assert.equal(row.expiresAt, at(100_000));
  });

  test('renew keeps a pending release request (it ends with the lease only)', () => {
    const l = held({ releaseRequest: '{"at":1,"reason":"deploy","token_id":"tk_1"}' });
    assert.equal(leaseTransition(l, { type: 'renew', ttlMs: 30_000 }, at(1)).row.releaseRequest, l.releaseRequest);
  });

  test('renew of a free route or of a lease past its deadline is refused', () => {
    assert.throws(() => leaseTransition(undefined, { type: 'renew', ttlMs: 1_000 }, at(1)), IllegalLeaseTransition);
    assert.throws(() => leaseTransition(held(), { type: 'renew', ttlMs: 1_000 }, at(30_000)), IllegalLeaseTransition);
  });

  test('request_release: the request stored in the row, a `release_requested` event, nothing else changed', () => {
    const l = held();
    const { row, event } = leaseTransition(l, { type: 'request_release', reason: 'deploy', tokenId: 'tk_9' }, at(2_000));
    assert.deepEqual(row, { ...l, releaseRequest: JSON.stringify({ at: at(2_000), reason: 'deploy', token_id: 'tk_9' }) });
    assert.deepEqual(event, { type: 'release_requested', family: l.family, route: l.route, fencingToken: l.fencingToken, reason: 'deploy', requestedAt: at(2_000) });
    const newer = leaseTransition(row, { type: 'request_release', reason: 'drain', tokenId: 'tk_2' }, at(3_000));
    assert.equal(JSON.parse(newer.row.releaseRequest!).reason, 'drain', 'the newest request replaces an earlier one');
  });

  test('request_release on a free route or an expired lease is refused', () => {
    assert.throws(() => leaseTransition(undefined, { type: 'request_release', reason: 'x', tokenId: 't' }, at(1)), IllegalLeaseTransition);
    assert.throws(() => leaseTransition(held(), { type: 'request_release', reason: 'x', tokenId: 't' }, at(30_000)), IllegalLeaseTransition);
  });

  for (const kind of ENDS) {
    test(`${kind}: the row ends, one change of that kind naming the token and the former holder`, () => {
      const l = held();
      // Only `expired` needs the deadline to have come; the others end a live lease.
      const now = kind === 'expired' ? l.expiresAt : at(1_000);
      const { row, event } = leaseTransition(l, { type: kind, revision: 12 }, now);
      assert.equal(row, null);
      assert.deepEqual(event, {
        type: 'change',
        family: l.family,
        route: l.route,
        change: kind,
        revision: 12,
        fencingToken: l.fencingToken,
        ownerId: 'worker-1',
        incarnation: 'inc-1',
      });
    });

    test(`${kind} of a free route is refused`, () => {
      assert.throws(() => leaseTransition(undefined, { type: kind, revision: 12 }, at(1)), IllegalLeaseTransition);
    });
  }

  test('every end also applies to a lease past its deadline (whichever end is processed first)', () => {
    for (const kind of ENDS) assert.equal(leaseTransition(held(), { type: kind, revision: 3 }, at(60_000)).row, null);
  });

  test('expired before the deadline is refused', () => {
    const l = held();
    assert.throws(() => leaseTransition(l, { type: 'expired', revision: 3 }, millis(l.expiresAt - 1)), IllegalLeaseTransition);
  });
});

describe('transitionWaiter', () => {
  const STATES: readonly WaiterState[] = ['waiting', 'claimed', 'done'];
  const ALLOWED = new Set(['waiting→claimed', 'claimed→waiting', 'waiting→done', 'claimed→done']);

  for (const from of STATES) {
    for (const to of STATES) {
      const move = `${from}→${to}`;
      if (ALLOWED.has(move)) {
        test(`${move} is allowed`, () => {
          const w = { state: from };
          transitionWaiter(w, to);
          assert.equal(w.state, to);
        });
      } else {
        test(`${move} is refused and changes nothing`, () => {
          const w = { state: from };
          assert.throws(() => transitionWaiter(w, to), IllegalWaiterTransition);
          assert.equal(w.state, from);
        });
      }
    }
  }

  test('a whole life: queued, claimed for a grant, put back (failed step), claimed again, answered', () => {
    const w: { state: WaiterState } = { state: 'waiting' };
    for (const to of ['claimed', 'waiting', 'claimed', 'done'] as const) transitionWaiter(w, to);
    assert.equal(w.state, 'done');
    assert.throws(() => transitionWaiter(w, 'done'), IllegalWaiterTransition, 'done is final');
  });
});
