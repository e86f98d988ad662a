/**
 * The token service (`engine.tokens`): authenticate bearer tokens and console
 * logins, create, list and revoke tokens and embed tokens. It owns the
 * token rules: a revoke takes the token's lineage with it, the last root
 * stays, and one token has a cap on the embed tokens it may have live
 * (docs/operations.md "Threat model", docs/design.md "Engine map").
 */

import { fail } from '../core/errors';
import type { EventHub } from '../core/events';
import { hashSecret } from '../core/ids';
import type { Caller, Principal } from '../core/model';
import { spec, type Runner } from '../runner';
import { assertLiveChain, newSecret, planEmbedToken, planToken, tokenInfo, type CreateTokenInput, type TokenAuthority, type TokenInfo } from './tokens';

export const DEFAULT_EMBED_TOKENS_PER_CREATOR = 1_000;

/**
 * A change of authority (a token minted or revoked) is audited in its own
 * step, like an operator action (docs/semantics.md §11): a crash cannot keep
 * the token and lose the trace of who minted or revoked it, and every
 * instance's audit read shows it as soon as it is answered.
 */
const IN_STEP = { inTx: true } as const;

export class TokenService {
  constructor(
    private readonly r: Runner,
    private readonly authority: TokenAuthority,
    private readonly events: EventHub,
    /** Live (unexpired, unrevoked) embed tokens one token may have minted at once. */
    private readonly embedTokensPerCreator = DEFAULT_EMBED_TOKENS_PER_CREATOR,
  ) {}

  /** The principal of a live bearer token, or `invalid_credential`. */
  authenticate(secret: string): Promise<Principal> {
    return this.authority.authenticate(secret);
  }

  /** The principal behind a console login cookie, or `invalid_credential`. */
  authenticateLogin(cookieSecret: string): Promise<Principal> {
    return this.authority.authenticateLogin(cookieSecret);
  }

  /** Exchange a live token for a login (the cookie's secret), valid 12 h at most. */
  login(secret: string): Promise<{ cookieSecret: string; expiresAt: number; principal: Principal }> {
    return this.authority.login(secret);
  }

  /** End a console login (unknown cookies are ignored) and the streams it opened. */
  async logout(cookieSecret: string): Promise<void> {
    await this.authority.logout(cookieSecret);
    this.events.publish({ type: 'logged_out', loginHash: hashSecret(cookieSecret) });
  }

  /** Create a token whose grants are each contained in one admin grant of the creator. */
  async create(p: Caller, input: CreateTokenInput): Promise<{ token_id: string; token: string; family: string }> {
    const secret = newSecret();
    return this.r.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now, true);
      const row = planToken(p, input, step.now);
      await step.tx.insertToken({ ...row, secretHash: hashSecret(secret) });
      step.facts.subjectTokenId = row.id;
      return { token_id: row.id, token: secret, family: row.family };
    }, spec(p, 'token_create', null, 'token_created', IN_STEP));
  }

  /**
   * Create a read-only token for one selector (contained with `read` in one
   * grant of the creator), expiring at the earlier of `ttlMs` (at most 24 h)
   * and the creator's expiry. It may only read the inventory.
   */
  async createEmbed(p: Caller, selector: string, ttlMs: number): Promise<{ token_id: string; token: string; expires_at: string }> {
    const secret = newSecret();
    return this.r.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now, true);
      const row = planEmbedToken(p, selector, ttlMs, step.now);
      const cap = this.embedTokensPerCreator;
      if ((await step.tx.countLiveEmbedTokens(p.tokenId, step.now)) >= cap) {
        fail('rate_limited', `a token may have at most ${cap} live embed tokens; let some expire or revoke them from /tokens`, { retryAfterMs: 60_000 });
      }
      await step.tx.insertToken({ ...row, secretHash: hashSecret(secret) });
      step.facts.subjectTokenId = row.id;
      return { token_id: row.id, token: secret, expires_at: new Date(row.expiresAt!).toISOString() };
    }, spec(p, 'embed_token_create', null, 'embed_token_created', IN_STEP));
  }

  /** Tokens of a family (the caller's; a root token may name another), API and live embed tokens. */
  async list(p: Caller, family?: string): Promise<{ items: TokenInfo[] }> {
    if (family !== undefined && !p.root && family !== p.family) {
      this.r.audit.note(spec(p, 'access_denied', null, ''), 'access_denied');
      fail('access_denied', 'only a root token may list another family');
    }
    return this.r.run(async (step) => ({
      // Live embed tokens too (kind `embed`), so they can be seen and revoked; expired ones are swept.
      items: (await step.tx.listTokens(family ?? p.family))
        .filter((t) => t.revokedAt === null && (t.kind === 'api' || (t.expiresAt !== null && t.expiresAt > step.now)))
        .map(tokenInfo),
    }));
  }

  /**
   * Revoke a token and, in the same step, everything it minted (tokens and
   * embed tokens, transitively): a leaked token's offspring die with it.
   * Root tokens it minted are anchors of their own and stay (so the
   * bootstrap token can be retired once another root exists; see
   * docs/operations.md "Threat model"). Only a root token may revoke a root
   * token; the last live root cannot be revoked. Every instance drops the revoked
   * tokens from its cache and ends their streams as the step's events
   * arrive (at once on a shared store, through its notification channel).
   */
  async revoke(p: Caller, tokenId: string): Promise<Record<string, never>> {
    const revoked = await this.r.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now);
      const lineage = await step.tx.tokenLineage(tokenId);
      const t = lineage.find((r) => r.id === tokenId);
      if (!t || t.revokedAt !== null || (t.family !== p.family && !p.root)) fail('not_found', 'no such token');
      const live = lineage.filter((r) => r.revokedAt === null && (r.expiresAt === null || r.expiresAt > step.now));
      const roots = live.filter((r) => r.root).length;
      if (roots > 0) {
        if (!p.root) fail('access_denied', 'only a root token may revoke a root token');
        if ((await step.tx.countLiveRootTokens(step.now)) <= roots) fail('invalid_request', 'cannot revoke the last root token');
      }
      step.facts.subjectTokenId = tokenId;
      const ids = lineage.filter((r) => r.revokedAt === null).map((r) => r.id);
      for (const id of ids) {
        await step.tx.revokeToken(id, step.now);
        step.events.push({ type: 'token_revoked', tokenId: id });
      }
      return ids;
    }, spec(p, 'token_revoke', null, 'token_revoked', IN_STEP));
    for (const id of revoked) this.authority.forget(id);
    return {};
  }
}
