import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AuditEvent } from '../engine/audit/audit';
import { leasePath, rid, startTestServer, tempDir, TEST_STORE, type TestServer } from '../testing/harness';

type Ev = AuditEvent;

const REASON = 'audit test: freeing a stuck lease';
const seq = (e: Ev) => Number(e.id.slice(3));

let s: TestServer;
let dataDir: string;
let closed = false;
/** Every secret the test handles, scanned for in the audit table at the end. */
const secrets: string[] = [];

before(async () => {
  dataDir = tempDir();
  s = await startTestServer({ dataDir });
  secrets.push(s.token);
});
after(async () => {
  if (!closed) await s.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Every event (newest first), read page by page with the root token. */
async function readAll(query = '', limit = 1_000, token?: string): Promise<Ev[]> {
  const out: Ev[] = [];
  let cursor: string | null = null;
  // A read flushes its own instance's buffer; on PostgreSQL the other instance's too.
  await s.flushAudit();
  do {
    const q: string = `/api/v1/audit?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await s.call('GET', q, undefined, token ? { token } : {});
    assert.equal(r.status, 200, r.text);
    out.push(...(r.body.items as Ev[]));
    cursor = r.body.next_cursor as string | null;
  } while (cursor);
  return out;
}

/**
 * Run `fn`; return the events it produced, oldest first. Events are told
 * apart by id, not by an id mark: on PostgreSQL two instances flush their
 * batches in either order, so a later id can carry an earlier time.
 */
async function eventsOf(fn: () => Promise<unknown>): Promise<Ev[]> {
  const before = new Set((await readAll()).map(seq));
  await fn();
  return (await readAll()).filter((e) => !before.has(seq(e))).reverse();
}

const brief = (e: Ev) => [e.event_type, e.result, e.route];

describe('the audit trail', () => {
  test('each operation produces exactly the expected events', async () => {
    const whoami = await s.call('GET', '/api/v1/auth/whoami');
    const rootId = whoami.body.token_id as string;
    const route = 'lease://audit/ops/r1';
    let sessionId = '';
    let incarnation = '';
    let lease = { lease_id: '', fencing_token: 0 };
    let cid = '';
    const proof = () => ({ session_id: sessionId, lease_id: lease.lease_id, fencing_token: lease.fencing_token, request_id: rid() });

    let ev = await eventsOf(async () => {
      ({ sessionId, incarnation } = await s.openSession('auditor-7'));
      secrets.push(sessionId);
    });
    assert.deepEqual(ev.map(brief), [['session_open', 'session_opened', null]]);
    assert.deepEqual([ev[0]!.owner_id, ev[0]!.holder_incarnation, ev[0]!.token_id], ['auditor-7', incarnation, rootId]);

    ev = await eventsOf(async () => {
      const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), metadata: { secret_key: 'metadata-value-SHOULD-NOT-APPEAR' } });
      lease = a.body.lease;
      cid = a.body.correlation_id;
    });
    assert.deepEqual(ev.map(brief), [['lease_acquire', 'lease_acquired', route]]);
    assert.equal(ev[0]!.correlation_id, cid, 'the answer’s correlation id is the one audited');
    assert.deepEqual([ev[0]!.fencing_token, ev[0]!.owner_id, ev[0]!.holder_incarnation], [lease.fencing_token, 'auditor-7', incarnation]);
    secrets.push('metadata-value-SHOULD-NOT-APPEAR');

    const other = await s.openSession('other');
    secrets.push(other.sessionId);
    ev = await eventsOf(() => s.call('POST', leasePath(route, 'acquire'), { session_id: other.sessionId, request_id: rid() }));
    assert.deepEqual(ev, [], 'lease_conflict is counted, not audited');

    ev = await eventsOf(() => s.call('POST', leasePath(route, 'renew'), proof()));
    assert.deepEqual(ev.map(brief), [['lease_renew', 'lease_renewed', route]]);

    ev = await eventsOf(() => s.call('PUT', leasePath(route, 'checkpoint'), { ...proof(), value: { v: 'checkpoint-value-SHOULD-NOT-APPEAR' } }));
    assert.deepEqual(ev.map(brief), [['lease_checkpoint', 'checkpoint_written', route]]);
    secrets.push('checkpoint-value-SHOULD-NOT-APPEAR');

    ev = await eventsOf(() => s.call('POST', leasePath(route, 'renew'), { ...proof(), fencing_token: lease.fencing_token + 1000 }));
    assert.deepEqual(ev.map(brief), [['lease_renew', 'lease_lost', route]]);
    assert.equal(ev[0]!.fencing_token, lease.fencing_token + 1000, 'the token the stale caller presented');

    const release = proof();
    ev = await eventsOf(() => s.call('POST', leasePath(route, 'release'), release));
    assert.deepEqual(ev.map(brief), [['lease_release', 'lease_released', route]]);
    ev = await eventsOf(() => s.call('POST', leasePath(route, 'release'), release));
    assert.deepEqual(ev, [], 'an idempotent replay changes nothing and is not audited again');

    const a2 = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
    ev = await eventsOf(async () => {
      await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: a2.body.lease.fencing_token + 1 });
      await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: a2.body.lease.fencing_token });
    });
    assert.deepEqual(ev.map(brief), [
      ['lease_force_release', 'lease_mismatch', route],
      ['lease_force_release', 'lease_force_released', route],
    ]);
    assert.deepEqual([ev[1]!.reason, ev[1]!.fencing_token, ev[1]!.owner_id, ev[1]!.token_id], [REASON, a2.body.lease.fencing_token, 'auditor-7', rootId]);

    const a3 = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
    await s.call('POST', leasePath('lease://audit/ops/r2', 'acquire'), { session_id: sessionId, request_id: rid() });
    ev = await eventsOf(() => s.call('POST', leasePath(route, 'revoke'), { request_id: rid(), reason: REASON, expected_fencing_token: a3.body.lease.fencing_token, close_session: true }));
    // The revoke, and the session it closed as a change of its own (same step, same operator), so a
    // search for session_close finds it; the reason stays the operator's, the choices are in details.
    // The session's other lease ends on its own route too (a system event, as an expiry is).
    assert.deepEqual(
      new Set(ev.map((e) => JSON.stringify(brief(e)))),
      new Set([
        JSON.stringify(['lease_revoke', 'lease_revoked', route]),
        JSON.stringify(['session_close', 'session_closed', null]),
        JSON.stringify(['lease_release', 'session_closed', 'lease://audit/ops/r2']),
      ]),
    );
    assert.equal(ev.length, 3);
    assert.equal(ev.find((e) => e.route === 'lease://audit/ops/r2')!.token_id, null);
    const revoked = ev.find((e) => e.event_type === 'lease_revoke')!;
    const closedBy = ev.find((e) => e.event_type === 'session_close')!;
    assert.deepEqual([revoked.reason, revoked.details], [REASON, { close_session: true }]);
    assert.deepEqual([closedBy.owner_id, closedBy.holder_incarnation, closedBy.token_id], ['auditor-7', incarnation, rootId]);
    assert.deepEqual([closedBy.reason, closedBy.details], [REASON, { revoke_of: route }]);

    let created = '';
    ev = await eventsOf(async () => {
      const r = await s.call('POST', '/api/v1/tokens', { name: 'reader', grants: ['lease://audit/**#read'] });
      created = r.body.token_id;
      secrets.push(r.body.token);
    });
    assert.deepEqual(ev.map(brief), [['token_create', 'token_created', null]]);
    assert.equal(ev[0]!.subject_token_id, created);

    ev = await eventsOf(async () => {
      const r = await s.call('POST', '/api/v1/embed-tokens', { selector: 'lease://audit/**' });
      secrets.push(r.body.token);
    });
    assert.deepEqual(ev.map(brief), [['embed_token_create', 'embed_token_created', null]]);

    const reader = secrets[secrets.length - 2]!;
    ev = await eventsOf(async () => {
      await s.call('POST', leasePath(route, 'force-release'), { request_id: rid(), reason: REASON, expected_fencing_token: 1 }, { token: reader });
      await s.call('GET', '/api/v1/leases?selector=lease://**', undefined, { token: reader });
    });
    // On PostgreSQL the two calls may land on the two instances within a millisecond: their
    // buffered events' times come from each instance's clock, so their order is not defined there.
    const denied = TEST_STORE === 'postgres' ? [...ev].sort((a, b) => String(a.route).localeCompare(String(b.route))) : ev;
    assert.deepEqual(denied.map(brief), [
      ['access_denied', 'access_denied', route],
      ['access_denied', 'access_denied', null],
    ]);
    assert.equal(denied[0]!.token_id, created);

    // Counted by the instance that answered: on PostgreSQL, either of the two.
    const invalidCredentials = () => s.apps.reduce((n, a) => n + a.engine.audit.counts.invalid_credential, 0);
    const before = invalidCredentials();
    ev = await eventsOf(() => s.call('GET', '/api/v1/leases?selector=lease://**', undefined, { token: 'lh_not_a_real_token_0000000000' }));
    assert.deepEqual(ev, [], 'invalid_credential is counted, not audited');
    assert.equal(invalidCredentials(), before + 1);

    ev = await eventsOf(() => s.call('DELETE', `/api/v1/tokens/${created}`));
    assert.deepEqual(ev.map(brief), [['token_revoke', 'token_revoked', null]]);
    assert.equal(ev[0]!.subject_token_id, created);

    ev = await eventsOf(() => s.call('POST', '/api/v1/sessions/close', { session_id: other.sessionId }));
    assert.deepEqual(ev.map(brief), [['session_close', 'session_closed', null]]);
    assert.equal(ev[0]!.owner_id, 'other');

    ev = await eventsOf(() => s.call('GET', leasePath(route)));
    assert.deepEqual(ev, [], 'reads are not audited');

    for (const e of await readAll()) {
      assert.match(e.correlation_id, /^c_/);
      assert.ok(Number.isInteger(e.latency_ms) && e.latency_ms >= 0);
    }
  });

  test('expiry and session expiry are audited as system events (real time, minimum TTLs)', async () => {
    const ev = await eventsOf(async () => {
      const { sessionId } = await s.openSession('short-lived', 2_000);
      secrets.push(sessionId);
      await s.call('POST', leasePath('lease://audit/expiry/r', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 1_000 });
      const until = Date.now() + 5_000;
      while (Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        const r = await s.call('GET', '/api/v1/audit?event_type=session_expire&limit=1');
        if (r.body.items[0]?.owner_id === 'short-lived') break;
      }
    });
    assert.deepEqual(ev.map(brief), [
      ['session_open', 'session_opened', null],
      ['lease_acquire', 'lease_acquired', 'lease://audit/expiry/r'],
      ['lease_expire', 'lease_expired', 'lease://audit/expiry/r'],
      ['session_expire', 'session_expired', null],
    ]);
    assert.equal(ev[2]!.token_id, null);
  });

  test('the query API paginates newest first without duplicates or gaps', async () => {
    const { sessionId } = await s.openSession('pager');
    secrets.push(sessionId);
    for (let i = 0; i < 120; i++) {
      const route = `lease://pages/p${i % 3}/r${i}`;
      const a = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      await s.call('POST', leasePath(route, 'release'), { session_id: sessionId, request_id: rid(), lease_id: a.body.lease.lease_id, fencing_token: a.body.lease.fencing_token });
    }
    const whole = await readAll('&route=lease://pages/**');
    assert.equal(whole.length, 240);
    for (const limit of [1, 7, 100]) {
      const paged = await readAll('&route=lease://pages/**', limit);
      assert.deepEqual(paged.map((e) => e.id), whole.map((e) => e.id), `limit ${limit}`);
    }
    assert.equal(new Set(whole.map((e) => e.id)).size, whole.length);
    for (let i = 1; i < whole.length; i++) {
      const [a, b] = [whole[i - 1]!, whole[i]!];
      assert.ok(a.time > b.time || (a.time === b.time && seq(a) > seq(b)), 'newest first: time, then id');
    }

    const releases = await readAll('&route=lease://pages/**&event_type=lease_release', 9);
    assert.equal(releases.length, 120);
    assert.ok(releases.every((e) => e.event_type === 'lease_release'));
    const p1 = await readAll('&route=lease://pages/p1/*');
    assert.equal(p1.length, 80);
    assert.ok(p1.every((e) => e.route!.startsWith('lease://pages/p1/')));
    const one = await readAll(`&route=${encodeURIComponent('lease://pages/p2/r5')}`);
    assert.deepEqual(one.map((e) => e.event_type), ['lease_release', 'lease_acquire']);
    const byResource = await readAll('&route=lease://**/r5');
    assert.deepEqual(byResource.map((e) => e.id), one.map((e) => e.id));

    // Time bounds: since inclusive, until exclusive.
    const pivot = whole[100]!.time;
    const since = await readAll(`&route=lease://pages/**&since=${pivot}`);
    const until = await readAll(`&route=lease://pages/**&until=${pivot}`);
    assert.ok(since.every((e) => e.time >= pivot) && until.every((e) => e.time < pivot));
    assert.equal(since.length + until.length, 240);

    // A cursor is bound to its filter.
    const first = await s.call('GET', '/api/v1/audit?route=lease://pages/**&limit=5');
    const cursor = encodeURIComponent(first.body.next_cursor);
    for (const q of [`route=lease://pages/p1/*&cursor=${cursor}`, `route=lease://pages/**&event_type=lease_release&cursor=${cursor}`, `cursor=${cursor}x`]) {
      const r = await s.call('GET', `/api/v1/audit?${q}`);
      assert.deepEqual([r.status, r.body.code], [400, 'cursor_invalid'], q);
    }
  });

  test('reading the audit needs one admin grant containing the route filter; routeless events need admin on lease://**', async () => {
    const areaAdmin = await s.createToken(['lease://pages/**#admin']);
    const writer = await s.createToken(['lease://**#write']);
    secrets.push(areaAdmin, writer);
    for (const [token, q] of [
      [areaAdmin, ''],
      [areaAdmin, '?route=lease://**'],
      [areaAdmin, '?route=lease://audit/**'],
      [writer, '?route=lease://pages/**'],
    ] as const) {
      const r = await s.call('GET', `/api/v1/audit${q}`, undefined, { token });
      assert.deepEqual([r.status, r.body.code], [403, 'access_denied'], q);
    }
    const mine = await readAll('&route=lease://pages/**', 1_000, areaAdmin);
    assert.ok(mine.length >= 240);
    assert.ok(mine.every((e) => e.route?.startsWith('lease://pages/')), 'only routes inside the grant, no routeless events');
    const all = await readAll();
    assert.ok(all.some((e) => e.route === null), 'the root admin sees routeless events');

    for (const [q, code] of [
      ['?route=lease://pages/p*', 'invalid_selector'],
      ['?event_type=lease_teleport', 'invalid_request'],
      ['?since=yesterday', 'invalid_request'],
      ['?limit=0', 'invalid_request'],
      ['?limit=1001', 'invalid_request'],
      ['?colour=red', 'invalid_request'],
    ]) {
      const r = await s.call('GET', `/api/v1/audit${q}`);
      assert.deepEqual([r.status, r.body.code], [400, code], q);
    }
  });

  test('no audit row ever holds a secret, a session id, a metadata value or a checkpoint value', async () => {
    await s.call('GET', '/api/v1/audit?limit=1'); // flushes the buffer
    await s.close();
    closed = true;
    let rows: unknown[];
    if (s.databaseUrl) {
      const c = new pg.Client({ connectionString: s.databaseUrl });
      await c.connect();
      rows = (await c.query('SELECT * FROM audit')).rows;
      await c.end();
    } else {
      const db = new Database(join(dataDir, 'leasehold.sqlite'), { readonly: true });
      rows = db.prepare('SELECT * FROM audit').all();
      db.close();
    }
    assert.ok(rows.length > 250, `${rows.length} rows`);
    const text = JSON.stringify(rows);
    assert.ok(secrets.length >= 8);
    for (const secret of secrets) assert.equal(text.includes(secret), false, `found ${secret.slice(0, 12)}…`);
  });
});
