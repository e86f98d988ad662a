/**
 * Bearer tokens and authorization (CONTRACT.md §10). Secrets are stored only
 * as SHA-256 hashes. A principal is allowed an operation only if ONE of its
 * grants contains the operation's whole match set.
 */

import { allowingGrant, parseGrant, type Grant, type Permission } from '@/lib/grants';
import { parseSelector, type Triple } from '@/lib/selector';
import type { Store, TokenRow } from '../store/types';
import { fail } from './errors';
import { hashSecret, randomId } from './ids';
import { iso } from './views';

export interface Principal {
  tokenId: string;
  name: string;
  family: string;
  grants: Grant[];
  root: boolean;
  expiresAt: number | null;
}

export interface TokenInfo {
  token_id: string;
  name: string;
  family: string;
  grants: string[];
  root: boolean;
  created_at: string;
  expires_at: string | null;
}

export const FAMILY_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const ALL: Triple = [null, null, null];

/** Allowed, or `access_denied`. */
export function authorize(p: Principal, target: Triple, need: Permission): void {
  if (!allowingGrant(p.grants, target, need)) fail('access_denied', `no single grant allows ${need} here`);
}

/** Opening a session (and keepalive, close) needs `write` on some selector. */
export function authorizeAnyWrite(p: Principal): void {
  if (!p.grants.some((g) => g.permission === 'write' || g.permission === 'admin')) {
    fail('access_denied', 'this token has no write grant');
  }
}

export function newSecret(): string {
  return `lh_${randomId('', 32)}`;
}

function principalOf(row: TokenRow): Principal {
  return {
    tokenId: row.id,
    name: row.name,
    family: row.family,
    grants: row.grants.map((g) => {
      const r = parseGrant(g);
      if (!r.ok) throw new Error(`stored grant ${g} is invalid`);
      return r.value;
    }),
    root: row.root,
    expiresAt: row.expiresAt,
  };
}

export function tokenInfo(row: TokenRow): TokenInfo {
  return {
    token_id: row.id,
    name: row.name,
    family: row.family,
    grants: row.grants,
    root: row.root,
    created_at: iso(row.createdAt),
    expires_at: row.expiresAt === null ? null : iso(row.expiresAt),
  };
}

const CACHE_MS = 1_000;

/**
 * Authenticates secrets with a short cache (1 s), invalidated at once on a
 * local revoke. Another instance's revoke is seen within the cache age.
 */
export class TokenAuthority {
  private readonly cache = new Map<string, { row: TokenRow; at: number }>();

  constructor(private readonly store: Store) {}

  /** The principal of a live token, or `invalid_credential`. */
  async authenticate(secret: string): Promise<Principal> {
    const hash = hashSecret(secret);
    const now = this.store.now();
    let entry = this.cache.get(hash);
    if (!entry || now - entry.at > CACHE_MS) {
      const row = await this.store.atomic((tx) => tx.getTokenByHash(hash));
      if (!row) {
        this.cache.delete(hash);
        fail('invalid_credential', 'unknown token');
      }
      entry = { row, at: now };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, entry);
    }
    const row = entry.row;
    if (row.revokedAt !== null) fail('invalid_credential', 'token revoked');
    if (row.expiresAt !== null && row.expiresAt <= now) fail('invalid_credential', 'token expired');
    return principalOf(row);
  }

  forget(tokenId: string): void {
    for (const [k, v] of this.cache) if (v.row.id === tokenId) this.cache.delete(k);
  }
}

export interface CreateTokenInput {
  name: string;
  grants: string[];
  expiresAt?: number;
  family?: string;
  root?: boolean;
}

/** Validate a token request against its creator; returns the row to insert (without secret hash). */
export function planToken(creator: Principal, input: CreateTokenInput, now: number): Omit<TokenRow, 'secretHash'> {
  if ((input.family !== undefined || input.root !== undefined) && !creator.root) {
    fail('access_denied', 'only a root token may set family or root');
  }
  if (input.family !== undefined && !FAMILY_RE.test(input.family)) fail('invalid_request', 'family must match [a-z0-9][a-z0-9-]{0,62}');
  if (input.grants.length === 0) fail('invalid_request', 'grants must not be empty');
  const grants: string[] = [];
  for (const text of input.grants) {
    const g = parseGrant(text);
    if (!g.ok) fail('invalid_request', `grant ${JSON.stringify(text)}: ${g.reason}`);
    if (!allowingGrant(creator.grants, g.value.triple, 'admin')) {
      fail('access_denied', `no admin grant of yours contains ${text}`);
    }
    grants.push(text);
  }
  if (input.expiresAt !== undefined && input.expiresAt <= now) fail('invalid_request', 'expires_at must be in the future');
  if (creator.expiresAt !== null && (input.expiresAt === undefined || input.expiresAt > creator.expiresAt)) {
    fail('invalid_request', 'a token cannot outlive its creator: set expires_at no later than yours');
  }
  return {
    id: randomId('tk_', 12),
    name: input.name,
    family: input.family ?? creator.family,
    grants,
    root: input.root ?? false,
    kind: 'api',
    createdAt: now,
    expiresAt: input.expiresAt ?? null,
    revokedAt: null,
    createdBy: creator.tokenId,
  };
}

/** Parse a selector for authorization, or `invalid_selector`. */
export function selectorTriple(text: string): Triple {
  const r = parseSelector(text);
  if (!r.ok) fail('invalid_selector', `selector ${r.reason}`);
  return r.value.triple;
}
