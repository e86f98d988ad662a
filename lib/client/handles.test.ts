/**
 * Sessions and lease handles against a scripted fetch (no server): what the
 * client refuses itself before any request (`fromServer: false`, status 0,
 * a message that reads as a sentence), the typed events of handles and
 * sessions (this file is type-checked by `tsc --noEmit -p .`: listeners use
 * `e.request` without a cast), and the option types of the operator calls.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseholdClient, LeaseholdError, ReleaseRequestedEvent, type LeaseHandle, type PendingReleaseRequest, type Session } from './index';

const BASE = 'http://leasehold.test';
const NOW = '2026-01-01T00:00:00.000Z';

function heldLease(route: string, releaseRequest: PendingReleaseRequest | null = null): Record<string, unknown> {
  return {
    route,
    lease_id: 'ls_1',
    owner_id: 'worker-1',
    holder_incarnation: 'hi_1',
    fencing_token: 7,
    acquired_at: NOW,
    renewed_at: NOW,
    expires_at: NOW,
    max_expires_at: NOW,
    ttl_ms: 60_000,
    remaining_ms: 60_000,
    renewal_count: 0,
    revision: 1,
    metadata: null,
    waiters: 0,
    release_request: releaseRequest && { requested_at: releaseRequest.requested_at, reason: releaseRequest.reason, token_id: 'tk_1' },
  };
}

/**
 * A fetch that answers as the server would for one session and its leases:
 * acquire, renew (listing `pending` release requests), release, keepalive
 * (`session_not_found` once `gone`) and close. Records every call.
 */
class ScriptedServer {
  readonly calls: string[] = [];
  pending: PendingReleaseRequest[] = [];
  gone = false;

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    this.calls.push(`${method} ${url.pathname}`);
    const json = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-correlation-id': 'c_test' } });
    const path = url.pathname;
    if (path === '/api/v1/sessions' && method === 'POST') {
      return json(201, { session: { session_id: 'ss_1', holder_incarnation: 'hi_1', owner_id: 'worker-1', ttl_ms: 60_000, created_at: NOW, expires_at: NOW, lease_count: 0 } });
    }
    if (path === '/api/v1/sessions/keepalive') {
      if (this.gone) return json(404, { status: 'error', code: 'session_not_found', message: 'session not found', retryable: false, correlation_id: 'c_gone' });
      return json(200, { session: { holder_incarnation: 'hi_1', owner_id: 'worker-1', ttl_ms: 60_000, created_at: NOW, expires_at: NOW, lease_count: 1 } });
    }
    if (path === '/api/v1/sessions/close') return json(200, { closed: true });
    const m = /^\/api\/v1\/leases\/([^/]+)\/([^/]+)\/([^/]+)\/(acquire|renew|release)$/.exec(path);
    if (m) {
      const route = `lease://${m.slice(1, 4).map(decodeURIComponent).join('/')}`;
      if (m[4] === 'acquire' && m[3] === 'taken') return json(409, { status: 'error', code: 'lease_conflict', message: `${route} is held`, retryable: false, correlation_id: 'c_conflict' });
      if (m[4] === 'acquire') return json(200, { lease: heldLease(route), queued: false });
      if (m[4] === 'renew') return json(200, { lease: heldLease(route, this.pending[0]), release_requests: this.pending });
      return json(200, { route, fencing_token: 7 });
    }
    return json(404, { status: 'error', code: 'not_found', message: `no ${method} ${path}`, retryable: false });
  };
}

async function opened(): Promise<{ server: ScriptedServer; client: LeaseholdClient; session: Session }> {
  const server = new ScriptedServer();
  const client = new LeaseholdClient({ baseUrl: BASE, token: 'lh_test_token', fetch: server.fetch });
  const session = await client.openSession({ ownerId: 'worker-1', ttlMs: 60_000 });
  return { server, client, session };
}

/** A refusal the client made itself: a server code maybe, but never the server's answer. */
function assertLocalRefusal(e: unknown, code: string, message: string): true {
  assert.ok(e instanceof LeaseholdError, `expected a LeaseholdError, got ${String(e)}`);
  assert.equal(e.code, code);
  assert.equal(e.message, message);
  assert.equal(e.status, 0);
  assert.equal(e.fromServer, false, 'refused by the client, not the server');
  assert.equal(e.retryable, false);
  assert.equal(e.correlationId, undefined);
  return true;
}

