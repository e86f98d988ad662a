/**
 * Tokens through a real server (docs/semantics.md §10, docs/semantics.md
 * §10): containment in ONE admin grant, families and root-only fields,
 * expiry bounded by the creator, listing without secrets, revocation.
 */

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type Reply, type TestServer } from '../testing/harness';

function expectError(r: Reply, status: number, code: string): void {
  assert.ok(r.status < 500, `never a 5xx: ${r.status} ${r.text}`);
  assert.equal(r.status, status, r.text);
  assert.equal(r.body.status, 'error');
  assert.equal(r.body.code, code, r.text);
  assert.equal(r.body.retryable, false);
  assert.equal(r.headers['x-correlation-id'], r.body.correlation_id);
}

/** A revoked token's answer (on PostgreSQL the other instance refuses it once the revoke's notice arrives). */
const refused = (r: Reply) => r.status === 401;

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();
const list = (selector: string) => `/api/v1/leases?selector=${encodeURIComponent(selector)}`;

describe('tokens', () => {
  let s: TestServer;
  /** Every secret this suite saw, to prove no listing ever shows one. */
  const secrets: string[] = [];

  async function create(body: Record<string, unknown>, by?: string): Promise<Reply> {
    const r = await s.call('POST', '/api/v1/tokens', { name: 'test', ...body }, { token: by });
    if (r.status === 201) secrets.push(r.body.token);
    return r;
  }

  async function createOk(body: Record<string, unknown>, by?: string): Promise<{ id: string; secret: string; family: string }> {
    const r = await create(body, by);
    assert.equal(r.status, 201, r.text);
    return { id: r.body.token_id, secret: r.body.token, family: r.body.family };
  }

  async function tokenIds(by?: string, query = ''): Promise<string[]> {
    const r = await s.call('GET', `/api/v1/tokens${query}`, undefined, { token: by });
    assert.equal(r.status, 200, r.text);
    return r.body.items.map((i: { token_id: string }) => i.token_id);
  }

  before(async () => {
    s = await startTestServer();
    secrets.push(s.token);
  });
  after(() => s.close());

  describe('whoami', () => {
    test('returns token_id, name, family, grants and root of the root token', async () => {
      const r = await s.call('GET', '/api/v1/auth/whoami');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.code, 'whoami');
      const { status: _s, code: _c, correlation_id: _id, ...rest } = r.body;
      assert.deepEqual(Object.keys(rest).sort(), ['family', 'grants', 'name', 'root', 'token_id']);
      assert.match(rest.token_id, /^tk_/);
      assert.equal(rest.family, 'default');
      assert.deepEqual(rest.grants, ['lease://**#admin']);
      assert.equal(rest.root, true);
      assert.equal(typeof rest.name, 'string');
    });

    test('returns what a created token was given', async () => {
      const t = await createOk({ name: 'ci reader ✓', grants: ['lease://acme/**#read', 'lease://acme/renderers/*#write'] });
      assert.equal(t.family, 'default');
      const r = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: t.secret });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.token_id, t.id);
      assert.equal(r.body.name, 'ci reader ✓');
      assert.equal(r.body.family, 'default');
      assert.deepEqual(r.body.grants, ['lease://acme/**#read', 'lease://acme/renderers/*#write']);
      assert.equal(r.body.root, false);
    });
  });

  describe('create: each grant contained in ONE admin grant of the creator', () => {
    let creator: string;
    before(async () => {
      creator = (await createOk({ grants: ['lease://acme/**#admin', 'lease://beta-realm/**#admin', 'lease://**#read'] })).secret;
    });

    test('answers 201 token_created with token_id, token and family', async () => {
      const r = await create({ grants: ['lease://acme/renderers/*#write'] }, creator);
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.code, 'token_created');
      assert.match(r.body.token_id, /^tk_/);
      assert.equal(typeof r.body.token, 'string');
      assert.equal(r.body.family, 'default');
      const who = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: r.body.token });
      assert.equal(who.status, 200);
    });

    test('a grant equal to an admin grant, or narrower in permission, is allowed', async () => {
      await createOk({ grants: ['lease://acme/**#admin', 'lease://beta-realm/x/y#read', 'lease://acme/*/doc-1#write'] }, creator);
    });

    test('one uncontained grant among contained ones is 403 and creates nothing', async () => {
      const beforeIds = await tokenIds();
      expectError(await create({ grants: ['lease://acme/x/y#read', 'lease://other/**#read'] }, creator), 403, 'access_denied');
      assert.deepEqual(await tokenIds(), beforeIds);
    });

    test('two admin grants are never unioned to contain a wider grant', async () => {
      expectError(await create({ grants: ['lease://*/x/y#read'] }, creator), 403, 'access_denied');
      expectError(await create({ grants: ['lease://**#read'] }, creator), 403, 'access_denied');
    });

    test('a read or write grant of the creator never contains anything (admin is needed)', async () => {
      // The creator has lease://**#read, yet cannot hand out lease://other/**#read.
      expectError(await create({ grants: ['lease://other/**#read'] }, creator), 403, 'access_denied');
      const writer = (await createOk({ grants: ['lease://acme/**#write'] })).secret;
      expectError(await create({ grants: ['lease://acme/x/*#read'] }, writer), 403, 'access_denied');
    });

    test('a wider permission than the admin grant’s selector allows is 403 (overlap is not containment)', async () => {
      expectError(await create({ grants: ['lease://*/renderers/*#read'] }, creator), 403, 'access_denied');
    });

    test('a malformed grant is 400 invalid_request, even next to an uncontained one (the body is validated before permission)', async () => {
      expectError(await create({ grants: ['lease://acme/**#superuser'] }, creator), 400, 'invalid_request');
      expectError(await create({ grants: ['lease://acme/**/**#read'] }, creator), 400, 'invalid_request');
      expectError(await create({ grants: ['lease://other/**#read', 'not-a-grant'] }, creator), 400, 'invalid_request');
    });

    test('an empty grant list, a missing or bad name are 400 invalid_request', async () => {
      expectError(await create({ grants: [] }, creator), 400, 'invalid_request');
      expectError(await s.call('POST', '/api/v1/tokens', { grants: ['lease://acme/**#read'] }, { token: creator }), 400, 'invalid_request');
      expectError(await create({ name: '', grants: ['lease://acme/**#read'] }, creator), 400, 'invalid_request');
      expectError(await create({ name: 'bad\u0000name', grants: ['lease://acme/**#read'] }, creator), 400, 'invalid_request');
    });

    test('a token without any admin grant cannot create tokens', async () => {
      const reader = (await createOk({ grants: ['lease://**#read'] })).secret;
      expectError(await create({ grants: ['lease://acme/x/y#read'] }, reader), 403, 'access_denied');
    });
  });

  describe('families and root', () => {
    test('a non-root token passing family or root is 403, whatever the value', async () => {
      const admin = (await createOk({ grants: ['lease://**#admin'] })).secret;
      expectError(await create({ grants: ['lease://**#read'], family: 'beta' }, admin), 403, 'access_denied');
      expectError(await create({ grants: ['lease://**#read'], family: 'default' }, admin), 403, 'access_denied');
      expectError(await create({ grants: ['lease://**#read'], root: true }, admin), 403, 'access_denied');
      expectError(await create({ grants: ['lease://**#read'], root: false }, admin), 403, 'access_denied');
    });

    test('a family name outside [a-z0-9][a-z0-9-]{0,62} is 400 invalid_request', async () => {
      for (const family of ['Beta', 'beta_1', '-beta', '', 'b'.repeat(64)]) {
        expectError(await create({ grants: ['lease://**#read'], family }), 400, 'invalid_request');
      }
    });

    test('root creates a token in family beta, which sees only family beta', async () => {
      const route = 'lease://shared/x/doc-1';
      const { sessionId } = await s.openSession('default-worker');
      const mine = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      assert.equal(mine.status, 200, mine.text);
      const cp = await s.call('PUT', leasePath(route, 'checkpoint'), {
        session_id: sessionId,
        request_id: rid(),
        lease_id: mine.body.lease.lease_id,
        fencing_token: mine.body.lease.fencing_token,
        value: { secret: 'default-only' },
      });
      assert.equal(cp.status, 200, cp.text);

      const beta = await createOk({ name: 'beta admin', grants: ['lease://**#admin'], family: 'beta' });
      assert.equal(beta.family, 'beta');
      const who = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: beta.secret });
      assert.equal(who.body.family, 'beta');
      assert.equal(who.body.root, false);

      const seen = await s.call('GET', list('lease://**'), undefined, { token: beta.secret });
      assert.equal(seen.status, 200, seen.text);
      assert.deepEqual(seen.body.items, []);
      expectError(await s.call('GET', leasePath(route), undefined, { token: beta.secret }), 404, 'lease_not_found');
      expectError(await s.call('GET', leasePath(route, 'checkpoint'), undefined, { token: beta.secret }), 404, 'checkpoint_not_found');
      const sessions = await s.call('GET', '/api/v1/sessions', undefined, { token: beta.secret });
      assert.equal(sessions.status, 200);
      assert.deepEqual(sessions.body.items, []);

      // The same route is free in beta; taking it there leaves default's lease alone.
      const betaSession = await s.openSession('beta-worker', 15_000, beta.secret);
      const theirs = await s.call('POST', leasePath(route, 'acquire'), { session_id: betaSession.sessionId, request_id: rid() }, { token: beta.secret });
      assert.equal(theirs.status, 200, theirs.text);
      const defaultView = await s.call('GET', list('lease://**'));
      const routes = defaultView.body.items.filter((i: { route: string }) => i.route === route);
      assert.equal(routes.length, 1);
      assert.equal(routes[0].fencing_token, mine.body.lease.fencing_token);
      assert.notEqual(routes[0].holder_incarnation, betaSession.incarnation);
    });

    test('a token created by a family-beta admin belongs to beta', async () => {
      const beta = await createOk({ grants: ['lease://**#admin'], family: 'beta' });
      const child = await createOk({ grants: ['lease://beta-app/**#read'] }, beta.secret);
      assert.equal(child.family, 'beta');
    });

    test('root may create a root token in a new family', async () => {
      const r = await createOk({ grants: ['lease://**#admin'], family: 'gamma', root: true });
      assert.equal(r.family, 'gamma');
      const who = await s.call('GET', '/api/v1/auth/whoami', undefined, { token: r.secret });
      assert.equal(who.body.root, true);
      assert.equal(who.body.family, 'gamma');
    });
  });

  describe('expiry', () => {
    test('a child that would outlive its creator is 400 invalid_request', async () => {
      const creatorExpiry = inHours(1);
      const creator = await createOk({ grants: ['lease://**#admin'], expires_at: creatorExpiry });
      expectError(await create({ grants: ['lease://**#read'] }, creator.secret), 400, 'invalid_request');
      expectError(await create({ grants: ['lease://**#read'], expires_at: inHours(2) }, creator.secret), 400, 'invalid_request');
      const childExpiry = inHours(0.5);
      const child = await createOk({ grants: ['lease://**#read'], expires_at: childExpiry }, creator.secret);
      const listed = await s.call('GET', '/api/v1/tokens');
      const row = listed.body.items.find((i: { token_id: string }) => i.token_id === child.id);
      assert.equal(row.expires_at, childExpiry);
    });

    test('an expires_at in the past or not in RFC 3339 UTC is 400 invalid_request', async () => {
      expectError(await create({ grants: ['lease://**#read'], expires_at: new Date(Date.now() - 60_000).toISOString() }), 400, 'invalid_request');
      expectError(await create({ grants: ['lease://**#read'], expires_at: 'tomorrow' }), 400, 'invalid_request');
    });
  });

  describe('list', () => {
    test('lists the caller’s family only, with the documented fields and never a secret or hash', async () => {
      const beta = await createOk({ grants: ['lease://**#read'], family: 'beta' });
      const r = await s.call('GET', '/api/v1/tokens');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.code, 'token_listed');
      assert.ok(r.body.items.length >= 2);
      for (const item of r.body.items) {
        assert.deepEqual(Object.keys(item).sort(), ['created_at', 'created_by', 'expires_at', 'family', 'grants', 'kind', 'name', 'root', 'token_id']);
        assert.equal(item.family, 'default');
        assert.notEqual(item.token_id, beta.id);
      }
      for (const secret of secrets) assert.ok(!r.text.includes(secret), 'a secret was listed');
      assert.doesNotMatch(r.text, /[0-9a-f]{64}/, 'something looking like a hash was listed');
    });

    test('a root token may pass ?family=; others may not', async () => {
      const beta = await createOk({ grants: ['lease://**#admin'], family: 'beta' });
      const ids = await tokenIds(undefined, '?family=beta');
      assert.ok(ids.includes(beta.id));
      const rows = await s.call('GET', '/api/v1/tokens?family=beta');
      for (const item of rows.body.items) assert.equal(item.family, 'beta');

      const admin = (await createOk({ grants: ['lease://**#admin'] })).secret;
      expectError(await s.call('GET', '/api/v1/tokens?family=beta', undefined, { token: admin }), 403, 'access_denied');
      const betaSees = await s.call('GET', '/api/v1/tokens', undefined, { token: beta.secret });
      assert.equal(betaSees.status, 200);
      for (const item of betaSees.body.items) assert.equal(item.family, 'beta');
    });

    test('listing needs admin on lease://**', async () => {
      const narrow = (await createOk({ grants: ['lease://acme/**#admin'] })).secret;
      expectError(await s.call('GET', '/api/v1/tokens', undefined, { token: narrow }), 403, 'access_denied');
      const reader = (await createOk({ grants: ['lease://**#read'] })).secret;
      expectError(await s.call('GET', '/api/v1/tokens', undefined, { token: reader }), 403, 'access_denied');
    });
  });

  describe('revoke', () => {
    test('a revoked token gets 401 at once', async () => {
      const t = await createOk({ grants: ['lease://**#write'] });
      assert.equal((await s.call('GET', '/api/v1/auth/whoami', undefined, { token: t.secret })).status, 200);
      const r = await s.call('DELETE', `/api/v1/tokens/${t.id}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.code, 'token_revoked');
      expectError(await s.settledCall('GET', '/api/v1/auth/whoami', undefined, { token: t.secret }, refused), 401, 'invalid_credential');
      expectError(await s.settledCall('POST', '/api/v1/sessions', { owner_id: 'w' }, { token: t.secret }, refused), 401, 'invalid_credential');
      expectError(await s.call('DELETE', `/api/v1/tokens/${t.id}`), 404, 'not_found');
    });

    test('a non-root admin revokes tokens of its family; revoking needs admin on lease://**', async () => {
      const admin = (await createOk({ grants: ['lease://**#admin'] })).secret;
      const victim = await createOk({ grants: ['lease://acme/**#read'] });
      const narrow = (await createOk({ grants: ['lease://acme/**#admin'] })).secret;
      expectError(await s.call('DELETE', `/api/v1/tokens/${victim.id}`, undefined, { token: narrow }), 403, 'access_denied');
      assert.equal((await s.call('DELETE', `/api/v1/tokens/${victim.id}`, undefined, { token: admin })).status, 200);
      expectError(await s.settledCall('GET', '/api/v1/auth/whoami', undefined, { token: victim.secret }, refused), 401, 'invalid_credential');
    });

    test('only a root token may revoke a root token', async () => {
      const root2 = await createOk({ grants: ['lease://**#admin'], root: true });
      const admin = (await createOk({ grants: ['lease://**#admin'] })).secret;
      expectError(await s.call('DELETE', `/api/v1/tokens/${root2.id}`, undefined, { token: admin }), 403, 'access_denied');
      assert.equal((await s.call('GET', '/api/v1/auth/whoami', undefined, { token: root2.secret })).status, 200);
      assert.equal((await s.call('DELETE', `/api/v1/tokens/${root2.id}`)).status, 200);
      expectError(await s.settledCall('GET', '/api/v1/auth/whoami', undefined, { token: root2.secret }, refused), 401, 'invalid_credential');
    });
  });
});

describe('the last root token', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('revoking the store’s last root token is 400 invalid_request, and it keeps working', async () => {
    const me = await s.call('GET', '/api/v1/auth/whoami');
    expectError(await s.call('DELETE', `/api/v1/tokens/${me.body.token_id}`), 400, 'invalid_request');
    assert.equal((await s.call('GET', '/api/v1/auth/whoami')).status, 200);
  });

  test('with a second root, one may go; then the other is the last', async () => {
    const boot = await s.call('GET', '/api/v1/auth/whoami');
    const created = await s.call('POST', '/api/v1/tokens', { name: 'root two', grants: ['lease://**#admin'], root: true });
    assert.equal(created.status, 201, created.text);
    const root2 = created.body.token as string;
    const gone = await s.call('DELETE', `/api/v1/tokens/${boot.body.token_id}`, undefined, { token: root2 });
    assert.equal(gone.status, 200, gone.text);
    expectError(await s.settledCall('GET', '/api/v1/auth/whoami', undefined, {}, refused), 401, 'invalid_credential');
    expectError(await s.call('DELETE', `/api/v1/tokens/${created.body.token_id}`, undefined, { token: root2 }), 400, 'invalid_request');
    assert.equal((await s.call('GET', '/api/v1/auth/whoami', undefined, { token: root2 })).status, 200);
  });
});
