/**
 * LIST cursors are sealed (AES-256-GCM under a key derived from the server
 * secret): a page that runs out of its examine budget resumes after a route
 * it examined but did not return, which may lie outside the caller's
 * selector and grant; the caller must learn nothing from the cursor, and any
 * altered cursor is `cursor_invalid`.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
let reader: string;
// Realm wildcard, area and resource literal: the scan reads resource `doc`'s
// index range and tests the area per examined route, so it examines routes
// outside the selector.
const SELECTOR = 'lease://*/a/doc';

before(async () => {
  // A budget of 2 examined routes a page, so pages stop on routes outside the selector.
  s = await startTestServer({ engine: { limits: { listBudget: 2 } } });
  const { sessionId } = await s.openSession('holder');
  for (const route of ['lease://vault-1/a/doc', 'lease://vault-2/secret-plans/doc', 'lease://vault-3/secret-keys/doc', 'lease://vault-4/a/doc', 'lease://vault-5/secret-x/doc']) {
    const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 600_000 });
    assert.equal(r.status, 200, r.text);
  }
  reader = await s.createToken([`${SELECTOR}#read`]);
});
after(() => s.close());

/** Every way a caller might read a cursor: the text, and base64url-decoded whole or by dot-separated part. */
function readings(cursor: string): string[] {
  const parts = [cursor, ...cursor.split('.')];
  return [cursor, ...parts.map((p) => Buffer.from(p, 'base64url').toString('latin1')), ...parts.map((p) => Buffer.from(p, 'base64').toString('latin1'))];
}

async function allCursors(): Promise<{ cursors: string[]; routes: string[] }> {
  const cursors: string[] = [];
  const routes: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 20; i++) {
    const q = `selector=${encodeURIComponent(SELECTOR)}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await s.call('GET', `/api/v1/leases?${q}`, undefined, { token: reader });
    assert.equal(r.status, 200, r.text);
    routes.push(...r.body.items.map((i: { route: string }) => i.route));
    cursor = r.body.next_cursor;
    if (!cursor) break;
    cursors.push(cursor);
  }
  return { cursors, routes };
}

test('a cursor of a budget-limited page reveals no route, not even one outside the selector and grant', async () => {
  const { cursors, routes } = await allCursors();
  assert.deepEqual(routes, ['lease://vault-1/a/doc', 'lease://vault-4/a/doc'], 'paging still returns every match, once');
  assert.ok(cursors.length >= 2, `pages stopped on their budget (${cursors.length} cursors)`);
  for (const c of cursors) {
    for (const text of readings(c)) {
      assert.doesNotMatch(text, /secret|vault|lease:|doc/, `cursor ${c} reads as ${JSON.stringify(text.slice(0, 80))}`);
    }
  }
});

test('the same position sealed twice gives different cursors (random IV), both valid', async () => {
  const a = (await allCursors()).cursors[0]!;
  const b = (await allCursors()).cursors[0]!;
  assert.notEqual(a, b);
});

test('any altered byte, a truncated cursor, or another server’s cursor is 400 cursor_invalid', async () => {
  const cursor = (await allCursors()).cursors[0]!;
  const bytes = Buffer.from(cursor, 'base64url');
  const altered: string[] = [];
  for (const i of [0, 5, 11, 12, 13, Math.floor(bytes.length / 2), bytes.length - 17, bytes.length - 1]) {
    const b = Buffer.from(bytes);
    b[i] = b[i]! ^ 0x01;
    altered.push(b.toString('base64url'));
  }
  // Another spelling of the same bytes: a last character that differs only in the bits base64 leaves unused.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(cursor.at(-1)!);
  const spellings = [...alphabet].filter((ch, i) => i !== last && Buffer.from(cursor.slice(0, -1) + ch, 'base64url').equals(bytes));
  assert.ok(bytes.length % 3 === 0 || spellings.length > 0, 'a cursor whose length leaves unused bits has other spellings');
  altered.push(...spellings.map((ch) => cursor.slice(0, -1) + ch));
  altered.push(cursor.slice(0, -4), cursor.slice(4), `${cursor}.x`, Buffer.from(JSON.stringify({ b: {}, p: 'lease://vault/z/doc' })).toString('base64url'));
  const other = await startTestServer({ engine: { limits: { listBudget: 2 } } });
  try {
    const { sessionId } = await other.openSession('o');
    for (const route of ['lease://vault/a/doc', 'lease://vault/b/doc', 'lease://vault/c/doc']) await other.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
    const r = await other.call('GET', `/api/v1/leases?selector=${encodeURIComponent(SELECTOR)}&limit=1`);
    assert.equal(typeof r.body.next_cursor, 'string');
    altered.push(r.body.next_cursor);
  } finally {
    await other.close();
  }
  for (const c of altered) {
    const r = await s.call('GET', `/api/v1/leases?selector=${encodeURIComponent(SELECTOR)}&limit=1&cursor=${encodeURIComponent(c)}`, undefined, { token: reader });
    assert.deepEqual([r.status, r.body.code], [400, 'cursor_invalid'], c);
  }
});
