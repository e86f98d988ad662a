import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';
import { waitFor } from '../testing/wait';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

const REASON = 'stuck renderer after node drain, ticket OPS-1234';

/** Open a session and acquire `route`; returns the holder's proof. */
async function hold(route: string, ownerId = 'worker') {
  const { sessionId, incarnation } = await s.openSession(ownerId);
  const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
  assert.equal(a.status, 200, a.text);
  return { sessionId, incarnation, leaseId: a.body.lease.lease_id as string, token: a.body.lease.fencing_token as number };
}

function proof(h: { sessionId: string; leaseId: string; token: number }) {
  return { session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() };
}

async function inspectToken(route: string): Promise<number | null> {
  const r = await s.call('GET', leasePath(route));
  return r.status === 200 ? (r.body.lease.fencing_token as number) : null;
}

describe('force-release and revoke', () => {
  test('force-release frees the route and answers with the freed token', async () => {
    const route = 'lease://ops/fr/happy';
    const h = await hold(route);
    const r = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.code, r.body.route, r.body.fencing_token], ['lease_force_released', route, h.token]);
    assert.equal(await inspectToken(route), null);
  });

  test('revoke frees the route; without close_session the holder session stays open', async () => {
    const route = 'lease://ops/rv/happy';
    const h = await hold(route);
    const r = await s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.code, r.body.fencing_token, r.body.sessions_closed], ['lease_revoked', h.token, 0]);
    assert.equal(await inspectToken(route), null);
    const k = await s.call('POST', '/api/v1/sessions/keepalive', { session_id: h.sessionId });
    assert.equal(k.body.code, 'session_kept_alive');
  });

  test('the former holder gets lease_lost on renew, release and checkpoint after either action', async () => {
    for (const action of ['force-release', 'revoke']) {
      const route = `lease://ops/lost/${action}`;
      const h = await hold(route);
      const r = await s.call('POST', leasePath(route, action), { request_id: rid(), reason: REASON, expected_fencing_token: h.token });
      assert.equal(r.status, 200, r.text);
      const renew = await s.call('POST', leasePath(route, 'renew'), proof(h));
      const release = await s.call('POST', leasePath(route, 'release'), proof(h));
      const cp = await s.call('PUT', leasePath(route, 'checkpoint'), { ...proof(h), value: 'late write' });
      for (const x of [renew, release, cp]) {
        assert.equal(x.status, 409, x.text);
        assert.equal(x.body.code, 'lease_lost');
      }
      const read = await s.call('GET', leasePath(route, 'checkpoint'));
      assert.equal(read.body.code, 'checkpoint_not_found', 'the stale holder wrote nothing');
    }
  });

  test('a wrong expected token is lease_mismatch and the lease stays with its holder', async () => {
    const route = 'lease://ops/mismatch/r';
    const h = await hold(route);
    for (const action of ['force-release', 'revoke']) {
      const r = await s.call('POST', leasePath(route, action), { request_id: rid(), reason: REASON, expected_fencing_token: h.token + 1 });
      assert.equal(r.status, 409, r.text);
      assert.deepEqual([r.body.code, r.body.retryable], ['lease_mismatch', false]);
    }
    assert.equal(await inspectToken(route), h.token);
    const renew = await s.call('POST', leasePath(route, 'renew'), proof(h));
    assert.equal(renew.body.code, 'lease_renewed', 'the holder is untouched');
  });

  test('an operator never removes a successor they did not see', async () => {
    const route = 'lease://ops/successor/r';
    const first = await hold(route);
    await s.call('POST', leasePath(route, 'release'), proof(first));
    const second = await hold(route, 'successor');
    const r = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: first.token });
    assert.equal(r.body.code, 'lease_mismatch');
    assert.equal(await inspectToken(route), second.token);
  });

  test('a free route is lease_not_found', async () => {
    const r = await s.call('POST', leasePath('lease://ops/free/r', 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: 1 });
    assert.deepEqual([r.status, r.body.code], [404, 'lease_not_found']);
  });

  test('missing, short, over-long and control-character reasons are invalid_request and change nothing', async () => {
    const route = 'lease://ops/reason/r';
    const h = await hold(route);
    const bodies = [
      { request_id: rid(), expected_fencing_token: h.token },
      { request_id: rid(), reason: 'too short', expected_fencing_token: h.token },
      { request_id: rid(), reason: 'x'.repeat(501), expected_fencing_token: h.token },
      { request_id: rid(), reason: 'ten chars\u0000!', expected_fencing_token: h.token },
      { request_id: rid(), reason: REASON },
      { request_id: rid(), reason: REASON, expected_fencing_token: h.token, close_session: 'yes' },
    ];
    for (const action of ['force-release', 'revoke']) {
      for (const body of bodies) {
        if (action === 'force-release' && 'close_session' in body) continue;
        const r = await s.call('POST', leasePath(route, action), body);
        assert.equal(r.status, 400, `${action} ${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
        assert.equal(r.body.code, 'invalid_request');
      }
    }
    // Exactly 10 and 500 characters (code points, not bytes) are accepted.
    assert.equal(await inspectToken(route), h.token);
    const ok = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: 'é'.repeat(500), expected_fencing_token: h.token });
    assert.equal(ok.status, 200, ok.text);
    const h2 = await hold(route);
    const ok2 = await s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: 'line one\n2', expected_fencing_token: h2.token });
    assert.equal(ok2.status, 200, ok2.text);
  });

  test('read-only and write-only tokens are refused with 403 before any effect', async () => {
    const route = 'lease://ops/authz/r';
    const h = await hold(route);
    const reader = await s.createToken(['lease://ops/**#read']);
    const writer = await s.createToken(['lease://ops/**#write']);
    const narrowAdmin = await s.createToken(['lease://ops/other/*#admin']);
    for (const token of [reader, writer, narrowAdmin]) {
      for (const action of ['force-release', 'revoke']) {
        // A malformed body too: permission is checked before the body.
        for (const body of [{ request_id: rid(), reason: REASON, expected_fencing_token: h.token }, { nonsense: true }]) {
          const r = await s.call('POST', leasePath(route, action), body, { token });
          assert.equal(r.status, 403, r.text);
          assert.equal(r.body.code, 'access_denied');
        }
      }
    }
    assert.equal(await inspectToken(route), h.token);
    const renew = await s.call('POST', leasePath(route, 'renew'), proof(h));
    assert.equal(renew.body.code, 'lease_renewed');
  });

  test('an admin grant on the route’s area is enough (single-grant containment)', async () => {
    const route = 'lease://ops/area-admin/r';
    const h = await hold(route);
    const areaAdmin = await s.createToken(['lease://ops/area-admin/*#admin']);
    const r = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token }, { token: areaAdmin });
    assert.equal(r.status, 200, r.text);
  });

  test('a replay by request_id returns the original answer, even after the route was taken again', async () => {
    const route = 'lease://ops/replay/r';
    const h = await hold(route);
    const body = { request_id: rid(), reason: REASON, expected_fencing_token: h.token };
    const first = await s.call('POST', leasePath(route, 'force-release'), body);
    assert.equal(first.status, 200);
    const next = await hold(route, 'next');
    const again = await s.call('POST', leasePath(route, 'force-release'), body);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replay'], 'true');
    assert.deepEqual([again.body.route, again.body.fencing_token], [first.body.route, first.body.fencing_token]);
    assert.notEqual(again.body.correlation_id, first.body.correlation_id);
    assert.equal(await inspectToken(route), next.token, 'the replay removed nothing');
    const changed = await s.call('POST', leasePath(route, 'force-release'), { ...body, reason: `${REASON} (edited)` });
    assert.equal(changed.body.code, 'idempotency_conflict');

    const rv = { request_id: rid(), reason: REASON, expected_fencing_token: next.token, close_session: true };
    const r1 = await s.call('POST', leasePath(route, 'revoke'), rv);
    const r2 = await s.call('POST', leasePath(route, 'revoke'), rv);
    assert.equal(r2.headers['idempotent-replay'], 'true');
    assert.deepEqual(r2.body.sessions_closed, r1.body.sessions_closed);
  });

  test('a queued waiter is granted the route by a force-release', async () => {
    const route = 'lease://ops/waiter/r';
    const h = await hold(route);
    const w = await s.openSession('waiter');
    const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: w.sessionId, request_id: rid(), wait_ms: 10_000 });
    // The waiter is queued once the inspect view counts it.
    for (let i = 0; i < 100; i++) {
      const r = await s.call('GET', leasePath(route));
      if (r.body.lease?.waiters === 1) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const fr = await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token });
    assert.equal(fr.status, 200, fr.text);
    const granted = await waiting;
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.queued, true);
    assert.equal(granted.body.lease.holder_incarnation, w.incarnation);
    assert.ok(granted.body.lease.fencing_token > h.token);
    assert.equal(await inspectToken(route), granted.body.lease.fencing_token);
  });

  test('revoke with close_session releases the holder’s other leases and closes its session', async () => {
    const { sessionId } = await s.openSession('compromised');
    const routes = ['lease://ops/compromised/a', 'lease://ops/compromised/b', 'lease://ops/elsewhere/c'];
    const held: number[] = [];
    for (const route of routes) {
      const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      held.push(a.body.lease.fencing_token);
    }
    const bystander = await hold('lease://ops/compromised/z', 'bystander');
    const r = await s.call('POST', leasePath(routes[0]!, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: held[0], close_session: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.sessions_closed, 1);
    for (const route of routes) assert.equal(await inspectToken(route), null, route);
    assert.equal(await inspectToken('lease://ops/compromised/z'), bystander.token);
    const k = await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId });
    assert.equal(k.body.code, 'session_not_found');
    const acq = await s.call('POST', leasePath(routes[1]!, 'acquire'), { session_id: sessionId, request_id: rid() });
    assert.equal(acq.body.code, 'session_not_found');
  });

  test('revoke with close_session by an admin of one route only is access_denied when the session holds other routes, and nothing changes', async () => {
    // The attack: an admin of lease://ops/mine/* ends a session that also holds a lease it may not even inspect.
    const { sessionId } = await s.openSession('shared-holder');
    const mine = 'lease://ops/mine/a';
    const theirs = 'lease://ops/theirs/b';
    const tokens: Record<string, number> = {};
    for (const route of [mine, theirs]) {
      const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      assert.equal(a.status, 200, a.text);
      tokens[route] = a.body.lease.fencing_token;
    }
    const routeAdmin = await s.createToken(['lease://ops/mine/*#admin']);
    const before = (await s.call('GET', '/api/v1/leases?selector=lease://ops/**')).body.revision as number;
    const r = await s.call('POST', leasePath(mine, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: tokens[mine], close_session: true }, { token: routeAdmin });
    assert.deepEqual([r.status, r.body.code], [403, 'access_denied'], r.text);
    assert.equal(await inspectToken(mine), tokens[mine], 'its own route is still held');
    assert.equal(await inspectToken(theirs), tokens[theirs], 'the other route is still held');
    assert.equal((await s.call('POST', '/api/v1/sessions/keepalive', { session_id: sessionId })).body.code, 'session_kept_alive', 'the session is open');
    assert.equal((await s.call('GET', '/api/v1/leases?selector=lease://ops/**')).body.revision, before, 'nothing changed');
    await s.flushAudit();
    const audit = await s.call('GET', `/api/v1/audit?route=${encodeURIComponent(mine)}&event_type=access_denied`);
    assert.ok(audit.body.items.some((e: { token_id: string }) => e.token_id !== null), 'the refusal is audited');

    // Without close_session the same admin may revoke its own route; an admin of both routes may close the session.
    const own = await s.call('POST', leasePath(mine, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: tokens[mine] }, { token: routeAdmin });
    assert.deepEqual([own.status, own.body.sessions_closed], [200, 0], own.text);
    const bothAdmin = await s.createToken(['lease://ops/*/*#admin']);
    const again = await s.call('POST', leasePath(theirs, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: tokens[theirs], close_session: true }, { token: bothAdmin });
    assert.deepEqual([again.status, again.body.sessions_closed], [200, 1], again.text);
  });
});

describe('races', () => {
  test('a release racing a force-release of the same lease: exactly one ends it, once', async () => {
    for (let i = 0; i < 20; i++) {
      const route = `lease://ops/race/r${i}`;
      const h = await hold(route);
      const w = await s.openSession('race-waiter');
      const waiting = s.call('POST', leasePath(route, 'acquire'), { session_id: w.sessionId, request_id: rid(), wait_ms: 20_000 });
      await waitFor(`round ${i}: the waiter queued`, async () => (await s.call('GET', leasePath(route))).body.lease?.waiters, (n) => n === 1);
      const before = (await s.call('GET', '/api/v1/leases?selector=lease://ops/race/*')).body.revision as number;
      const [rel, fr] = await Promise.all([
        s.call('POST', leasePath(route, 'release'), proof(h)),
        s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token }),
      ]);
      const granted = await waiting;
      assert.equal(granted.status, 200, granted.text);
      const winners = [rel, fr].filter((r) => r.status === 200);
      assert.equal(winners.length, 1, `round ${i}: ${rel.body.code} / ${fr.body.code}`);
      // The loser finds h's lease gone: the release is lost, the force-release meets the waiter's new token.
      if (rel.status !== 200) assert.equal(rel.body.code, 'lease_lost');
      if (fr.status !== 200) assert.equal(fr.body.code, 'lease_mismatch');
      const after = (await s.call('GET', '/api/v1/leases?selector=lease://ops/race/*')).body.revision as number;
      assert.equal(after - before, 2, `round ${i}: one end and one grant, nothing more`);
      assert.equal(await inspectToken(route), granted.body.lease.fencing_token);
    }
  });

  test('renews racing a revoke: serialized before it, all lost after it', async () => {
    const route = 'lease://ops/race/renew';
    const h = await hold(route);
    const renews = Array.from({ length: 30 }, async (_, k) => {
      await new Promise((r) => setTimeout(r, k));
      return s.call('POST', leasePath(route, 'renew'), proof(h));
    });
    const revoke = (async () => {
      await new Promise((r) => setTimeout(r, 10));
      return s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token });
    })();
    const [rv, results] = await Promise.all([revoke, Promise.all(renews)]);
    assert.equal(rv.status, 200, rv.text);
    const won = results.filter((r) => r.body.code === 'lease_renewed').map((r) => r.body.lease.renewal_count as number);
    assert.ok(results.every((r) => ['lease_renewed', 'lease_lost'].includes(r.body.code)));
    // Every successful renew committed before the revoke, one after another.
    assert.deepEqual(won.sort((a, b) => a - b), Array.from({ length: won.length }, (_, k) => k + 1));
    const after = await Promise.all(Array.from({ length: 10 }, () => s.call('POST', leasePath(route, 'renew'), proof(h))));
    assert.ok(after.every((r) => r.body.code === 'lease_lost'), 'no renew succeeds once the revoke was answered');
  });
});

