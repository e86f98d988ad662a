/**
 * engine rules on every store backend: a revoke that closes the
 * holder's session needs admin on each route it holds (checked over at most
 * one step's leases, LEASEHOLD_STEP_MAX_LEASES); revoking a token
 * revokes its lineage (the recursive store query); the cap on live embed
 * tokens per creator (the store's count).
 */

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../../testing/pg';
import { engineFixture, rejectsWith } from '../../testing/engine-fixture';
import { rid } from '../../testing/harness';
import { requestDigest } from '../core/ids';

const REASON = 'security test: compromised worker';

for (const backend of BACKENDS) {
  describe(`${backend} store`, () => {
    test('close_session by an admin of one route is access_denied when the session holds another, and changes nothing', async () => {
      const f = await engineFixture({ backend });
      try {
        const s = await f.open('shared');
        const mine = (await f.acquire('lease://sec/mine/a', s)).answer.lease;
        const theirs = (await f.acquire('lease://sec/theirs/b', s)).answer.lease;
        const created = await f.engine.tokens.create(f.admin, { name: 'route admin', grants: ['lease://sec/mine/*#admin'] });
        const routeAdmin = await f.engine.tokens.authenticate(created.token);
        const body = { requestId: rid(), reason: REASON, expectedFencingToken: mine.fencing_token, digest: requestDigest({ r: REASON }) };
        await rejectsWith(f.engine.operators.revoke(routeAdmin, 'lease://sec/mine/a', { ...body, closeSession: true }), 'access_denied');
        assert.equal((await f.engine.leases.inspect(f.admin, 'lease://sec/mine/a')).lease.fencing_token, mine.fencing_token);
        assert.equal((await f.engine.leases.inspect(f.admin, 'lease://sec/theirs/b')).lease.fencing_token, theirs.fencing_token);
        const ok = await f.engine.operators.revoke(f.admin, 'lease://sec/mine/a', { ...body, requestId: rid(), closeSession: true });
        assert.equal(ok.answer.sessions_closed, 1, 'an admin of lease://** may');
        await rejectsWith(f.engine.leases.inspect(f.admin, 'lease://sec/theirs/b'), 'lease_not_found');
      } finally {
        await f.close();
      }
    });

    test('close_session reads at most one step of leases (stepMaxLeases) for its check: past it a route admin is refused, an admin of lease://** is not', async () => {
      const f = await engineFixture({ backend, limits: { stepMaxLeases: 3 } });
      try {
        const created = await f.engine.tokens.create(f.admin, { name: 'route admin', grants: ['lease://sec/mine/*#admin'] });
        const routeAdmin = await f.engine.tokens.authenticate(created.token);
        const revoke = (who: typeof routeAdmin, route: string, token: number) =>
          f.engine.operators.revoke(who, route, { requestId: rid(), reason: REASON, expectedFencingToken: token, digest: requestDigest({ r: REASON }), closeSession: true });
        // At the budget: every route checked, all within the grant, so the route admin may close it.
        const small = await f.open('small');
        const smallLeases = [];
        for (const r of ['a', 'b', 'c']) smallLeases.push((await f.acquire(`lease://sec/mine/${r}`, small)).answer.lease);
        assert.equal((await revoke(routeAdmin, 'lease://sec/mine/a', smallLeases[0]!.fencing_token)).answer.sessions_closed, 1);
        for (const r of ['a', 'b', 'c']) await rejectsWith(f.engine.leases.inspect(f.admin, `lease://sec/mine/${r}`), 'lease_not_found');
        // One past it: refused, naming the bound, and nothing changes, though every route is within the grant.
        const big = await f.open('big');
        const bigLeases = [];
        for (const r of ['a', 'b', 'c', 'd']) bigLeases.push((await f.acquire(`lease://sec/mine/${r}`, big)).answer.lease);
        const refused = await rejectsWith(revoke(routeAdmin, 'lease://sec/mine/a', bigLeases[0]!.fencing_token), 'access_denied');
        assert.match(refused.message, /more than 3 leases/);
        for (const [i, r] of ['a', 'b', 'c', 'd'].entries()) {
          assert.equal((await f.engine.leases.inspect(f.admin, `lease://sec/mine/${r}`)).lease.fencing_token, bigLeases[i]!.fencing_token);
        }
        // An admin of every route needs no check: the session is closed and all four leases end.
        assert.equal((await revoke(f.admin, 'lease://sec/mine/a', bigLeases[0]!.fencing_token)).answer.sessions_closed, 1);
        for (const r of ['a', 'b', 'c', 'd']) await rejectsWith(f.engine.leases.inspect(f.admin, `lease://sec/mine/${r}`), 'lease_not_found');
      } finally {
        await f.close();
      }
    });

    test('revoking a token revokes its lineage in one step; roots it minted stay', async () => {
      const f = await engineFixture({ backend });
      try {
        const a = await f.engine.tokens.create(f.admin, { name: 'a', grants: ['lease://lin/**#admin'] });
        const pa = await f.engine.tokens.authenticate(a.token);
        const b = await f.engine.tokens.create(pa, { name: 'b', grants: ['lease://lin/x/*#admin'] });
        const pb = await f.engine.tokens.authenticate(b.token);
        const e = await f.engine.tokens.createEmbed(pb, 'lease://lin/x/*', 60_000);
        const root2 = await f.engine.tokens.create(f.admin, { name: 'root2', grants: ['lease://**#admin'], root: true });
        await f.engine.tokens.revoke(f.admin, a.token_id);
        for (const secret of [a.token, b.token, e.token]) await rejectsWith(f.engine.tokens.authenticate(secret), 'invalid_credential');
        const revokedEvents = f.events.filter((ev) => ev.type === 'token_revoked').map((ev) => (ev as { tokenId: string }).tokenId).sort();
        assert.deepEqual(revokedEvents, [a.token_id, b.token_id, e.token_id].sort());
        assert.equal((await f.engine.tokens.authenticate(root2.token)).root, true);
      } finally {
        await f.close();
      }
    });

    test('a token may hold at most the configured number of live embed tokens; expired ones free the room', async () => {
      const f = await engineFixture({ backend, embedTokensPerCreator: 2 });
      try {
        await f.engine.tokens.createEmbed(f.admin, 'lease://emb/**', 10_000);
        await f.engine.tokens.createEmbed(f.admin, 'lease://emb/**', 60_000);
        await rejectsWith(f.engine.tokens.createEmbed(f.admin, 'lease://emb/**', 60_000), 'rate_limited');
        f.clock.advance(10_000);
        await f.engine.tokens.createEmbed(f.admin, 'lease://emb/**', 60_000);
      } finally {
        await f.close();
      }
    });
  });
}