test('a route the client refuses before sending says fromServer: false, and says why in a sentence', async () => {
  const { server, client, session } = await opened();
  try {
    const before = server.calls.length;
    await assert.rejects(session.acquire('lease://acme/renderers/*'), (e) =>
      assertLocalRefusal(e, 'invalid_request', '"lease://acme/renderers/*" is not a valid route: it cannot contain wildcards'),
    );
    for (const [route, why] of [
      ['lease://acme/renderers', 'it must have exactly three segments (realm/area/resource)'],
      ['lease://acme/**/doc-1', 'it cannot contain wildcards'],
      ['https://acme/renderers/doc-1', 'it must start with lease://'],
      ['lease://', 'it has no segments'],
      ['lease://acme/render ers/doc-1', 'it has an invalid segment "render ers"'],
      [`lease://acme/renderers/${'x'.repeat(400)}`, 'it is longer than 400 bytes'],
    ] as const) {
      const message = `${JSON.stringify(route)} is not a valid route: ${why}`;
      await assert.rejects(session.acquire(route), (e) => assertLocalRefusal(e, 'invalid_request', message), route);
      // Every call that takes a route refuses it the same way.
      await assert.rejects(client.inspect(route), (e) => assertLocalRefusal(e, 'invalid_request', message), route);
      await assert.rejects(client.forceRelease(route, { reason: 'stuck renderer, OPS-1', expectedFencingToken: 1 }), (e) => assertLocalRefusal(e, 'invalid_request', message), route);
      await assert.rejects(client.policies.explain(route), (e) => assertLocalRefusal(e, 'invalid_request', message), route);
    }
    assert.deepEqual(server.calls.slice(before), [], 'nothing was sent');

    // The server's own refusal of the same kind keeps fromServer: true.
    await assert.rejects(session.acquire('lease://acme/renderers/taken'), (e) => {
      assert.ok(e instanceof LeaseholdError);
      assert.deepEqual([e.code, e.status, e.fromServer, e.correlationId], ['lease_conflict', 409, true, 'c_conflict']);
      return true;
    });
  } finally {
    await session.close();
  }
});

test('a released handle and a closed session refuse further calls with closed, in plain words', async () => {
  const { session } = await opened();
  try {
    const held = await session.acquire('lease://acme/renderers/doc-1');
    await held.release();
    // renew() throws at once, checkpoint() rejects: either way, the same error.
    await assert.rejects(async () => held.renew(), (e) => assertLocalRefusal(e, 'closed', 'the lease handle was released'));
    await assert.rejects(held.checkpoint({ page: 1 }), (e) => assertLocalRefusal(e, 'closed', 'the lease handle was released'));
    assert.equal((held.signal.reason as LeaseholdError).message, 'the lease handle was released');
  } finally {
    await session.close();
  }
  await assert.rejects(session.acquire('lease://acme/renderers/doc-2'), (e) => assertLocalRefusal(e, 'closed', 'session is closed'));
});

test('releaseRequested listeners get a ReleaseRequestedEvent, typed: e.request without a cast', async () => {
  const { server, session } = await opened();
  try {
    const held = await session.acquire('lease://acme/renderers/doc-1');
    const reasons: string[] = [];
    const handles: LeaseHandle[] = [];
    const seen = new Promise<ReleaseRequestedEvent>((resolve) => held.addEventListener('releaseRequested', (e) => resolve(e), { once: true }));
    held.addEventListener('releaseRequested', (e) => reasons.push(`${e.request.route} ${e.request.fencing_token}: ${e.request.reason}`));
    held.addEventListener('releaseRequested', function (e) {
      handles.push(this);
      reasons.push(e.request.requested_at);
    });
    const removed = (e: ReleaseRequestedEvent): void => void reasons.push(`removed listener called: ${e.request.reason}`);
    held.addEventListener('releaseRequested', removed);
    held.removeEventListener('releaseRequested', removed);
    // Any other type still takes a plain listener.
    held.addEventListener('something-else', (e: Event) => void e);

    const request: PendingReleaseRequest = { route: held.route, fencing_token: held.fencingToken, requested_at: NOW, reason: 'nightly rebuild needs this shard' };
    server.pending = [request];
    await held.renew();
    const e = await seen;
    assert.ok(e instanceof ReleaseRequestedEvent);
    assert.equal(e.type, 'releaseRequested');
    assert.deepEqual(e.request, request);
    assert.deepEqual(reasons, [`lease://acme/renderers/doc-1 7: nightly rebuild needs this shard`, NOW]);
    assert.deepEqual(handles, [held], 'this is the handle');
    assert.deepEqual(held.releaseRequest, request);
  } finally {
    await session.close();
  }
});

