import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { parseExposition, sample } from '../testing/prometheus';
import { TIME_FACTOR } from '../testing/wait';

let s: TestServer;
before(async () => {
  s = await startTestServer({ engine: { sweepIntervalMs: 50 } });
});
after(async () => {
  await s.close();
});

const reason = 'bounds for the http test fleet';
const put = (body: Record<string, unknown>, token?: string) => s.call('PUT', '/api/v1/policies', { reason, ...body }, token ? { token } : {});

async function hold(route: string, ownerId = 'holder', extra: Record<string, unknown> = {}) {
  const { sessionId } = await s.openSession(ownerId);
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra });
  assert.equal(a.status, 200, a.text);
  return { sessionId, lease: a.body.lease as { lease_id: string; fencing_token: number; ttl_ms: number } };
}

describe('policies over HTTP', () => {
  test('set answers the policy, list filters by containment, explain names the winner and its bounds, delete is not_found the second time', async () => {
    const a = await put({ selector: 'lease://hp/**', ttl_max_ms: 20_000 });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.code, 'policy_set');
    assert.deepEqual([a.body.policy.selector, a.body.policy.ttl_max_ms, a.body.policy.lock_delay_ms], ['lease://hp/**', 20_000, null]);
    await put({ selector: 'lease://hp/x/*', ttl_max_ms: 10_000 });
    const list = await s.call('GET', `/api/v1/policies?selector=${encodeURIComponent('lease://hp/x/**')}`);
    assert.deepEqual(list.body.items.map((p: { selector: string }) => p.selector), ['lease://hp/x/*']);
    const eff = await s.call('GET', '/api/v1/policies/effective/hp/x/y');
    assert.equal(eff.body.policy.selector, 'lease://hp/x/*');
    assert.equal(eff.body.limits.ttl_max_ms, 10_000);
    const held = await hold('lease://hp/x/y', 'h', { ttl_ms: 500_000 });
    assert.equal(held.lease.ttl_ms, 10_000, 'the answer says what was granted');
    const del = (sel: string) => s.call('DELETE', `/api/v1/policies?selector=${encodeURIComponent(sel)}&reason=${encodeURIComponent(reason)}`);
    assert.equal((await del('lease://hp/x/*')).body.code, 'policy_deleted');
    const again = await del('lease://hp/x/*');
    assert.deepEqual([again.status, again.body.code], [404, 'not_found']);
  });

  test('a policy change is audited with the reason verbatim, the selector as route and the values in details; GET /audit?route=<selector> finds only its events', async () => {
    type Ev = { event_type: string; route: string | null; reason: string | null; result: string; details?: Record<string, unknown> };
    const why = 'acme/a: tighten the bounds [not a selector=tag], verbatim';
    const values = (v: Record<string, number>) => ({ ttl_min_ms: null, ttl_max_ms: null, ttl_default_ms: null, max_lifetime_ms: null, lock_delay_ms: null, max_waiters: null, ...v });
    const a = await put({ selector: 'lease://acme/a/*', lock_delay_ms: 5_000, ttl_max_ms: 20_000, reason: why });
    assert.equal(a.status, 200, a.text);
    assert.equal((await put({ selector: 'lease://acme/**', lock_delay_ms: 1_000 })).status, 200);
    assert.equal((await put({ selector: 'lease://acme/*/*', max_waiters: 3 })).status, 200);
    const del = await s.call('DELETE', `/api/v1/policies?selector=${encodeURIComponent('lease://acme/a/*')}&reason=${encodeURIComponent(why)}`);
    assert.equal(del.body.code, 'policy_deleted', del.text);
    await hold('lease://acme/a/x');
    await s.flushAudit(); // the acquire's event is buffered on the instance that answered it
    const audit = async (q: string) => {
      const r = await s.call('GET', `/api/v1/audit?${q}`);
      assert.equal(r.status, 200, r.text);
      return r.body.items as Ev[];
    };
    const policyEvents = (items: Ev[]) => items.filter((e) => e.event_type.startsWith('policy_'));

    const mine = await audit(`route=${encodeURIComponent('lease://acme/a/*')}`);
    assert.deepEqual(
      policyEvents(mine).map((e) => [e.event_type, e.route, e.reason, e.details]),
      [
        ['policy_delete', 'lease://acme/a/*', why, values({ lock_delay_ms: 5_000, ttl_max_ms: 20_000 })],
        ['policy_set', 'lease://acme/a/*', why, values({ lock_delay_ms: 5_000, ttl_max_ms: 20_000 })],
      ],
    );
    assert.ok(mine.some((e) => e.event_type === 'lease_acquire' && e.route === 'lease://acme/a/x'), 'the route’s lease events still match the selector');
    assert.deepEqual(
      (await audit(`route=${encodeURIComponent('lease://acme/a/*')}&event_type=policy_set`)).map((e) => [e.route, e.reason]),
      [['lease://acme/a/*', why]],
      'by selector and type: that policy’s set only',
    );
    // `lease://acme/**` and `lease://acme/*/*` are two policies with one triple: each selector finds its own.
    assert.deepEqual(policyEvents(await audit(`route=${encodeURIComponent('lease://acme/**')}`)).map((e) => [e.route, e.reason, e.details]), [['lease://acme/**', reason, values({ lock_delay_ms: 1_000 })]]);
    assert.deepEqual(policyEvents(await audit(`route=${encodeURIComponent('lease://acme/*/*')}`)).map((e) => [e.route, e.details]), [['lease://acme/*/*', values({ max_waiters: 3 })]]);
    assert.deepEqual(policyEvents(await audit(`route=${encodeURIComponent('lease://acme/a/x')}`)), [], 'a route the selector covers does not find it');
    // Every route (the default) finds them all; other events have no details.
    const every = await audit('event_type=policy_set');
    assert.deepEqual(every.filter((e) => e.route?.startsWith('lease://acme/')).map((e) => e.route), ['lease://acme/*/*', 'lease://acme/**', 'lease://acme/a/*']);
    assert.ok(mine.filter((e) => !e.event_type.startsWith('policy_')).every((e) => !('details' in e)));
    // Reading by selector needs admin on it, not on lease://**.
    const scoped = await s.createToken(['lease://acme/a/*#admin']);
    const narrow = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent('lease://acme/a/*')}&event_type=policy_delete`, undefined, { token: scoped });
    assert.deepEqual(narrow.body.items.map((e: Ev) => [e.route, e.reason]), [['lease://acme/a/*', why]], narrow.text);
    const wide = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent('lease://acme/**')}`, undefined, { token: scoped });
    assert.equal(wide.body.code, 'access_denied');
  });

  test('bad bounds, selectors and missing reasons are refused and store nothing', async () => {
    for (const [body, code] of [
      [{ selector: 'lease://hb/**', ttl_min_ms: 9_000, ttl_max_ms: 8_000 }, 'invalid_request'],
      [{ selector: 'lease://hb/**', ttl_default_ms: 700_000 }, 'invalid_request'],
      [{ selector: 'lease://hb/**', lock_delay_ms: -1 }, 'invalid_request'],
      [{ selector: 'lease://hb/**', max_waiters: 2_000 }, 'invalid_request'],
      [{ selector: 'lease://hb/**', bogus: 1 }, 'invalid_request'],
      [{ selector: 'lease://hb' }, 'invalid_selector'],
    ] as const) {
      const r = await put(body);
      assert.equal(r.body.code, code, `${JSON.stringify(body)}: ${r.text}`);
    }
    const noReason = await s.call('PUT', '/api/v1/policies', { selector: 'lease://hb/**' });
    assert.equal(noReason.body.code, 'invalid_request');
    const list = await s.call('GET', `/api/v1/policies?selector=${encodeURIComponent('lease://hb/**')}`);
    assert.deepEqual(list.body.items, []);
  });

  test('set and delete need admin on a grant containing the selector', async () => {
    const scoped = await s.createToken(['lease://team/**#admin', 'lease://**#read']);
    assert.equal((await put({ selector: 'lease://team/a/*', lock_delay_ms: 100 }, scoped)).status, 200);
    const wider = await put({ selector: 'lease://**', lock_delay_ms: 100 }, scoped);
    assert.deepEqual([wider.status, wider.body.code], [403, 'access_denied']);
    const other = await s.call('DELETE', `/api/v1/policies?selector=${encodeURIComponent('lease://hp/**')}&reason=${encodeURIComponent(reason)}`, undefined, { token: scoped });
    assert.equal(other.body.code, 'access_denied');
  });

  test('an acquire in lock-delay is 409 with retry_after_ms and lock_delay_until; inspect shows it; a waiter gets the route when it ends; metrics count it', async () => {
    // Long enough that the checks below run inside the delay on a loaded machine (× the CI time factor).
    const delay = 1_500 * TIME_FACTOR;
    await put({ selector: 'lease://hd/**', lock_delay_ms: delay });
    const route = 'lease://hd/a/b';
    const h = await hold(route);
    const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason, expected_fencing_token: h.lease.fencing_token });
    assert.equal(fr.status, 200, fr.text);
    const { sessionId } = await s.openSession('next');
    const refused = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
    assert.deepEqual([refused.status, refused.body.code, refused.body.retryable], [409, 'lease_conflict', true]);
    const until = Date.parse(refused.body.lock_delay_until as string);
    assert.ok(refused.body.retry_after_ms > 0 && refused.body.retry_after_ms <= delay);
    const inspect = await s.call('GET', leasePath(route));
    assert.deepEqual([inspect.status, Date.parse(inspect.body.lock_delay_until as string)], [404, until]);
    const m = await parseExposition((await s.call('GET', '/api/metrics')).text);
    assert.equal(sample(m, 'leasehold_routes_in_lock_delay'), 1);
    assert.ok(sample(m, 'leasehold_lock_delay_refusals_total') >= 1);
    const waited = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), wait_ms: 10_000 });
    assert.equal(waited.status, 200, waited.text);
    assert.equal(waited.body.lease.owner_id, 'next');
    assert.equal(waited.body.queued, true);
    const late = Date.parse(waited.body.lease.acquired_at as string) - until;
    assert.ok(late >= 0 && late < 1_000 * TIME_FACTOR, `granted within a second (× the factor) of the delay's end (${late} ms)`);
  });

  test('force-release with lock_delay_ms 0 skips the delay, and the audit event records it', async () => {
    await put({ selector: 'lease://hs/**', lock_delay_ms: 60_000 });
    const route = 'lease://hs/a/b';
    const h = await hold(route);
    const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason, expected_fencing_token: h.lease.fencing_token, lock_delay_ms: 0 });
    assert.equal(fr.status, 200, fr.text);
    await hold(route, 'successor');
    const audit = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&event_type=lease_force_release`);
    assert.ok(audit.body.items.some((e: { reason: string; details?: { lock_delay_ms?: number } }) => e.reason === reason && e.details?.lock_delay_ms === 0), audit.text);
  });
});
