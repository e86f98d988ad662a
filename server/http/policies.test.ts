import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { parseExposition, sample } from '../testing/prometheus';

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
    await put({ selector: 'lease://hd/**', lock_delay_ms: 1_500 });
    const route = 'lease://hd/a/b';
    const h = await hold(route);
    const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason, expected_fencing_token: h.lease.fencing_token });
    assert.equal(fr.status, 200, fr.text);
    const { sessionId } = await s.openSession('next');
    const refused = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
    assert.deepEqual([refused.status, refused.body.code, refused.body.retryable], [409, 'lease_conflict', true]);
    const until = Date.parse(refused.body.lock_delay_until as string);
    assert.ok(refused.body.retry_after_ms > 0 && refused.body.retry_after_ms <= 1_500);
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
    assert.ok(late >= 0 && late < 1_000, `granted within a second of the delay's end (${late} ms)`);
  });

  test('force-release with lock_delay_ms 0 skips the delay, and the audit event records it', async () => {
    await put({ selector: 'lease://hs/**', lock_delay_ms: 60_000 });
    const route = 'lease://hs/a/b';
    const h = await hold(route);
    const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason, expected_fencing_token: h.lease.fencing_token, lock_delay_ms: 0 });
    assert.equal(fr.status, 200, fr.text);
    await hold(route, 'successor');
    const audit = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(route)}&event_type=lease_force_release`);
    assert.ok(audit.body.items.some((e: { reason: string }) => e.reason.endsWith('[lock_delay_ms=0]')), audit.text);
  });
});