describe('embed tokens', () => {
  test('an embed token reads its selector’s inventory and nothing else', async () => {
    const route = 'lease://embed/widgets/w1';
    const h = await hold(route);
    await hold('lease://embed/secret/s1');
    const e = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/widgets/*', ttl_ms: 3_600_000 });
    assert.equal(e.status, 201, e.text);
    assert.equal(e.body.code, 'embed_token_created');
    const expires = Date.parse(e.body.expires_at);
    assert.ok(Math.abs(expires - (Date.now() + 3_600_000)) < 60_000, e.body.expires_at);
    const token = e.body.token as string;

    const list = await s.call('GET', '/api/v1/leases?selector=lease://embed/widgets/*', undefined, { token });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.items.map((i: { route: string }) => i.route), [route]);
    const inspect = await s.call('GET', leasePath(route), undefined, { token });
    assert.equal(inspect.body.lease.fencing_token, h.token);

    const denied = [
      await s.call('GET', '/api/v1/leases?selector=lease://embed/**', undefined, { token }),
      await s.call('GET', leasePath('lease://embed/secret/s1'), undefined, { token }),
      await s.call('GET', leasePath(route, 'checkpoint'), undefined, { token }),
      await s.call('POST', '/api/v1/sessions', { owner_id: 'x' }, { token }),
      await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/widgets/*' }, { token }),
      await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: h.token }, { token }),
    ];
    for (const d of denied) {
      assert.equal(d.status, 403, d.text);
      assert.equal(d.body.code, 'access_denied');
    }
  });

  test('embed tokens need read containment, a valid selector, and live at most 24 h', async () => {
    const narrow = await s.createToken(['lease://embed/widgets/*#read']);
    const out = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/**' }, { token: narrow });
    assert.deepEqual([out.status, out.body.code], [403, 'access_denied']);
    const bad = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/wid*' });
    assert.deepEqual([bad.status, bad.body.code], [400, 'invalid_selector']);
    for (const ttl of [86_400_001, 59_999, 'long']) {
      const r = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/**', ttl_ms: ttl });
      assert.deepEqual([r.status, r.body.code], [400, 'invalid_request'], String(ttl));
    }
    const dflt = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/widgets/*' }, { token: narrow });
    assert.equal(dflt.status, 201, dflt.text);
    assert.ok(Math.abs(Date.parse(dflt.body.expires_at) - (Date.now() + 86_400_000)) < 60_000);
  });

  test('an embed token never outlives its creator', async () => {
    const creatorExpiry = new Date(Date.now() + 120_000).toISOString();
    const creator = await s.createToken(['lease://embed/**#read'], { expires_at: creatorExpiry });
    const e = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://embed/**' }, { token: creator });
    assert.equal(e.status, 201, e.text);
    assert.equal(e.body.expires_at, creatorExpiry);
  });
});
