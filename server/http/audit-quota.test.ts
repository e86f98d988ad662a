/**
 * Nobody can erase another family's audit trail (docs/operations.md,
 * "Threat model"): refusals of callers with no token are counted (a metric)
 * and logged at most every 10 s, never written as rows; an authenticated
 * tenant's own refusals fill only its own family's quota.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
const logged: string[] = [];
const push = (message: string, fields?: object) => void logged.push(`${message} ${JSON.stringify(fields ?? {})}`);
const keep = { debug: push, info: push, warn: push, error: push, enabled: () => true };
let forceReleaseId: string;

before(async () => {
  // Lowered caps: a global ceiling of 2,000 events, 1,000 per family.
  // One instance observes the workload (on PostgreSQL the counters and the log are per process, by design).
  s = await startTestServer({ spread: false, engine: { audit: { retentionMs: 86_400_000, maxRows: 2_000, maxRowsPerFamily: 1_000, logger: keep } } });
  const { sessionId } = await s.openSession('victim');
  const route = 'lease://history/keep/a';
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
  assert.equal(a.status, 200, a.text);
  const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: 'incident 42: stuck holder', expected_fencing_token: a.body.lease.fencing_token });
  assert.equal(fr.status, 200, fr.text);
  forceReleaseId = (await history())[0]!.id;
});
after(() => s.close());

async function history(): Promise<Array<{ id: string; event_type: string }>> {
  const r = await s.call('GET', '/api/v1/audit?event_type=lease_force_release&limit=10');
  assert.equal(r.status, 200, r.text);
  return r.body.items;
}

async function inBatches(n: number, one: () => Promise<void>): Promise<void> {
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: Math.min(50, n - i) }, one));
}

test('2,500 cross-site logouts by an anonymous caller write no row and prune nothing; they are counted and logged once', async () => {
  await inBatches(2_500, async () => {
    const r = await s.call('POST', '/api/v1/auth/logout', {}, { token: null, headers: { Cookie: 'leasehold_login=lc_anything' } });
    assert.deepEqual([r.status, r.body.code], [403, 'access_denied']);
  });
  await s.app.engine.audit.flush();
  await s.app.engine.audit.prune();
  assert.deepEqual((await history()).map((e) => e.id), [forceReleaseId], 'the force-release is still there');
  const counts = await s.app.engine.parts.store.atomic((tx) => tx.auditCounts());
  assert.equal(counts.get(''), undefined, 'no audit row without a family');
  assert.equal(s.app.engine.audit.counts.anonymous_refusal, 2_500);
  assert.ok(logged.filter((l) => /"anonymous_refusal":[1-9]/.test(l)).length <= 1, `logged at most once in 10 s: ${logged.length}`);
  const m = await s.call('GET', '/api/metrics');
  assert.match(m.text, /^leasehold_anonymous_refusals_total 2500$/m);
});

test('a tenant causing 1,500 access_denied events fills only its own quota; the default family keeps its history', async () => {
  const tenant = await s.createToken(['lease://t/x/*#read'], { family: 'tenant-b' });
  await inBatches(1_500, async () => {
    const r = await s.call('GET', '/api/v1/leases?selector=lease://**', undefined, { token: tenant });
    assert.equal(r.status, 403);
  });
  await s.app.engine.audit.flush();
  await s.app.engine.audit.prune();
  assert.deepEqual((await history()).map((e) => e.id), [forceReleaseId], 'the force-release is still there');
  const counts = await s.app.engine.parts.store.atomic((tx) => tx.auditCounts());
  assert.equal(counts.get('tenant-b'), 1_000, 'the tenant is cut to its own quota');
});
