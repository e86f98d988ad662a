/**
 * Token lineage: revoking a token revokes everything it minted (tokens and
 * embed tokens, transitively) in the same step, and ends their streams;
 * embed tokens are listed (kind `embed`) and revocable.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function mint(by: string, grants: string[], name: string): Promise<{ id: string; secret: string }> {
  const r = await s.call('POST', '/api/v1/tokens', { name, grants }, { token: by });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.token_id, secret: r.body.token };
}

async function embed(by: string, selector: string): Promise<{ id: string; secret: string }> {
  const r = await s.call('POST', '/api/v1/embed-tokens', { selector }, { token: by });
  assert.equal(r.status, 201, r.text);
  return { id: r.body.token_id, secret: r.body.token };
}

const whoami = async (secret: string) => (await s.call('GET', '/api/v1/auth/whoami', undefined, { token: secret })).status;
/**
 * The status once a revoke has reached the instance answering: at once on
 * SQLite; on PostgreSQL the other instance stops accepting the token when the
 * revoke's notification reaches it (at the latest after its token cache's
 * 1 s), docs/design.md "Testing on both stores".
 */
const settledWhoami = async (secret: string) =>
  (await s.settledCall('GET', '/api/v1/auth/whoami', undefined, { token: secret }, (r) => r.status === 401)).status;

test('revoking a token revokes, at once, every token and embed token it minted, transitively, and ends their streams', async () => {
  const leaked = await mint(s.token, ['lease://lin/**#admin'], 'leaked ops token');
  const child = await mint(leaked.secret, ['lease://lin/a/*#admin'], 'child');
  const grandchild = await mint(child.secret, ['lease://lin/a/*#read'], 'grandchild');
  const embedOfLeaked = await embed(leaked.secret, 'lease://lin/**');
  const embedOfGrandchild = await embed(grandchild.secret, 'lease://lin/a/*');
  const bystander = await mint(s.token, ['lease://lin/**#read'], 'bystander');
  const all = [leaked, child, grandchild, embedOfLeaked, embedOfGrandchild];
  for (const t of all) assert.equal(await whoami(t.secret), 200);
  const stream = await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent('lease://lin/a/*')}`, { token: embedOfGrandchild.secret });

  const r = await s.call('DELETE', `/api/v1/tokens/${leaked.id}`);
  assert.deepEqual([r.status, r.body.code], [200, 'token_revoked'], r.text);
  for (const t of all) assert.equal(await settledWhoami(t.secret), 401, `${t.id} is refused (at once on one instance)`);
  assert.equal(await whoami(bystander.secret), 200, 'a token minted by someone else is untouched');
  const closed = await stream.waitFor((e) => e.event === 'closed', 3_000, 'closed');
  assert.equal(closed.data.reason, 'token_revoked');

  const listed = (await s.call('GET', '/api/v1/tokens')).body.items.map((t: { token_id: string }) => t.token_id);
  for (const t of all) assert.equal(listed.includes(t.id), false, `${t.id} is no longer listed`);
  const audit = await s.call('GET', '/api/v1/audit?event_type=token_revoke&limit=5');
  assert.equal(audit.body.items[0].subject_token_id, leaked.id, 'one audited revoke, naming the token revoked');
});

test('embed tokens are listed with kind embed and their creator, and DELETE revokes one', async () => {
  const reader = await mint(s.token, ['lease://emb/x/*#read'], 'reader');
  const e = await embed(reader.secret, 'lease://emb/x/*');
  const items = (await s.call('GET', '/api/v1/tokens')).body.items as Array<{ token_id: string; kind: string; created_by: string | null; name: string }>;
  const row = items.find((t) => t.token_id === e.id);
  assert.ok(row, 'the embed token is listed');
  assert.deepEqual([row.kind, row.created_by], ['embed', reader.id]);
  assert.equal(items.find((t) => t.token_id === reader.id)?.kind, 'api');
  const r = await s.call('DELETE', `/api/v1/tokens/${e.id}`);
  assert.equal(r.status, 200, r.text);
  assert.equal(await settledWhoami(e.secret), 401);
  assert.equal(await whoami(reader.secret), 200, 'revoking a child leaves its creator alone');
});

test('root tokens a revoked token minted are anchors of their own and stay, so the bootstrap token can be retired', async () => {
  const r1 = await s.call('POST', '/api/v1/tokens', { name: 'next root', grants: ['lease://**#admin'], root: true });
  assert.equal(r1.status, 201, r1.text);
  const nextRoot = { id: r1.body.token_id as string, secret: r1.body.token as string };
  const fromNext = await mint(nextRoot.secret, ['lease://keep/**#read'], 'minted by the next root');
  const fromBoot = await mint(s.token, ['lease://gone/**#read'], 'minted by the bootstrap token');
  const boot = (await s.call('GET', '/api/v1/auth/whoami')).body.token_id as string;
  const r = await s.call('DELETE', `/api/v1/tokens/${boot}`, undefined, { token: nextRoot.secret });
  assert.equal(r.status, 200, r.text);
  assert.equal(await settledWhoami(s.token), 401);
  assert.equal(await settledWhoami(fromBoot.secret), 401, 'what the bootstrap token minted goes with it');
  assert.equal(await whoami(nextRoot.secret), 200, 'the root it minted stays');
  assert.equal(await whoami(fromNext.secret), 200, 'and so does what that root minted');
});
