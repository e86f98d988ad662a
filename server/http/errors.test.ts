/**
 * Every error code of the error table in docs/semantics.md "The wire" that sessions, leases, idempotency and
 * tokens can produce, produced through a real server, each with its
 * documented status and `retryable` value. (lease_mismatch is in
 * operators.test.ts; stream caps, backend_unavailable and outcome_unknown
 * belong to other suites.)
 */

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';

function expectError(r: Reply, status: number, code: string, retryable = false): void {
  assert.ok(r.status < 500, `never a 5xx: ${r.status} ${r.text}`);
  assert.equal(r.status, status, r.text);
  assert.equal(r.body.status, 'error', r.text);
  assert.equal(r.body.code, code, r.text);
  assert.equal(r.body.retryable, retryable, `retryable: ${r.text}`);
  assert.equal(typeof r.body.message, 'string');
  assert.equal(r.headers['x-correlation-id'], r.body.correlation_id);
}

const list = (selector: string, extra = '') => `/api/v1/leases?selector=${encodeURIComponent(selector)}${extra}`;

/** Poll until `check` holds (state, not time: used to know a waiter is queued). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('error codes', () => {
  let s: TestServer;

  async function acquire(route: string, sessionId: string, extra: Record<string, unknown> = {}, token?: string): Promise<Reply> {
    return s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ...extra }, { token });
  }

  async function holderCall(action: 'renew' | 'release' | 'checkpoint', route: string, proof: { sessionId: string; leaseId: string; fencingToken: number }, token?: string): Promise<Reply> {
    const body: Record<string, unknown> = { session_id: proof.sessionId, request_id: rid(), lease_id: proof.leaseId, fencing_token: proof.fencingToken };
    if (action === 'checkpoint') body.value = { n: 1 };
    return s.call(action === 'checkpoint' ? 'PUT' : 'POST', leasePath(route, action), body, { token });
  }

  async function waiters(route: string): Promise<number> {
    const r = await s.call('GET', leasePath(route));
    return r.status === 200 ? (r.body.lease.waiters as number) : -1;
  }

  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  describe('request faults (400, 413, 415, 405)', () => {
    test('invalid_request is 400, not retryable', async () => {
      const { sessionId } = await s.openSession();
      expectError(await acquire('lease://err/req/a', sessionId, { ttl_ms: 10 }), 400, 'invalid_request');
    });

    test('invalid_selector is 400, not retryable', async () => {
      expectError(await s.call('GET', list('lease://acme/renderers')), 400, 'invalid_selector');
    });

    test('payload_too_large is 413, not retryable', async () => {
      const r = await s.call('POST', '/api/v1/sessions', undefined, { raw: JSON.stringify({ owner_id: 'x'.repeat(129 * 1024) }), headers: { 'Content-Type': 'application/json' } });
      expectError(r, 413, 'payload_too_large');
    });

    test('unsupported_media_type is 415, not retryable', async () => {
      const r = await s.call('POST', '/api/v1/sessions', undefined, { raw: '{"owner_id":"w"}', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
      expectError(r, 415, 'unsupported_media_type');
    });

    test('method_not_allowed is 405 with an Allow header, not retryable', async () => {
      const r = await s.call('DELETE', '/api/v1/sessions/close');
      expectError(r, 405, 'method_not_allowed');
      assert.match(String(r.headers.allow), /\bPOST\b/);
    });
  });

  describe('cursor_invalid', () => {
    let cursor: string;
    const sel = 'lease://crs/a/*';

    before(async () => {
      const { sessionId } = await s.openSession('cursor-owner');
      for (const r of ['lease://crs/a/1', 'lease://crs/a/2']) assert.equal((await acquire(r, sessionId)).status, 200);
      const page = await s.call('GET', list(sel, '&limit=1'));
      assert.equal(page.status, 200, page.text);
      assert.equal(page.body.items.length, 1);
      cursor = page.body.next_cursor;
      assert.equal(typeof cursor, 'string');
    });

    test('the real cursor resumes on its own selector', async () => {
      const r = await s.call('GET', list(sel, `&limit=1&cursor=${encodeURIComponent(cursor)}`));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.items.map((i: { route: string }) => i.route), ['lease://crs/a/2']);
    });

    test('an altered cursor is 400 cursor_invalid, not retryable', async () => {
      const i = 3;
      const altered = cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
      expectError(await s.call('GET', list(sel, `&limit=1&cursor=${encodeURIComponent(altered)}`)), 400, 'cursor_invalid');
    });

    test('a cursor from another selector is cursor_invalid', async () => {
      expectError(await s.call('GET', list('lease://crs/**', `&limit=1&cursor=${encodeURIComponent(cursor)}`)), 400, 'cursor_invalid');
    });

    test('a cursor with another filter is cursor_invalid', async () => {
      expectError(await s.call('GET', list(sel, `&limit=1&owner_id=cursor-owner&cursor=${encodeURIComponent(cursor)}`)), 400, 'cursor_invalid');
    });

    test('a cursor used by another family is cursor_invalid', async () => {
      const other = await s.createToken(['lease://**#admin'], { family: 'cursor-fam' });
      expectError(await s.call('GET', list(sel, `&limit=1&cursor=${encodeURIComponent(cursor)}`), undefined, { token: other }), 400, 'cursor_invalid');
    });

    test('a session cursor is not a lease cursor', async () => {
      expectError(await s.call('GET', `/api/v1/sessions?cursor=${encodeURIComponent(cursor)}`), 400, 'cursor_invalid');
    });
  });

  describe('invalid_credential', () => {
    test('no token is 401 invalid_credential, not retryable', async () => {
      expectError(await s.call('GET', '/api/v1/auth/whoami', undefined, { token: null }), 401, 'invalid_credential');
    });

    test('a revoked token is 401 invalid_credential at once', async () => {
      const created = await s.call('POST', '/api/v1/tokens', { name: 'short-lived', grants: ['lease://**#read'] });
      assert.equal(created.status, 201, created.text);
      const secret = created.body.token as string;
      assert.equal((await s.call('GET', '/api/v1/auth/whoami', undefined, { token: secret })).status, 200);
      assert.equal((await s.call('DELETE', `/api/v1/tokens/${created.body.token_id}`)).status, 200);
      const refused = (r: Reply) => r.status === 401;
      expectError(await s.settledCall('GET', '/api/v1/auth/whoami', undefined, { token: secret }, refused), 401, 'invalid_credential');
      expectError(await s.settledCall('GET', list('lease://**'), undefined, { token: secret }, refused), 401, 'invalid_credential');
    });
  });

  describe('access_denied', () => {
    test('a read-only token acquiring is 403 access_denied, not retryable', async () => {
      const { sessionId } = await s.openSession();
      const ro = await s.createToken(['lease://**#read']);
      expectError(await acquire('lease://deny/a/b', sessionId, {}, ro), 403, 'access_denied');
      expectError(await s.call('POST', '/api/v1/sessions', { owner_id: 'w' }, { token: ro }), 403, 'access_denied');
    });

    test('lease://acme/renderers/*#read may list its own selector but not lease://acme/**', async () => {
      const t = await s.createToken(['lease://acme/renderers/*#read']);
      assert.equal((await s.call('GET', list('lease://acme/renderers/*'), undefined, { token: t })).status, 200);
      const denied = await s.call('GET', list('lease://acme/**'), undefined, { token: t });
      expectError(denied, 403, 'access_denied');
      assert.ok(!('items' in denied.body));
    });

    test('two partial grants are never unioned, even when they cover every current lease', async () => {
      const { sessionId } = await s.openSession();
      for (const r of ['lease://acme/renderers/doc-1', 'lease://acme/workers/doc-1']) assert.equal((await acquire(r, sessionId)).status, 200);
      const t = await s.createToken(['lease://acme/renderers/*#read', 'lease://acme/workers/*#read']);
      assert.equal((await s.call('GET', list('lease://acme/renderers/*'), undefined, { token: t })).status, 200);
      assert.equal((await s.call('GET', list('lease://acme/workers/*'), undefined, { token: t })).status, 200);
      expectError(await s.call('GET', list('lease://acme/*/doc-1'), undefined, { token: t }), 403, 'access_denied');
      expectError(await s.call('GET', list('lease://acme/**'), undefined, { token: t }), 403, 'access_denied');
    });

    test('a read grant and a write grant do not combine into write elsewhere', async () => {
      const t = await s.createToken(['lease://acme/**#read', 'lease://acme/renderers/doc-7#write']);
      const { sessionId } = await s.openSession('w', 15_000, t);
      expectError(await acquire('lease://acme/workers/doc-7', sessionId, {}, t), 403, 'access_denied');
      assert.equal((await acquire('lease://acme/renderers/doc-7', sessionId, {}, t)).status, 200);
    });
  });

  describe('lease_not_found and checkpoint_not_found', () => {
    test('inspecting a free route is 404 lease_not_found, not retryable', async () => {
      expectError(await s.call('GET', leasePath('lease://free/route/never')), 404, 'lease_not_found');
    });

    test('reading the checkpoint of a route that never had one is 404 checkpoint_not_found', async () => {
      expectError(await s.call('GET', leasePath('lease://free/route/never', 'checkpoint')), 404, 'checkpoint_not_found');
      const { sessionId } = await s.openSession();
      assert.equal((await acquire('lease://free/route/held', sessionId)).status, 200);
      expectError(await s.call('GET', leasePath('lease://free/route/held', 'checkpoint')), 404, 'checkpoint_not_found');
    });
  });

  describe('session_not_found', () => {
    test('acquire with an unknown session is 404 session_not_found, not retryable', async () => {
      expectError(await acquire('lease://sess/a/b', 'ss_no_such_session_anywhere'), 404, 'session_not_found');
    });

    test('keepalive, close and acquire of a closed session are session_not_found', async () => {
      const { sessionId } = await s.openSession();
      assert.equal((await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId })).status, 200);
      expectError(await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId }), 404, 'session_not_found');
      expectError(await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId }), 404, 'session_not_found');
      expectError(await acquire('lease://sess/a/closed', sessionId), 404, 'session_not_found');
    });

    test('a session of another family is session_not_found for acquire, keepalive and close, and lease_lost for renew', async () => {
      const other = await s.createToken(['lease://**#admin'], { family: 'other' });
      const { sessionId } = await s.openSession('other-worker', 15_000, other);
      const held = await acquire('lease://sess/fam/x', sessionId, {}, other);
      assert.equal(held.status, 200, held.text);

      expectError(await acquire('lease://sess/fam/y', sessionId), 404, 'session_not_found');
      expectError(await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId }), 404, 'session_not_found');
      expectError(await s.call('POST', '/api/v1/sessions/close', { session_id: sessionId }), 404, 'session_not_found');
      const proof = { sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token };
      expectError(await holderCall('renew', 'lease://sess/fam/x', proof), 409, 'lease_lost');
      expectError(await holderCall('release', 'lease://sess/fam/x', proof), 409, 'lease_lost');
      expectError(await holderCall('checkpoint', 'lease://sess/fam/x', proof), 409, 'lease_lost');

      // Its own family still sees it untouched.
      const kept = await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId }, { token: other });
      assert.equal(kept.status, 200, kept.text);
      assert.equal(kept.body.session.lease_count, 1);
      const renewed = await holderCall('renew', 'lease://sess/fam/x', proof, other);
      assert.equal(renewed.status, 200, renewed.text);
      assert.equal(renewed.body.lease.renewal_count, 1);
    });
  });

  describe('not_found', () => {
    test('an unknown API path is 404 not_found, not retryable', async () => {
      expectError(await s.call('GET', '/api/v1/no-such-thing'), 404, 'not_found');
    });

    test('revoking an unknown token is 404 not_found', async () => {
      expectError(await s.call('DELETE', '/api/v1/tokens/tk_does_not_exist'), 404, 'not_found');
    });

    test('revoking a token of another family is 404 not_found for a non-root admin', async () => {
      const created = await s.call('POST', '/api/v1/tokens', { name: 'elsewhere', grants: ['lease://**#read'], family: 'elsewhere' });
      assert.equal(created.status, 201, created.text);
      const admin = await s.createToken(['lease://**#admin']);
      expectError(await s.call('DELETE', `/api/v1/tokens/${created.body.token_id}`, undefined, { token: admin }), 404, 'not_found');
    });
  });

  describe('lease_conflict', () => {
    // the error table in docs/semantics.md "The wire": retryable "no when this session already holds or waits for the route", whatever its wait_ms.
    test('a session already waiting for the route that asks again with wait_ms 0 gets lease_conflict, not retryable', async () => {
      const route = 'lease://conf/a/5';
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      const held = await acquire(route, a.sessionId);
      assert.equal(held.status, 200);
      const waiting = acquire(route, b.sessionId, { wait_ms: 10_000 });
      try {
        await until(async () => (await waiters(route)) === 1, 'the waiter to queue');
        expectError(await acquire(route, b.sessionId), 409, 'lease_conflict', false);
      } finally {
        await holderCall('release', route, { sessionId: a.sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token });
        assert.equal((await waiting).status, 200);
      }
    });

    test('a route held by another session is 409 lease_conflict, retryable, with retry_after_ms ≥ 50', async () => {
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      assert.equal((await acquire('lease://conf/a/1', a.sessionId, { ttl_ms: 30_000 })).status, 200);
      const r = await acquire('lease://conf/a/1', b.sessionId);
      expectError(r, 409, 'lease_conflict', true);
      assert.equal(typeof r.body.retry_after_ms, 'number');
      assert.ok(r.body.retry_after_ms >= 50 && r.body.retry_after_ms <= 30_000, `retry_after_ms ${r.body.retry_after_ms}`);
      assert.ok(!r.text.includes(a.sessionId), 'never another holder’s session');
    });

    test('the holding session re-acquiring is lease_conflict, not retryable (leases are not re-entrant)', async () => {
      const a = await s.openSession('a');
      assert.equal((await acquire('lease://conf/a/2', a.sessionId)).status, 200);
      expectError(await acquire('lease://conf/a/2', a.sessionId), 409, 'lease_conflict', false);
      expectError(await acquire('lease://conf/a/2', a.sessionId, { wait_ms: 1_000 }), 409, 'lease_conflict', false);
    });

    test('a waiter whose deadline passes gets lease_conflict, retryable, with retry_after_ms', async () => {
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      assert.equal((await acquire('lease://conf/a/3', a.sessionId)).status, 200);
      const r = await acquire('lease://conf/a/3', b.sessionId, { wait_ms: 100 });
      expectError(r, 409, 'lease_conflict', true);
      assert.ok(r.body.retry_after_ms >= 50);
    });

    test('a session already waiting for the route gets lease_conflict at once, not retryable; a duplicate of the waiting request is idempotency_conflict', async () => {
      const route = 'lease://conf/a/4';
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      const held = await acquire(route, a.sessionId);
      assert.equal(held.status, 200);
      const waitBody = { session_id: b.sessionId, request_id: rid('wait'), wait_ms: 10_000 };
      const waiting = s.call('POST', leasePath(route, 'acquire'), waitBody);
      await until(async () => (await waiters(route)) === 1, 'the waiter to queue');

      const t0 = Date.now();
      expectError(await acquire(route, b.sessionId, { wait_ms: 5_000 }), 409, 'lease_conflict', false);
      assert.ok(Date.now() - t0 < 2_000, 'refused at once, not after waiting');

      // The same request while the original is still running: retryable when the inputs are the same.
      expectError(await s.call('POST', leasePath(route, 'acquire'), waitBody), 409, 'idempotency_conflict', true);
      expectError(await s.call('POST', leasePath(route, 'acquire'), { ...waitBody, wait_ms: 9_000 }), 409, 'idempotency_conflict', false);

      const rel = await holderCall('release', route, { sessionId: a.sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token });
      assert.equal(rel.status, 200, rel.text);
      const granted = await waiting;
      assert.equal(granted.status, 200, granted.text);
      assert.equal(granted.body.queued, true);
      assert.ok(granted.body.lease.fencing_token > held.body.lease.fencing_token);

      const replay = await s.call('POST', leasePath(route, 'acquire'), waitBody);
      assert.equal(replay.status, 200, replay.text);
      assert.equal(replay.headers['idempotent-replay'], 'true');
      assert.equal(replay.body.lease.lease_id, granted.body.lease.lease_id);
    });
  });

  describe('lease_lost', () => {
    test('renew, release and checkpoint with a wrong lease_id, token or session are 409 lease_lost, not retryable, and change nothing', async () => {
      const route = 'lease://lost/a/1';
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      const held = await acquire(route, a.sessionId);
      assert.equal(held.status, 200);
      const good = { sessionId: a.sessionId, leaseId: held.body.lease.lease_id as string, fencingToken: held.body.lease.fencing_token as number };
      const wrong = [
        { ...good, leaseId: 'ls_not_this_one' },
        { ...good, fencingToken: good.fencingToken + 1 },
        { ...good, fencingToken: good.fencingToken - 1 },
        { ...good, sessionId: b.sessionId },
        { ...good, sessionId: 'ss_unknown' },
      ];
      for (const proof of wrong) {
        for (const action of ['renew', 'release', 'checkpoint'] as const) {
          expectError(await holderCall(action, route, proof), 409, 'lease_lost');
        }
      }
      const after = await s.call('GET', leasePath(route));
      assert.equal(after.status, 200);
      assert.equal(after.body.lease.fencing_token, good.fencingToken);
      assert.equal(after.body.lease.renewal_count, 0);
      expectError(await s.call('GET', leasePath(route, 'checkpoint')), 404, 'checkpoint_not_found');
    });

    test('after release, the old proof is lease_lost', async () => {
      const route = 'lease://lost/a/2';
      const a = await s.openSession('a');
      const held = await acquire(route, a.sessionId);
      const proof = { sessionId: a.sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token };
      assert.equal((await holderCall('release', route, proof)).status, 200);
      for (const action of ['renew', 'release', 'checkpoint'] as const) expectError(await holderCall(action, route, proof), 409, 'lease_lost');
    });

    test('after the session closed, its lease proof is lease_lost', async () => {
      const route = 'lease://lost/a/3';
      const a = await s.openSession('a');
      const held = await acquire(route, a.sessionId);
      const closed = await s.call('POST', '/api/v1/sessions/close', { session_id: a.sessionId });
      assert.equal(closed.status, 200);
      assert.equal(closed.body.released, 1);
      const proof = { sessionId: a.sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token };
      for (const action of ['renew', 'release', 'checkpoint'] as const) expectError(await holderCall(action, route, proof), 409, 'lease_lost');
      expectError(await s.call('GET', leasePath(route)), 404, 'lease_not_found');
    });

    test('a predecessor’s proof is lease_lost against its successor, which it never touches', async () => {
      const route = 'lease://lost/a/4';
      const a = await s.openSession('a');
      const first = await acquire(route, a.sessionId);
      const proof = { sessionId: a.sessionId, leaseId: first.body.lease.lease_id, fencingToken: first.body.lease.fencing_token };
      assert.equal((await holderCall('release', route, proof)).status, 200);
      const second = await acquire(route, a.sessionId);
      assert.equal(second.status, 200);
      expectError(await holderCall('release', route, proof), 409, 'lease_lost');
      const inspect = await s.call('GET', leasePath(route));
      assert.equal(inspect.body.lease.fencing_token, second.body.lease.fencing_token);
    });
  });

  describe('idempotency_conflict and replay', () => {
    test('same request_id: same body replays with Idempotent-Replay; a different body is 409 idempotency_conflict, not retryable; replay survives release and session close', async () => {
      const route = 'lease://idem/a/1';
      const a = await s.openSession('a');
      const body = { session_id: a.sessionId, request_id: rid('idem'), ttl_ms: 20_000, metadata: { shard: 3 } };
      const first = await s.call('POST', leasePath(route, 'acquire'), body);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers['idempotent-replay'], undefined);

      const replay = await s.call('POST', leasePath(route, 'acquire'), { metadata: { shard: 3 }, ttl_ms: 20_000, request_id: body.request_id, session_id: a.sessionId });
      assert.equal(replay.status, 200, replay.text);
      assert.equal(replay.headers['idempotent-replay'], 'true');
      assert.equal(replay.body.code, 'lease_acquired');
      assert.equal(replay.body.lease.lease_id, first.body.lease.lease_id);
      assert.equal(replay.body.lease.fencing_token, first.body.lease.fencing_token);
      assert.notEqual(replay.body.correlation_id, first.body.correlation_id);
      assert.equal(replay.headers['x-correlation-id'], replay.body.correlation_id);

      expectError(await s.call('POST', leasePath(route, 'acquire'), { ...body, ttl_ms: 25_000 }), 409, 'idempotency_conflict', false);
      expectError(await s.call('POST', leasePath(route, 'acquire'), { ...body, metadata: { shard: 4 } }), 409, 'idempotency_conflict', false);

      const proof = { sessionId: a.sessionId, leaseId: first.body.lease.lease_id, fencingToken: first.body.lease.fencing_token };
      assert.equal((await holderCall('release', route, proof)).status, 200);
      assert.equal((await s.call('POST', '/api/v1/sessions/close', { session_id: a.sessionId })).status, 200);

      const late = await s.call('POST', leasePath(route, 'acquire'), body);
      assert.equal(late.status, 200, late.text);
      assert.equal(late.headers['idempotent-replay'], 'true');
      assert.equal(late.body.lease.lease_id, first.body.lease.lease_id);
      assert.equal(late.body.lease.fencing_token, first.body.lease.fencing_token);
      // The replay changed nothing: the route is still free.
      expectError(await s.call('GET', leasePath(route)), 404, 'lease_not_found');
    });

    test('an omitted field and the same field with its default value are different inputs', async () => {
      const route = 'lease://idem/a/2';
      const a = await s.openSession('a');
      const body = { session_id: a.sessionId, request_id: rid('idem') };
      assert.equal((await s.call('POST', leasePath(route, 'acquire'), body)).status, 200);
      expectError(await s.call('POST', leasePath(route, 'acquire'), { ...body, ttl_ms: 30_000 }), 409, 'idempotency_conflict', false);
    });

    test('renew and release replay too, and conflict on different inputs', async () => {
      const route = 'lease://idem/a/3';
      const a = await s.openSession('a');
      const held = await acquire(route, a.sessionId);
      const base = { session_id: a.sessionId, lease_id: held.body.lease.lease_id, fencing_token: held.body.lease.fencing_token };
      const renew = { ...base, request_id: rid('renew'), ttl_ms: 40_000 };
      const r1 = await s.call('POST', leasePath(route, 'renew'), renew);
      assert.equal(r1.status, 200, r1.text);
      const r2 = await s.call('POST', leasePath(route, 'renew'), renew);
      assert.equal(r2.status, 200);
      assert.equal(r2.headers['idempotent-replay'], 'true');
      assert.equal(r2.body.lease.renewal_count, 1);
      expectError(await s.call('POST', leasePath(route, 'renew'), { ...renew, ttl_ms: 50_000 }), 409, 'idempotency_conflict', false);
      const inspect = await s.call('GET', leasePath(route));
      assert.equal(inspect.body.lease.renewal_count, 1, 'the replay renewed nothing');

      const release = { ...base, request_id: rid('release') };
      assert.equal((await s.call('POST', leasePath(route, 'release'), release)).status, 200);
      const again = await s.call('POST', leasePath(route, 'release'), release);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.headers['idempotent-replay'], 'true');
      assert.equal(again.body.fencing_token, held.body.lease.fencing_token);
    });

    test('a failed request is not recorded: its retry runs again', async () => {
      const route = 'lease://idem/a/4';
      const a = await s.openSession('a');
      const b = await s.openSession('b');
      const held = await acquire(route, a.sessionId);
      const body = { session_id: b.sessionId, request_id: rid('retry') };
      expectError(await s.call('POST', leasePath(route, 'acquire'), body), 409, 'lease_conflict', true);
      const proof = { sessionId: a.sessionId, leaseId: held.body.lease.lease_id, fencingToken: held.body.lease.fencing_token };
      assert.equal((await holderCall('release', route, proof)).status, 200);
      const retry = await s.call('POST', leasePath(route, 'acquire'), body);
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.headers['idempotent-replay'], undefined);
    });
  });
});

describe('rate_limited (waiter queue full)', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ engine: { limits: { waitersPerRoute: 1 } } });
  });
  after(() => s.close());

  test('a waiter beyond the queue limit is 429 rate_limited, retryable', async () => {
    const route = 'lease://rate/a/1';
    const a = await s.openSession('a');
    const b = await s.openSession('b');
    const c = await s.openSession('c');
    const held = await s.call('POST', leasePath(route, 'acquire'), { session_id: a.sessionId, request_id: rid() });
    assert.equal(held.status, 200);
    const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: b.sessionId, request_id: rid(), wait_ms: 10_000 });
    await until(async () => (await s.call('GET', leasePath(route))).body.lease?.waiters === 1, 'the waiter to queue');

    const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: c.sessionId, request_id: rid(), wait_ms: 5_000 });
    expectError(r, 429, 'rate_limited', true);

    const rel = await s.call('POST', leasePath(route, 'release'), {
      session_id: a.sessionId,
      request_id: rid(),
      lease_id: held.body.lease.lease_id,
      fencing_token: held.body.lease.fencing_token,
    });
    assert.equal(rel.status, 200);
    const granted = await waiting;
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.queued, true);
  });
});
