import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, startTestServer, type TestServer } from '../testing/harness';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

/** Log in with a token; returns the `name=value` cookie pair. */
async function login(token = s.token): Promise<string> {
  const r = await s.call('POST', '/api/v1/auth/login', { token }, { token: null });
  assert.equal(r.status, 200, r.text);
  const setCookie = String(r.headers['set-cookie']);
  return setCookie.split(';')[0]!;
}

describe('console login cookie', () => {
  test('login sets an HttpOnly, SameSite=Strict, Path=/ cookie that authenticates reads', async () => {
    const r = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null });
    assert.equal(r.body.code, 'logged_in');
    const attrs = String(r.headers['set-cookie']);
    assert.match(attrs, /HttpOnly/);
    assert.match(attrs, /SameSite=Strict/);
    assert.match(attrs, /Path=\//);
    assert.equal(attrs.includes(s.token), false, 'the cookie is not the token');
    const cookie = attrs.split(';')[0]!;
    const who = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: null, headers: { Cookie: cookie } });
    assert.equal(who.status, 200);
    assert.equal(who.body.family, 'default');
  });

  test('the cookie is Secure when the browser is on https (behind a TLS proxy)', async () => {
    const plain = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null });
    assert.doesNotMatch(String(plain.headers['set-cookie']), /Secure/);
    const tls = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null, headers: { 'X-Forwarded-Proto': 'https' } });
    assert.match(String(tls.headers['set-cookie']), /; Secure/);
  });

  test('a page of another origin cannot log its visitor in (login CSRF); the console, curl and the SDK can', async () => {
    const foreign: Array<Record<string, string>> = [
      { Origin: 'https://evil.example' },
      { Origin: 'null' },
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site', Origin: s.url },
    ];
    for (const headers of foreign) {
      const r = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null, headers });
      assert.deepEqual([r.status, r.body.code], [403, 'access_denied'], JSON.stringify(headers));
      assert.equal(r.headers['set-cookie'], undefined, 'no cookie is set');
    }
    const own: Array<Record<string, string>> = [{ Origin: s.url }, { 'Sec-Fetch-Site': 'same-origin', Origin: s.url }, {}];
    for (const headers of own) {
      const r = await s.call('POST', '/api/v1/auth/login', { token: s.token }, { token: null, headers });
      assert.equal(r.status, 200, `${JSON.stringify(headers)}: ${r.text}`);
      assert.match(String(r.headers['set-cookie']), /^leasehold_login=/);
    }
  });

  test('a bad token cannot log in', async () => {
    const r = await s.call('POST', '/api/v1/auth/login', { token: 'lh_nope' }, { token: null });
    assert.deepEqual([r.status, r.body.code], [401, 'invalid_credential']);
    assert.equal(r.headers['set-cookie'], undefined);
  });

  test('a cookie-authenticated change needs the console’s own origin', async () => {
    const cookie = await login();
    const body = { owner_id: 'console' };
    const none = await s.call('POST', '/api/v1/sessions', body, { token: null, headers: { Cookie: cookie } });
    assert.deepEqual([none.status, none.body.code], [403, 'access_denied']);
    const foreign = await s.call('POST', '/api/v1/sessions', body, { token: null, headers: { Cookie: cookie, Origin: 'https://evil.example' } });
    assert.deepEqual([foreign.status, foreign.body.code], [403, 'access_denied']);
    const crossSite = await s.call('POST', '/api/v1/sessions', body, { token: null, headers: { Cookie: cookie, 'Sec-Fetch-Site': 'cross-site' } });
    assert.equal(crossSite.status, 403);
    const own = await s.call('POST', '/api/v1/sessions', body, { token: null, headers: { Cookie: cookie, Origin: s.url } });
    assert.equal(own.status, 201, own.text);
    const fetchMeta = await s.call('POST', '/api/v1/sessions', body, { token: null, headers: { Cookie: cookie, 'Sec-Fetch-Site': 'same-origin' } });
    assert.equal(fetchMeta.status, 201);
    const listed = await s.call('GET', '/api/v1/sessions?owner_id=console');
    assert.equal(listed.body.items.length, 2, 'only the two same-origin requests opened sessions');
  });

  test('a bearer token wins over the cookie, and needs no origin', async () => {
    const cookie = await login();
    const bad = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: 'lh_wrong', headers: { Cookie: cookie } });
    assert.equal(bad.status, 401, 'the bearer token is used, not the good cookie');
    const ok = await s.call('POST', '/api/v1/sessions', { owner_id: 'x' }, { headers: { Cookie: 'leasehold_login=lc_garbage' } });
    assert.equal(ok.status, 201, 'a good bearer token with a bad cookie works');
  });

  test('logout ends the login on the server, not only in the browser', async () => {
    const cookie = await login();
    const out = await s.call('POST', '/api/v1/auth/logout', undefined, { token: null, headers: { Cookie: cookie, Origin: s.url } });
    assert.equal(out.body.code, 'logged_out');
    assert.match(String(out.headers['set-cookie']), /Max-Age=0/);
    const after = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: null, headers: { Cookie: cookie } });
    assert.deepEqual([after.status, after.body.code], [401, 'invalid_credential']);
  });

  test('revoking the token ends its logins', async () => {
    const child = await s.createToken(['lease://acme/**#read']);
    const cookie = await login(child);
    const who = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: null, headers: { Cookie: cookie } });
    assert.equal(who.status, 200);
    const list = await s.call('GET', '/api/v1/tokens');
    const id = list.body.items.find((t: { grants: string[] }) => t.grants[0] === 'lease://acme/**#read').token_id;
    assert.equal((await s.call('DELETE', `/api/v1/tokens/${id}`)).status, 200);
    const after = await s.call('GET', `${leasePath('lease://acme/a/b')}`, undefined, { token: null, headers: { Cookie: cookie } });
    assert.equal(after.status, 401);
  });
});
