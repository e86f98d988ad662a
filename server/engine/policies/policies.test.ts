import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { PolicyRow } from '../../store/types';
import { requestDigest } from '../core/ids';
import { PolicyIndex, type PolicyFields } from './policies';
import { fixtureEachTest, proofOf, rejectsWith, until } from '../../testing/engine-fixture';
import { BACKENDS } from '../../testing/pg';
import { rid } from '../../testing/harness';
import { selectorOrThrow as selector } from '@/lib/selector';

const NONE: PolicyFields = { ttlMinMs: null, ttlMaxMs: null, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs: null, maxWaiters: null };
const REASON = 'policy change for the test fleet';

function row(selector: string): PolicyRow {
  return { family: 'f', selector, ...NONE, updatedAt: 0, updatedBy: 't' };
}

describe('the policy index', () => {
  test('a literal beats * beats a position covered by **, left to right', () => {
    const idx = new PolicyIndex(['lease://R/**', 'lease://R/*/*', 'lease://R/**/x', 'lease://R/a/*', 'lease://**', 'lease://*/a/x'].map(row));
    assert.equal(idx.match('lease://R/a/x')?.selector, 'lease://R/a/*');
    assert.equal(idx.match('lease://R/b/x')?.selector, 'lease://R/*/*');
    assert.equal(idx.match('lease://S/a/x')?.selector, 'lease://*/a/x');
    assert.equal(idx.match('lease://S/b/y')?.selector, 'lease://**');
  });

  test('for R/a/x, lease://R/*/* beats lease://R/**/x', () => {
    const idx = new PolicyIndex([row('lease://R/**/x'), row('lease://R/*/*')]);
    assert.equal(idx.match('lease://R/a/x')?.selector, 'lease://R/*/*');
    assert.equal(new PolicyIndex([row('lease://R/**/x')]).match('lease://R/a/x')?.selector, 'lease://R/**/x');
  });

  test('an exact route policy wins and a route nothing matches has none', () => {
    const idx = new PolicyIndex([row('lease://R/a/x'), row('lease://R/**')]);
    assert.equal(idx.match('lease://R/a/x')?.selector, 'lease://R/a/x');
    assert.equal(idx.match('lease://Q/a/x'), undefined);
  });
});

