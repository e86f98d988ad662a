/**
 * One family cannot take the live feed from the others (docs/operations.md,
 * "Threat model"): streams are capped per family as well as per token, an
 * embed token's streams count against the token that minted it, and a token
 * may have only so many live embed tokens. Caps lowered: 20 streams in all,
 * 8 per family, 4 per token, 3 live embed tokens per creator.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../testing/harness';
import { SseClient, SseRefused } from '../testing/sse';

let s: TestServer;
const open: SseClient[] = [];
before(async () => {
  s = await startTestServer({ engine: { feed: { maxStreams: 20, streamsPerFamily: 8, streamsPerToken: 4 }, embedTokensPerCreator: 3 } });
});
after(async () => {
  for (const c of open) c.close();
  await s.close();
});

const SEL = 'lease://t/x/*';

/** Open a stream; the status of its answer (200, or the refusal's). */
async function stream(token: string, selector = SEL): Promise<number> {
  try {
    open.push(await SseClient.open(s.url, `/api/v1/inventory/stream?selector=${encodeURIComponent(selector)}`, { token }));
    return 200;
  } catch (e) {
    if (e instanceof SseRefused) {
      assert.equal(e.body.code, 'rate_limited');
      return e.status;
    }
    throw e;
  }
}

async function embedToken(by: string): Promise<{ status: number; token?: string; id?: string; code?: string }> {
  const r = await s.call('POST', '/api/v1/embed-tokens', { selector: SEL }, { token: by });
  return { status: r.status, token: r.body.token, id: r.body.token_id, code: r.body.code };
}

test('a read token of one family and its embed tokens cannot hold more than its own quota, and the other family still streams', async () => {
  const tenant = await s.createToken([`${SEL}#read`], { family: 'tenant-b' });
  const embeds: string[] = [];
  for (let i = 0; i < 3; i++) embeds.push((await embedToken(tenant)).token!);
  const statuses: number[] = [];
  for (const t of [tenant, ...embeds]) for (let i = 0; i < 4; i++) statuses.push(await stream(t));
  assert.equal(statuses.filter((st) => st === 200).length, 4, `the token and its embed tokens share 4 streams: ${statuses.join(',')}`);
  assert.ok(statuses.filter((st) => st !== 200).every((st) => st === 429));

  // More tokens of the same family stop at the family's 8.
  const more = [await s.createToken([`${SEL}#read`], { family: 'tenant-b' }), await s.createToken([`${SEL}#read`], { family: 'tenant-b' })];
  const familyStatuses: number[] = [];
  for (const t of more) for (let i = 0; i < 4; i++) familyStatuses.push(await stream(t));
  assert.deepEqual(familyStatuses.filter((st) => st === 200).length, 4, `the family holds 8 in all: ${familyStatuses.join(',')}`);

  // The default family's root still gets its streams.
  for (let i = 0; i < 4; i++) assert.equal(await stream(s.token, 'lease://**'), 200, `root stream ${i}`);
});

test('a token may have at most 3 live embed tokens; revoking one makes room', async () => {
  const reader = await s.createToken([`${SEL}#read`]);
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await embedToken(reader));
  assert.deepEqual(made.map((m) => m.status), [201, 201, 201]);
  const fourth = await embedToken(reader);
  assert.deepEqual([fourth.status, fourth.code], [429, 'rate_limited']);
  assert.equal((await s.call('DELETE', `/api/v1/tokens/${made[0]!.id}`)).status, 200);
  assert.equal((await embedToken(reader)).status, 201);
});
