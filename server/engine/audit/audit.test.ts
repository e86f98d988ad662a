import { type Millis } from '../../store/millis';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelector } from '@/lib/selector';
import { StoreUnavailableError, type Store, type Tx } from '../../store/types';
import { engineFixture, proofOf, rejectsWith, until, type EngineFixture } from '../../testing/engine-fixture';
import { ALL_SEL, allEvents, forceBody, REASON, sessionEvent } from './audit-fixtures';
import { BACKENDS } from '../../testing/pg';
import { rid } from '../../testing/harness';
import { requestDigest } from '../core/ids';
import type { HeldLease } from '../core/views';

// The same behaviour on every store backend (the conformance suite).
for (const backend of BACKENDS) {
 describe(`${backend} store`, () => {
  /** A real store whose audit inserts fail while `failing` is set. */
  class AuditFaults implements Store {
    failing = false;
    readonly kind;
    constructor(private readonly inner: Store) {
      this.kind = inner.kind;
    }
    atomic<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
      return this.inner.atomic((tx) => {
        if (!this.failing) return fn(tx);
        const faulty = Object.create(tx) as Tx;
        faulty.insertAudit = async () => {
          throw new StoreUnavailableError('injected: the audit write failed', false);
        };
        return fn(faulty);
      });
    }
    now(): Millis {
      return this.inner.now();
    }
    epoch(): string {
      return this.inner.epoch();
    }
    queueDelayMs(family: string): number {
      return this.inner.queueDelayMs(family);
    }
    close(): Promise<void> {
      return this.inner.close();
    }
  }

  /** An engine over a real store whose audit inserts can be made to fail. */
  async function faultyFixture(): Promise<{ f: EngineFixture; faults: AuditFaults }> {
    let faults!: AuditFaults;
    const f = await engineFixture({ backend }, (s) => (faults = new AuditFaults(s)));
    return { f, faults };
  }

  describe('audit in the engine', () => {
    test('an audit write failure makes force-release and revoke fail and change nothing', async () => {
      const { f, faults } = await faultyFixture();
      try {
        const route = 'lease://fault/audit/r';
        const holder = await f.open('holder');
        const held = (await f.acquire(route, holder)).answer.lease;
        const waiterSession = await f.open('waiter');
        let waiterSettled = false;
        const waiting = f.acquire(route, waiterSession, { waitMs: 30_000 }).finally(() => {
          waiterSettled = true;
        });
        // Queued once its step commits (a turn of the event loop on SQLite, round trips on PostgreSQL).
        await until(f, () => f.engine.parts.waiters.held('default', route) > 0);
        assert.equal(f.engine.parts.waiters.held('default', route), 1);
        const eventsBefore = f.events.length;
        const auditBefore = (await allEvents(f)).length;

        faults.failing = true;
        await rejectsWith(f.engine.operators.forceRelease(f.admin, route, forceBody(held.fencing_token)), 'backend_unavailable');
        await rejectsWith(f.engine.operators.revoke(f.admin, route, { ...forceBody(held.fencing_token), closeSession: true }), 'backend_unavailable');
        faults.failing = false;

        assert.equal(f.events.length, eventsBefore, 'no change event was sent');
        const now = await f.engine.leases.inspect(f.admin, route);
        assert.equal(now.lease.fencing_token, held.fencing_token, 'the lease is still held by its holder');
        assert.equal(now.lease.holder_incarnation, held.holder_incarnation);
        assert.equal(f.engine.parts.waiters.held('default', route), 1, 'the waiter is still queued');
        assert.equal(waiterSettled, false, 'no waiter was granted');
        const renewed = await f.engine.leases.renew(f.admin, route, proofOf(holder, held));
        assert.equal(renewed.answer.lease.renewal_count, 1, 'the holder still holds it and can renew');
        const keep = await f.engine.sessions.keepAlive(f.admin, holder);
        assert.equal(keep.session.lease_count, 1, 'revoke closed no session');
        const audit = await allEvents(f);
        assert.equal(audit.filter((e) => e.result === 'lease_force_released' || e.result === 'lease_revoked').length, 0, 'no success was audited');

        // With the store healthy again the same action succeeds, audited in its own step.
        const ok = await f.engine.operators.forceRelease(f.admin, route, forceBody(held.fencing_token));
        assert.equal(ok.answer.fencing_token, held.fencing_token);
        const granted = await waiting;
        assert.equal(granted.answer.queued, true);
        const after = await allEvents(f);
        assert.ok(after.length > auditBefore);
        const fr = after.find((e) => e.event_type === 'lease_force_release' && e.result === 'lease_force_released');
        assert.ok(fr, 'the success is audited');
        assert.equal(fr.reason, REASON);
        assert.equal(fr.fencing_token, held.fencing_token);
        assert.equal(fr.owner_id, 'holder');
      } finally {
        await f.close();
      }
    });

    test('an audit write failure makes a token create, an embed token create and a token revoke fail and change nothing', async () => {
      const { f, faults } = await faultyFixture();
      try {
        const held = await f.engine.tokens.create(f.admin, { name: 'held', grants: ['lease://fault/tok/**#admin'] });
        const names = async () => (await f.engine.tokens.list(f.admin)).items.map((t) => t.name).sort();
        const before = await names();

        faults.failing = true;
        await rejectsWith(f.engine.tokens.create(f.admin, { name: 'unaudited', grants: ['lease://fault/tok/**#read'] }), 'backend_unavailable');
        await rejectsWith(f.engine.tokens.createEmbed(f.admin, 'lease://fault/tok/*', 60_000), 'backend_unavailable');
        await rejectsWith(f.engine.tokens.revoke(f.admin, held.token_id), 'backend_unavailable');
        faults.failing = false;

        assert.deepEqual(await names(), before, 'no token was created and none revoked');
        assert.equal((await f.engine.tokens.authenticate(held.token)).tokenId, held.token_id, 'the token whose revoke failed still authenticates');
        const events = await allEvents(f);
        const refused = events.filter((e) => e.result === 'backend_unavailable').map((e) => e.event_type).sort();
        assert.deepEqual(refused, ['embed_token_create', 'token_create', 'token_revoke'], 'each refusal is audited as one');
        const successes = events.filter((e) => ['token_created', 'embed_token_created', 'token_revoked'].includes(e.result));
        assert.equal(successes.length, 1, 'no success was audited beyond the first create');

        // Healthy again, the same revoke succeeds, audited once.
        await f.engine.tokens.revoke(f.admin, held.token_id);
        const revoked = (await allEvents(f)).filter((e) => e.result === 'token_revoked' && e.subject_token_id === held.token_id);
        assert.equal(revoked.length, 1);
      } finally {
        await f.close();
      }
    });

    test('buffered events survive a failed write and are written once the store answers again', async () => {
      const { f, faults } = await faultyFixture();
      try {
        faults.failing = true;
        for (let i = 0; i < 600; i++) await f.open(`kept-${i}`);
        await assert.rejects(f.engine.audit.flush());
        faults.failing = false;
        await f.engine.audit.flush();
        const owners = (await allEvents(f)).map((e) => e.owner_id);
        assert.equal(owners.length, 600);
        assert.equal(new Set(owners).size, 600, 'each event once');
        assert.equal(f.engine.audit.counts.dropped, 0);
      } finally {
        await f.close();
      }
    });

    test('while the store fails, at most 100,000 events wait; newer ones are dropped and counted', async () => {
      const { f, faults } = await faultyFixture();
      try {
        faults.failing = true;
        for (let i = 0; i < 100_010; i++) f.engine.audit.record(sessionEvent(f, `w-${i}`));
        await assert.rejects(f.engine.audit.flush());
        assert.equal(f.engine.audit.counts.dropped, 10);
        faults.failing = false;
        await f.engine.audit.flush();
        const owners: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await f.engine.audit.list(f.admin, { selector: ALL_SEL, limit: 1_000, cursor, eventType: 'session_open' });
          owners.push(...page.items.map((e) => e.owner_id!));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        assert.equal(owners.length, 100_000);
        assert.equal(new Set(owners).size, 100_000);
        assert.ok(owners.includes('w-0') && owners.includes('w-99999') && !owners.includes('w-100000'), 'the oldest are kept');
      } finally {
        await f.close();
      }
    });

    test('the admin action’s audit event survives a restart even with nothing flushed after it', async () => {
      const f = await engineFixture({ backend });
      try {
        const route = 'lease://fault/durable/r';
        const s = await f.open();
        const held = (await f.acquire(route, s)).answer.lease;
        await f.engine.operators.revoke(f.admin, route, { ...forceBody(held.fencing_token), closeSession: false });
        await f.restart();
        const events = await allEvents(f);
        assert.ok(events.some((e) => e.event_type === 'lease_revoke' && e.result === 'lease_revoked' && e.route === route));
      } finally {
        await f.close();
      }
    });

    test('refusals of a caller with no token are counted, never written as rows', async () => {
      const f = await engineFixture({ backend });
      try {
        const anonymous = { ...f.admin, tokenId: '', family: '', grants: [], root: false };
        for (let i = 0; i < 50; i++) f.engine.audit.note({ caller: anonymous, type: 'access_denied', route: null, success: '' }, 'access_denied');
        await f.engine.audit.flush();
        assert.equal(f.engine.audit.counts.anonymous_refusal, 50);
        const rows = await f.engine.parts.store.atomic((tx) => tx.auditCounts());
        assert.equal(rows.get(''), undefined, 'no row of family ""');
      } finally {
        await f.close();
      }
    });

    test('expiry and session expiry are audited as system events', async () => {
      const f = await engineFixture({ backend });
      try {
        const s = await f.open('sleepy', 10_000);
        await f.acquire('lease://sys/expire/a', s, { ttlMs: 2_000 });
        f.clock.advance(2_000);
        await f.engine.sweep();
        f.clock.advance(8_000);
        await f.engine.sweep();
        const events = (await allEvents(f)).filter((e) => e.token_id === null);
        assert.deepEqual(
          events.map((e) => [e.event_type, e.result, e.route, e.owner_id]),
          [
            ['session_expire', 'session_expired', null, 'sleepy'],
            ['lease_expire', 'lease_expired', 'lease://sys/expire/a', 'sleepy'],
          ],
        );
      } finally {
        await f.close();
      }
    });

    test('a sparse selector pages within the examined budget and still finds every event once', async () => {
      const f = await engineFixture({ backend, limits: { listBudget: 50 } });
      try {
        const s = await f.open('pager');
        const wanted: number[] = [];
        for (let i = 0; i < 300; i++) {
          const route = i % 97 === 0 ? `lease://rare/area/r${i}` : `lease://busy/area/r${i}`;
          const a = await f.acquire(route, s);
          if (route.startsWith('lease://rare/')) wanted.push(a.answer.lease.fencing_token);
        }
        const sel = parseSelector('lease://rare/**');
        if (!sel.ok) throw new Error('grammar');
        const seen: number[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await f.engine.audit.list(f.admin, { selector: sel.value, limit: 100, cursor });
          assert.ok(page.items.length <= 100);
          seen.push(...page.items.map((e) => e.fencing_token!));
          cursor = page.next_cursor ?? undefined;
          pages++;
        } while (cursor);
        assert.deepEqual(seen, wanted.slice().reverse(), 'every matching event once, newest first');
        assert.ok(pages >= 6, `the budget of 50 examined events bounds each page (${pages} pages for ~300 events)`);
      } finally {
        await f.close();
      }
    });
  });

  // Every end of a lease is on its route in the trail, at the moment it
  // ended, so the console's history (components/lease-detail) never has to
  // guess where a tenure stopped.
  describe('the end of every lease, on its route', () => {
    const NO_POLICY = { ttlMinMs: null, ttlMaxMs: null, ttlDefaultMs: null, maxLifetimeMs: null, lockDelayMs: null, maxWaiters: null };
    const ends = async (f: EngineFixture) => (await allEvents(f)).filter((e) => e.route !== null && e.token_id === null).reverse();

    test('a closed session records a lease_release with result session_closed on each route it held, a bounded step at a time, at the moment each ended', async () => {
      const f = await engineFixture({ backend, limits: { stepMaxLeases: 3 } });
      try {
        const s = await f.open('closer', 60_000);
        const routes = Array.from({ length: 7 }, (_, i) => `lease://close/each/r${i}`);
        const tokens = new Map<string, number>();
        for (const r of routes) tokens.set(r, (await f.acquire(r, s)).answer.lease.fencing_token);
        f.clock.advance(1_500);
        const closedAt = f.clock.now();
        await f.engine.sessions.close(f.admin, s);
        await until(f, () => f.changes().filter((c) => c.change === 'session_closed').length === routes.length, undefined, 'every lease of the closed session to end');
        await f.engine.audit.flush();
        const rows = await ends(f);
        assert.deepEqual(
          rows.map((e) => [e.event_type, e.result, e.route, e.owner_id, e.fencing_token]),
          routes.map((r) => ['lease_release', 'session_closed', r, 'closer', tokens.get(r)]),
          'one row per lease, in the order the drain ended them',
        );
        assert.ok(rows.every((e) => Date.parse(e.time) === closedAt), 'each at the moment its step ended it (the clock stood still)');
        assert.ok(rows.every((e) => e.details === undefined), 'a holder closing its own session starts no lock-delay');
      } finally {
        await f.close();
      }
    });

    test("an expiry records its deadline, a lease of an expired session its session's deadline, each with the lock-delay it started", async () => {
      const f = await engineFixture({ backend });
      try {
        await f.engine.policies.set(f.admin, 'lease://ends/**', { ...NO_POLICY, lockDelayMs: 30_000 }, REASON);
        const t0 = f.clock.now();
        const s = await f.open('sleeper', 10_000);
        const own = await f.acquire('lease://ends/x/own', s, { ttlMs: 2_000 });
        const bySession = await f.acquire('lease://ends/x/session', s, { ttlMs: 60_000 });
        // Nothing sweeps until well past both deadlines: the trail still says when each ended.
        f.clock.advance(12_000);
        await f.engine.sweep();
        await f.engine.audit.flush();
        const rows = await ends(f);
        assert.deepEqual(
          rows.map((e) => [e.event_type, e.result, e.route, e.fencing_token, Date.parse(e.time) - t0, e.details]),
          [
            ['lease_expire', 'lease_expired', 'lease://ends/x/own', own.answer.lease.fencing_token, 2_000, { lock_delay_until: new Date(t0 + 32_000).toISOString() }],
            ['lease_expire', 'session_expired', 'lease://ends/x/session', bySession.answer.lease.fencing_token, 10_000, { lock_delay_until: new Date(t0 + 40_000).toISOString() }],
          ],
        );
      } finally {
        await f.close();
      }
    });

    test('a batched renewal is one event without a route and one per lost item; each end records how often its tenure was renewed', async () => {
      const f = await engineFixture({ backend });
      try {
        const s = await f.open('fleet', 60_000);
        const lease = async (r: string, ttlMs = 60_000) => (await f.acquire(`lease://batch/x/${r}`, s, { ttlMs })).answer.lease;
        const [a, b, c, d] = [await lease('a', 5_000), await lease('b'), await lease('c'), await lease('d')];
        const item = (l: HeldLease, token = l.fencing_token) => ({ route: l.route, leaseId: l.lease_id, fencingToken: token });
        const renewAll = (items: ReturnType<typeof item>[], requestId = rid()) =>
          f.engine.sessions.renewAll(f.admin, { sessionId: s, requestId, digest: requestDigest({ session_id: s, leases: items }), items });
        const first = await renewAll([item(a), item(b), item(c, c.fencing_token + 100), item(d)]);
        assert.deepEqual(first.answer.results.map((r) => r.code), ['lease_renewed', 'lease_renewed', 'lease_lost', 'lease_renewed']);
        const requestId = rid();
        await renewAll([item(a), item(b)], requestId);
        await renewAll([item(a), item(b)], requestId); // a replay: nothing happened, nothing audited
        await f.engine.audit.flush();
        const renews = (await allEvents(f)).filter((e) => e.event_type === 'lease_renew').reverse();
        assert.deepEqual(
          renews.map((e) => [e.route, e.result, e.fencing_token, e.owner_id, e.details]),
          [
            [c.route, 'lease_lost', c.fencing_token + 100, 'fleet', undefined],
            [null, 'session_renewed', null, 'fleet', { items: 4, renewed: 3, lost: 1 }],
            [null, 'session_renewed', null, 'fleet', { items: 2, renewed: 2, lost: 0 }],
          ],
          'no event on the route of a renewed item',
        );
        // Each end says how often the tenure was renewed: a release, a force-release, an expiry; a lease never renewed says nothing.
        await f.engine.leases.release(f.admin, b.route, proofOf(s, b));
        await f.engine.leases.release(f.admin, c.route, proofOf(s, c));
        await f.engine.operators.forceRelease(f.admin, d.route, forceBody(d.fencing_token));
        f.clock.advance(6_000);
        await f.engine.sweep();
        await until(f, () => f.changes().some((x) => x.change === 'expired' && x.route === a.route), undefined, 'a to expire');
        await f.engine.audit.flush();
        // By route: the force-release's event is written in its step, the others buffered.
        const ended = (await allEvents(f)).filter((e) => e.route !== null && e.event_type !== 'lease_acquire' && e.event_type !== 'lease_renew');
        assert.deepEqual(
          ended.map((e) => [e.route, e.event_type, e.details?.renewal_count]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
          [
            [a.route, 'lease_expire', 2],
            [b.route, 'lease_release', 2],
            [c.route, 'lease_release', undefined],
            [d.route, 'lease_force_release', 1],
          ],
        );
      } finally {
        await f.close();
      }
    });

    test("an operator's force-release records the lock-delay it started beside the operator's choices", async () => {
      const f = await engineFixture({ backend });
      try {
        await f.engine.policies.set(f.admin, 'lease://ends/**', { ...NO_POLICY, lockDelayMs: 30_000 }, REASON);
        const s = await f.open('stuck');
        const a = await f.acquire('lease://ends/op/a', s);
        const b = await f.acquire('lease://ends/op/b', s);
        const at = f.clock.now();
        await f.engine.operators.forceRelease(f.admin, 'lease://ends/op/a', forceBody(a.answer.lease.fencing_token));
        await f.engine.operators.forceRelease(f.admin, 'lease://ends/op/b', { ...forceBody(b.answer.lease.fencing_token), lockDelayMs: 5_000 });
        const forced = (await allEvents(f)).filter((e) => e.event_type === 'lease_force_release').reverse();
        assert.deepEqual(
          forced.map((e) => [e.route, e.reason, e.details]),
          [
            ['lease://ends/op/a', REASON, { lock_delay_until: new Date(at + 30_000).toISOString() }],
            ['lease://ends/op/b', REASON, { lock_delay_ms: 5_000, lock_delay_until: new Date(at + 5_000).toISOString() }],
          ],
        );
      } finally {
        await f.close();
      }
    });
  });

 });
}