test('a handle\'s signals say the same whether read before or only after what they signal', async () => {
  // The controllers are made when first read (docs/sdk.md "Memory"): one read late is already aborted, with the same reason.
  const { server, session } = await opened();
  try {
    const early = await session.acquire('lease://acme/renderers/doc-1');
    const late = await session.acquire('lease://acme/renderers/doc-2');
    const aborted: unknown[] = [];
    early.signal.addEventListener('abort', () => aborted.push(early.signal.reason));
    early.releaseRequested.addEventListener('abort', () => aborted.push(early.releaseRequested.reason));
    assert.equal(early.signal.aborted, false);
    assert.equal(early.releaseRequested.aborted, false);
    assert.equal(early.releaseRequest, undefined);

    const request = (h: LeaseHandle): PendingReleaseRequest => ({ route: h.route, fencing_token: h.fencingToken, requested_at: NOW, reason: `let go of ${h.route}` });
    server.pending = [request(early), request(late)];
    await early.renew();
    assert.deepEqual(aborted, [request(early)], 'the early listener heard the request');
    for (const h of [early, late]) {
      assert.equal(h.releaseRequested.aborted, true, h.route);
      assert.deepEqual(h.releaseRequested.reason, request(h), h.route);
      assert.deepEqual(h.releaseRequest, request(h), h.route);
    }

    server.pending = [];
    await early.release();
    await late.release();
    for (const h of [early, late]) {
      assert.equal(h.signal.aborted, true, h.route);
      assert.equal((h.signal.reason as LeaseholdError).message, 'the lease handle was released', h.route);
      assert.equal(h.lostReason, undefined, 'released, not lost');
    }
    assert.equal(aborted.length, 2, 'the early signal fired once, at the release');
  } finally {
    await session.close();
  }
});

test('a session\'s lost listener is typed too, with the session as this', async () => {
  const { server, session } = await opened();
  const states: string[] = [];
  const onLost = function (this: Session, e: Event): void {
    states.push(`${e.type}: ${this.state}`);
  };
  try {
    session.addEventListener('lost', onLost);
    session.addEventListener('lost', (e) => states.push(`${e.type} (${(session.lost.reason as LeaseholdError).code})`));
    server.gone = true;
    await assert.rejects(session.keepAlive(), (e) => e instanceof LeaseholdError && e.code === 'session_not_found' && e.fromServer);
    assert.deepEqual(states, ['lost: lost', 'lost (session_not_found)']);
    session.removeEventListener('lost', onLost);
  } finally {
    await session.close(); // nothing to do once lost; stops the keepalives if the test failed before
  }
});

test('requestRelease takes no lockDelayMs; forceRelease and revoke do', () => {
  // Type-level only (checked by tsc), never called.
  const typeCheck = (client: LeaseholdClient): void => {
    void client.requestRelease('lease://acme/renderers/doc-1', { reason: 'please let go when you can', expectedFencingToken: 7 });
    // @ts-expect-error a release request ends nothing, so it starts no lock-delay to shorten
    void client.requestRelease('lease://acme/renderers/doc-1', { reason: 'please let go when you can', expectedFencingToken: 7, lockDelayMs: 0 });
    void client.forceRelease('lease://acme/renderers/doc-1', { reason: 'stuck renderer, OPS-1', expectedFencingToken: 7, lockDelayMs: 0 });
    void client.revoke('lease://acme/renderers/doc-1', { reason: 'leaked credential, SEC-2', expectedFencingToken: 7, lockDelayMs: 0, closeSession: true });
  };
  assert.equal(typeof typeCheck, 'function');
});