for (const backend of BACKENDS) {
  describe(`policies on the ${backend} store`, () => {
    const f = fixtureEachTest(backend);

    const set = (selector: string, fields: Partial<PolicyFields>) => f.engine.policies.set(f.admin, selector, { ...NONE, ...fields }, REASON);

    test('acquire and renew TTLs are clamped into the bounds and the answer says what was granted', async () => {
      await set('lease://db/**', { ttlMinMs: 5_000, ttlMaxMs: 20_000 });
      const s = await f.open();
      const low = await f.acquire('lease://db/a/one', s, { ttlMs: 1_000 });
      assert.equal(low.answer.lease.ttl_ms, 5_000);
      const high = await f.acquire('lease://db/a/two', s, { ttlMs: 60_000 });
      assert.equal(high.answer.lease.ttl_ms, 20_000);
      assert.equal(Date.parse(high.answer.lease.expires_at) - f.clock.now(), 20_000);
      const r = await f.engine.leases.renew(f.admin, 'lease://db/a/two', { ...proofOf(s, high.answer.lease), ttlMs: 600_000 });
      assert.equal(r.answer.lease.ttl_ms, 20_000);
      // A renew without ttl_ms keeps the lease's TTL, clamped by the policy in force now.
      await set('lease://db/**', { ttlMinMs: 5_000, ttlMaxMs: 10_000 });
      const kept = await f.engine.leases.renew(f.admin, 'lease://db/a/two', proofOf(s, high.answer.lease));
      assert.equal(kept.answer.lease.ttl_ms, 10_000);
      // Outside the policy, the global bounds only.
      const free = await f.acquire('lease://web/a/one', s, { ttlMs: 1_000 });
      assert.equal(free.answer.lease.ttl_ms, 1_000);
    });

    test('an acquire without ttl_ms gets the most specific policy default, else 30 s clamped into the bounds', async () => {
      await set('lease://**', { ttlDefaultMs: 45_000 });
      await set('lease://db/*/*', { ttlDefaultMs: 12_000 });
      await set('lease://batch/**', { ttlMinMs: 40_000 });
      const s = await f.open();
      const db = await f.acquire('lease://db/a/x', s, { ttlMs: undefined });
      assert.equal(db.answer.lease.ttl_ms, 12_000);
      const other = await f.acquire('lease://web/a/x', s, { ttlMs: undefined });
      assert.equal(other.answer.lease.ttl_ms, 45_000);
      const batch = await f.acquire('lease://batch/a/x', s, { ttlMs: undefined });
      assert.equal(batch.answer.lease.ttl_ms, 40_000);
    });

    test('max_lifetime_ms is the default and the cap of a lease lifetime', async () => {
      await set('lease://jobs/**', { maxLifetimeMs: 120_000 });
      const s = await f.open();
      const asked = await f.acquire('lease://jobs/a/one', s, { maxLifetimeMs: 3_600_000 });
      assert.equal(Date.parse(asked.answer.lease.max_expires_at) - f.clock.now(), 120_000);
      const dflt = await f.acquire('lease://jobs/a/two', s, { maxLifetimeMs: undefined });
      assert.equal(Date.parse(dflt.answer.lease.max_expires_at) - f.clock.now(), 120_000);
      const shorter = await f.acquire('lease://jobs/a/three', s, { maxLifetimeMs: 60_000 });
      assert.equal(Date.parse(shorter.answer.lease.max_expires_at) - f.clock.now(), 60_000);
    });

    test('max_waiters refuses the next waiting acquire with rate_limited; 0 allows no waiting', async () => {
      await set('lease://q/**', { maxWaiters: 1 });
      const R1 = 'lease://q/a/x';
      const holder = await f.open('holder');
      await f.acquire(R1, holder);
      const w1 = f.acquire(R1, await f.open('w1'), { waitMs: 5_000 });
      await until(f, () => f.engine.stats.waiters() === 1);
      assert.equal(f.engine.stats.waiters(), 1);
      await rejectsWith(f.acquire(R1, await f.open('w2'), { waitMs: 5_000 }), 'rate_limited');
      await set('lease://q/b/*', { maxWaiters: 0 });
      await f.acquire('lease://q/b/y', holder);
      await rejectsWith(f.acquire('lease://q/b/y', await f.open('w3'), { waitMs: 5_000 }), 'rate_limited');
      const h = await f.engine.leases.inspect(f.admin, R1);
      await f.engine.operators.forceRelease(f.admin, R1, { requestId: rid(), reason: REASON, expectedFencingToken: h.lease.fencing_token, digest: requestDigest({ r: rid() }) });
      assert.equal((await w1).answer.lease.owner_id, 'w1');
    });

    test('inconsistent or out-of-range bounds are invalid_request and store nothing', async () => {
      await rejectsWith(set('lease://a/**', { ttlMinMs: 20_000, ttlMaxMs: 10_000 }), 'invalid_request');
      await rejectsWith(set('lease://a/**', { ttlMinMs: 5_000, ttlDefaultMs: 2_000 }), 'invalid_request');
      await rejectsWith(set('lease://a/**', { lockDelayMs: 60_001 }), 'invalid_request');
      await rejectsWith(set('lease://a/**', { maxWaiters: 1_025 }), 'invalid_request');
      await rejectsWith(set('lease://a/**', { ttlMaxMs: 600_001 }), 'invalid_request');
      await rejectsWith(set('lease://a/**/**', {}), 'invalid_selector');
      assert.deepEqual((await f.engine.policies.list(f.admin, selector('lease://**'))).items, []);
    });

    test('a selector is the identity: set replaces it, delete of a missing one is not_found, both audited', async () => {
      await set('lease://a/**', { lockDelayMs: 1_000 });
      await set('lease://a/**', { lockDelayMs: 2_000 });
      await set('lease://a/*/*', { lockDelayMs: 3_000 });
      const items = (await f.engine.policies.list(f.admin, selector('lease://a/**'))).items;
      assert.deepEqual(items.map((p) => [p.selector, p.lock_delay_ms]), [['lease://a/**', 2_000], ['lease://a/*/*', 3_000]]);
      assert.deepEqual((await f.engine.policies.list(f.admin, selector('lease://b/**'))).items, []);
      await f.engine.policies.delete(f.admin, 'lease://a/*/*', REASON);
      await rejectsWith(f.engine.policies.delete(f.admin, 'lease://a/*/*', REASON), 'not_found');
      const eff = await f.engine.policies.effective(f.admin, 'lease://a/b/c');
      assert.equal(eff.policy?.selector, 'lease://a/**');
      assert.equal(eff.limits.lock_delay_ms, 2_000);
      const audit = await f.engine.audit.list(f.admin, { selector: selector('lease://**'), limit: 50 });
      assert.deepEqual(
        audit.items.filter((e) => e.event_type.startsWith('policy_')).map((e) => [e.event_type, e.result]),
        [['policy_delete', 'not_found'], ['policy_delete', 'policy_deleted'], ['policy_set', 'policy_set'], ['policy_set', 'policy_set'], ['policy_set', 'policy_set']],
      );
    });

    test('a policy change is audited with the reason verbatim, the selector as its route and the values in details; each selector finds only its own', async () => {
      const values = (v: Partial<Record<string, number>>) => ({ ttl_min_ms: null, ttl_max_ms: null, ttl_default_ms: null, max_lifetime_ms: null, lock_delay_ms: null, max_waiters: null, ...v });
      await set('lease://a/**', { lockDelayMs: 1_000, ttlMaxMs: 20_000 });
      await set('lease://a/*/*', { lockDelayMs: 3_000 });
      await set('lease://a/b/*', { maxWaiters: 4 });
      await set('lease://a/b/c', { lockDelayMs: 7 });
      await f.engine.policies.delete(f.admin, 'lease://a/*/*', REASON);
      await rejectsWith(f.engine.policies.delete(f.admin, 'lease://a/*/*', REASON), 'not_found');
      // A lease event on a route every selector above covers.
      await f.acquire('lease://a/b/x', await f.open());
      type Ev = Awaited<ReturnType<typeof f.engine.audit.list>>['items'][number];
      const audit = async (sel: string, eventType?: Ev['event_type']) => (await f.engine.audit.list(f.admin, { selector: selector(sel), eventType, limit: 50 })).items;
      const policyEvents = (items: Ev[]) => items.filter((e) => e.event_type.startsWith('policy_')).map((e) => [e.event_type, e.route, e.result]);

      const all = (await audit('lease://**')).filter((e) => e.event_type.startsWith('policy_'));
      assert.equal(all.length, 6);
      for (const e of all) assert.equal(e.reason, REASON, 'the caller’s reason, verbatim');
      assert.deepEqual(
        all.map((e) => [e.event_type, e.route, e.result, e.details]),
        [
          ['policy_delete', 'lease://a/*/*', 'not_found', undefined],
          ['policy_delete', 'lease://a/*/*', 'policy_deleted', values({ lock_delay_ms: 3_000 })],
          ['policy_set', 'lease://a/b/c', 'policy_set', values({ lock_delay_ms: 7 })],
          ['policy_set', 'lease://a/b/*', 'policy_set', values({ max_waiters: 4 })],
          ['policy_set', 'lease://a/*/*', 'policy_set', values({ lock_delay_ms: 3_000 })],
          ['policy_set', 'lease://a/**', 'policy_set', values({ lock_delay_ms: 1_000, ttl_max_ms: 20_000 })],
        ],
      );

      // A selector finds its own policy's events, not another selector's (same triple, wider or narrower), nor a route's lease events under another selector.
      const a = await audit('lease://a/**');
      assert.deepEqual(policyEvents(a), [['policy_set', 'lease://a/b/c', 'policy_set'], ['policy_set', 'lease://a/**', 'policy_set']], 'an exact-route policy is a route: found by the selectors containing it');
      assert.ok(a.some((e) => e.event_type === 'lease_acquire' && e.route === 'lease://a/b/x'), 'the lease events under it still match');
      assert.deepEqual(policyEvents(await audit('lease://a/*/*')), [
        ['policy_delete', 'lease://a/*/*', 'not_found'],
        ['policy_delete', 'lease://a/*/*', 'policy_deleted'],
        ['policy_set', 'lease://a/b/c', 'policy_set'],
        ['policy_set', 'lease://a/*/*', 'policy_set'],
      ]);
      assert.deepEqual(policyEvents(await audit('lease://a/b/*')), [['policy_set', 'lease://a/b/c', 'policy_set'], ['policy_set', 'lease://a/b/*', 'policy_set']]);
      assert.deepEqual(policyEvents(await audit('lease://a/b/c')), [['policy_set', 'lease://a/b/c', 'policy_set']]);
      assert.deepEqual(policyEvents(await audit('lease://a/b/x')), []);
      assert.deepEqual(policyEvents(await audit('lease://*/b/*')), [['policy_set', 'lease://a/b/c', 'policy_set']], 'a wider selector does not find lease://a/b/*');
      // By type too (the rare-type index).
      assert.deepEqual((await audit('lease://a/**', 'policy_set')).map((e) => e.route), ['lease://a/b/c', 'lease://a/**']);
      assert.deepEqual((await audit('lease://a/*/*', 'policy_delete')).map((e) => [e.route, e.result]), [['lease://a/*/*', 'not_found'], ['lease://a/*/*', 'policy_deleted']]);
    });

    test('a family holds at most 1,000 policies; the next is rate_limited, replacing one is not', async () => {
      for (let i = 0; i < 1_000; i++) await f.engine.policies.set(f.admin, `lease://r${i}/**`, NONE, REASON);
      await rejectsWith(set('lease://more/**', {}), 'rate_limited');
      await set('lease://r7/**', { lockDelayMs: 5 });
    });

    // ---- lock-delay ---------------------------------------------------------

    const R = 'lease://db/primary/main';

    async function held(sessionTtlMs = 10_000) {
      const s = await f.open('holder', sessionTtlMs);
      const a = await f.acquire(R, s, { ttlMs: 5_000 });
      return { s, lease: a.answer.lease };
    }

    async function refusedUntil(): Promise<number> {
      const other = await f.open('other');
      const e = (await rejectsWith(f.acquire(R, other), 'lease_conflict')) as { retryAfterMs?: number; lockDelayUntil?: number };
      assert.ok(e.lockDelayUntil !== undefined, 'refused by lock-delay');
      assert.equal(e.retryAfterMs, e.lockDelayUntil - f.clock.now());
      return e.lockDelayUntil;
    }

    async function acquirable(): Promise<void> {
      const other = await f.open('next');
      const a = await f.acquire(R, other);
      assert.equal(a.answer.lease.owner_id, 'next');
    }

    test('an expired lease starts the delay from its deadline; inspect shows it; it ends after lock_delay_ms', async () => {
      await set('lease://db/**', { lockDelayMs: 3_000 });
      const { lease } = await held();
      f.clock.advance(5_500);
      const until = await refusedUntil();
      assert.equal(until, Date.parse(lease.expires_at) + 3_000);
      const e = (await rejectsWith(f.engine.leases.inspect(f.admin, R), 'lease_not_found')) as { lockDelayUntil?: number };
      assert.equal(e.lockDelayUntil, until);
      f.clock.advance(2_500);
      await acquirable();
    });

    test('force-release, revoke and an expired or operator-closed session start the delay', async () => {
      await set('lease://db/**', { lockDelayMs: 2_000 });
      for (const end of ['force', 'revoke', 'session-expired', 'revoke-close']) {
        // The session's deadline comes first in the session-expired case.
        const { lease } = await held(end === 'session-expired' ? 2_000 : 10_000);
        const forceBody = { requestId: rid(), reason: REASON, expectedFencingToken: lease.fencing_token, digest: requestDigest({ end, r: rid() }) };
        if (end === 'force') await f.engine.operators.forceRelease(f.admin, R, forceBody);
        else if (end === 'revoke') await f.engine.operators.revoke(f.admin, R, { ...forceBody, closeSession: false });
        else if (end === 'revoke-close') {
          // The holder's other lease ends session_closed, by an operator: delayed too.
          await f.engine.operators.revoke(f.admin, R, { ...forceBody, closeSession: true });
        } else f.clock.advance(2_001);
        const until = await refusedUntil();
        assert.ok(until > f.clock.now(), end);
        f.clock.advance(2_000);
        await acquirable();
        const cur = await f.engine.leases.inspect(f.admin, R);
        await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: cur.lease.fencing_token, digest: requestDigest({ r: rid() }), lockDelayMs: 0 });
      }
    });

    test('a session that expired unnoticed starts the delay from its own deadline, not from when the expiry is processed', async () => {
      await set('lease://db/**', { lockDelayMs: 4_000 });
      // The session's deadline (2 s) comes before the lease's (5 s); nothing looks at the route until 3.5 s later.
      const s = await f.open('holder', 2_000);
      await f.acquire(R, s, { ttlMs: 5_000 });
      const sessionDeadline = f.clock.now() + 2_000;
      f.clock.advance(3_500);
      const until = await refusedUntil();
      assert.equal(until, sessionDeadline + 4_000);
      f.clock.advance(until - f.clock.now());
      await acquirable();
    });

    test('revoke with close_session delays the session’s other routes too', async () => {
      await set('lease://db/**', { lockDelayMs: 2_000 });
      const s = await f.open('holder');
      const a = await f.acquire(R, s);
      await f.acquire('lease://db/replica/one', s);
      await f.engine.operators.revoke(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: a.answer.lease.fencing_token, digest: requestDigest({ r: rid() }), closeSession: true });
      await rejectsWith(f.acquire('lease://db/replica/one', await f.open('x')), 'lease_conflict');
    });

    test('a voluntary release or the holder closing its own session has no delay', async () => {
      await set('lease://db/**', { lockDelayMs: 30_000 });
      const a = await held();
      await f.engine.leases.release(f.admin, R, proofOf(a.s, a.lease));
      await acquirable();
      const cur = await f.engine.leases.inspect(f.admin, R);
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: cur.lease.fencing_token, digest: requestDigest({ r: rid() }), lockDelayMs: 0 });
      const b = await held();
      await f.engine.sessions.close(f.admin, b.s);
      await acquirable();
    });

    test('without a delay policy every end kind frees the route at once', async () => {
      const a = await held();
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: a.lease.fencing_token, digest: requestDigest({ r: rid() }) });
      await acquirable();
      f.clock.advance(30_001);
      await acquirable();
    });

    test('an operator shortens or skips the delay, and the choice is in the audit event', async () => {
      await set('lease://db/**', { lockDelayMs: 10_000 });
      const a = await held();
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: a.lease.fencing_token, digest: requestDigest({ r: rid() }), lockDelayMs: 1_000 });
      assert.equal(await refusedUntil(), f.clock.now() + 1_000);
      f.clock.advance(1_000);
      const other = await f.open('o2');
      const b = await f.acquire(R, other);
      await f.engine.operators.revoke(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: b.answer.lease.fencing_token, digest: requestDigest({ r: rid() }), lockDelayMs: 0, closeSession: false });
      await acquirable();
      // Never lengthened: a cap above the policy keeps the policy's delay.
      const c = await f.engine.leases.inspect(f.admin, R);
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: c.lease.fencing_token, digest: requestDigest({ r: rid() }), lockDelayMs: 60_000 });
      assert.equal(await refusedUntil(), f.clock.now() + 10_000);
      await f.engine.audit.flush();
      const audit = await f.engine.audit.list(f.admin, { selector: selector('lease://**'), limit: 50 });
      const ops = audit.items.filter((e) => e.event_type === 'lease_force_release' || e.event_type === 'lease_revoke');
      assert.ok(ops.every((e) => e.reason === REASON), 'the reason is the operator’s, verbatim');
      const caps = ops.map((e) => e.details?.lock_delay_ms);
      assert.ok(caps.includes(0) && caps.includes(1000), JSON.stringify(caps));
    });

    test('a queued waiter is granted when the delay ends, by the sweep, in queue order', async () => {
      await set('lease://db/**', { lockDelayMs: 2_000 });
      const a = await held();
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: a.lease.fencing_token, digest: requestDigest({ r: rid() }) });
      const w1 = f.acquire(R, await f.open('w1'), { waitMs: 30_000 });
      await until(f, () => f.engine.stats.waiters() === 1);
      assert.equal(f.engine.stats.waiters(), 1);
      const w2 = f.acquire(R, await f.open('w2'), { waitMs: 30_000 });
      await until(f, () => f.engine.stats.waiters() === 2);
      assert.equal(f.engine.stats.waiters(), 2);
      f.clock.advance(1_999);
      await f.engine.sweep();
      assert.equal(f.engine.stats.waiters(), 2, 'nobody granted before the delay ends');
      f.clock.advance(1);
      await f.engine.sweep();
      const g = await w1;
      assert.deepEqual([g.answer.queued, g.answer.lease.owner_id], [true, 'w1']);
      assert.equal(f.engine.stats.waiters(), 1);
      void w2.catch(() => undefined);
    });

    test('a delay survives a restart and still holds the route', async () => {
      await set('lease://db/**', { lockDelayMs: 5_000 });
      const a = await held();
      await f.engine.operators.forceRelease(f.admin, R, { requestId: rid(), reason: REASON, expectedFencingToken: a.lease.fencing_token, digest: requestDigest({ r: rid() }) });
      const until = f.clock.now() + 5_000;
      await f.restart();
      assert.equal(await refusedUntil(), until);
      f.clock.advance(5_000);
      await acquirable();
    });

    test('a policy change applies from the next step', async () => {
      const s = await f.open();
      assert.equal((await f.acquire('lease://c/a/1', s, { ttlMs: 50_000 })).answer.lease.ttl_ms, 50_000);
      await set('lease://c/**', { ttlMaxMs: 10_000 });
      assert.equal((await f.acquire('lease://c/a/2', s, { ttlMs: 50_000 })).answer.lease.ttl_ms, 10_000);
      await f.engine.policies.delete(f.admin, 'lease://c/**', REASON);
      assert.equal((await f.acquire('lease://c/a/3', s, { ttlMs: 50_000 })).answer.lease.ttl_ms, 50_000);
    });
  });
}

