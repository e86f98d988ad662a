/**
 * Bearer tokens and authorization (docs/semantics.md §10). Secrets are stored only
 * as SHA-256 hashes. A principal is allowed an operation only if ONE of its
 * grants contains the operation's whole match set.
 */

import { millis } from '../../store/millis';
import { allowingGrant, parseGrant, type Permission } from '@/lib/grants';
import { LIMITS } from '@/lib/limits';
import { parseSelector, type Triple } from '@/lib/selector';
import type { LoginRow, Store, TokenRow, Tx } from '../../store/types';
import type { ClosedReason, StreamOwner } from '../feed/feed';
import { fail, fromStoreError } from '../core/errors';
import { hashSecret, randomId } from '../core/ids';
import { iso } from '../core/views';
import type { Principal } from '../core/model';

export type { Principal } from '../core/model';

export interface TokenInfo {
  token_id: string;
  name: string;
  family: string;
  grants: string[];
  root: boolean;
  created_at: string;
  expires_at: string | null;
  /** `embed`: a read-only inventory token for the embeddable widget. */
  kind: 'api' | 'embed';
  /** The token that minted this one (revoking it revokes this one too); null for the bootstrap token. */
  created_by: string | null;
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
    kind: row.kind,
    expiresAt: row.expiresAt,
    createdBy: row.createdBy,
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
    kind: row.kind,
    created_by: row.createdBy,
  };
}

const CACHE_MS = 1_000;
/** A console login lasts at most this long (and never past its token). */
export const LOGIN_TTL_MS = 12 * 3_600_000;

interface Cached<T> {
  value: T;
  at: number;
}

/**
 * Authenticates bearer secrets and console logins with a short cache (1 s),
 * invalidated at once by a local revoke or logout. Another instance's revoke
 * invalidates it when that commit's notification arrives (milliseconds), and
 * within the cache age at the latest (docs/design.md).
 */
export class TokenAuthority {
  private readonly byHash = new Map<string, Cached<TokenRow>>();
  private readonly logins = new Map<string, Cached<LoginRow>>();
  /**
   * Loads in flight, by map and key: requests that miss the cache while one
   * runs share it (at 64 concurrent requests on one token, an expired entry
   * cost one store step per request until the first answer came back). A
   * revoke or logout starts a new generation: loads begun before it are
   * neither shared nor cached after it.
   */
  private readonly loading = new Map<Map<string, unknown>, Map<string, { gen: number; value: Promise<unknown> }>>();
  private generation = 0;
  /** The principal of a row as read (rows are never changed in place; a reload is a new row). */
  private readonly principals = new WeakMap<TokenRow, Principal>();

  constructor(private readonly store: Store) {}

  /** A store step whose faults surface as `backend_unavailable` / `outcome_unknown`. */
  private atomic<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.store.atomic(fn).catch((e: unknown) => {
      throw fromStoreError(e);
    });
  }

  private async cached<T>(map: Map<string, Cached<T>>, key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const now = this.store.now();
    const hit = map.get(key);
    if (hit && now - hit.at <= CACHE_MS) return hit.value;
    let inFlight = this.loading.get(map);
    if (!inFlight) this.loading.set(map, (inFlight = new Map()));
    const gen = this.generation;
    const shared = inFlight.get(key);
    if (shared && shared.gen === gen) return shared.value as Promise<T | undefined>;
    const loaded = load();
    inFlight.set(key, { gen, value: loaded });
    let value: T | undefined;
    try {
      value = await loaded;
    } finally {
      if (inFlight.get(key)?.value === loaded) inFlight.delete(key);
    }
    // A revoke or logout since the load began: answer this request, keep nothing.
    if (gen !== this.generation) return value;
    if (value === undefined) {
      map.delete(key);
      return undefined;
    }
    if (map.size > 10_000) map.clear();
    map.set(key, { value, at: now });
    return value;
  }

  private live(row: TokenRow | undefined): Principal {
    if (!row) fail('invalid_credential', 'unknown token');
    if (row.revokedAt !== null) fail('invalid_credential', 'token revoked');
    if (row.expiresAt !== null && row.expiresAt <= this.store.now()) fail('invalid_credential', 'token expired');
    // A cached row keeps its parsed grants: parsing them per request cost more than the lookup.
    let p = this.principals.get(row);
    if (!p) {
      p = principalOf(row);
      this.principals.set(row, p);
    }
    return p;
  }

  /** The principal of a live bearer token, or `invalid_credential`. */
  async authenticate(secret: string): Promise<Principal> {
    const hash = hashSecret(secret);
    return this.live(await this.cached(this.byHash, hash, () => this.atomic((tx) => tx.getTokenByHash(hash))));
  }

  /** The principal behind a console login cookie, or `invalid_credential`. */
  async authenticateLogin(cookieSecret: string): Promise<Principal> {
    const hash = hashSecret(cookieSecret);
    const login = await this.cached(this.logins, hash, () => this.atomic((tx) => tx.getLogin(hash)));
    if (!login || login.expiresAt <= this.store.now()) fail('invalid_credential', 'login expired; log in again');
    const row = await this.atomic((tx) => tx.getToken(login.tokenId));
    return this.live(row);
  }

  /** Exchange a live token for a login (the cookie's secret), valid 12 h at most. */
  async login(secret: string): Promise<{ cookieSecret: string; expiresAt: number; principal: Principal }> {
    const principal = await this.authenticate(secret);
    const cookieSecret = `lc_${randomId('', 32)}`;
    const expiresAt = await this.atomic(async (tx) => {
      const expiresAt = millis(Math.min(tx.now + LOGIN_TTL_MS, principal.expiresAt ?? Infinity));
      await tx.insertLogin({ idHash: hashSecret(cookieSecret), tokenId: principal.tokenId, createdAt: tx.now, expiresAt });
      await tx.pruneLogins(tx.now);
      return expiresAt;
    });
    return { cookieSecret, expiresAt, principal };
  }

  /** End a login; unknown cookies are ignored. */
  async logout(cookieSecret: string): Promise<void> {
    const hash = hashSecret(cookieSecret);
    this.logins.delete(hash);
    this.generation++;
    await this.atomic((tx) => tx.deleteLogin(hash));
  }

  /**
   * Which stream owners are no longer valid, in one store step: a revoked or
   * deleted token (`token_revoked`), an expired token or login
   * (`token_expired`), an ended login (`logged_out`).
   */
  async invalidOwners(owners: ReadonlyMap<string, StreamOwner>): Promise<Map<string, ClosedReason>> {
    return this.atomic(async (tx) => {
      const tokens = new Map<string, ClosedReason | null>();
      const logins = new Map<string, ClosedReason | null>();
      const out = new Map<string, ClosedReason>();
      for (const [streamId, o] of owners) {
        if (!tokens.has(o.tokenId)) {
          const t = await tx.getToken(o.tokenId);
          tokens.set(o.tokenId, !t || t.revokedAt !== null ? 'token_revoked' : t.expiresAt !== null && t.expiresAt <= tx.now ? 'token_expired' : null);
        }
        let reason = tokens.get(o.tokenId) ?? null;
        if (!reason && o.loginHash !== undefined) {
          if (!logins.has(o.loginHash)) {
            const l = await tx.getLogin(o.loginHash);
            logins.set(o.loginHash, !l ? 'logged_out' : l.expiresAt <= tx.now ? 'token_expired' : null);
          }
          reason = logins.get(o.loginHash) ?? null;
        }
        if (reason) out.set(streamId, reason);
      }
      return out;
    });
  }

  forget(tokenId: string): void {
    this.generation++;
    for (const [k, v] of this.byHash) if (v.value.id === tokenId) this.byHash.delete(k);
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
  // The body decides the permission, so all of it is judged before any permission check (docs/semantics.md, order of checks).
  if (input.family !== undefined && !FAMILY_RE.test(input.family)) fail('invalid_request', 'family must match [a-z0-9][a-z0-9-]{0,62}');
  if (input.grants.length === 0) fail('invalid_request', 'grants must not be empty');
  const parsed = input.grants.map((text) => {
    const g = parseGrant(text);
    if (!g.ok) fail('invalid_request', `grant ${JSON.stringify(text)}: ${g.reason}`);
    return { text, triple: g.value.triple };
  });
  if (input.expiresAt !== undefined && input.expiresAt <= now) fail('invalid_request', 'expires_at must be in the future');
  if (creator.expiresAt !== null && (input.expiresAt === undefined || input.expiresAt > creator.expiresAt)) {
    fail('invalid_request', 'a token cannot outlive its creator: set expires_at no later than yours');
  }
  if ((input.family !== undefined || input.root !== undefined) && !creator.root) {
    fail('access_denied', 'only a root token may set family or root');
  }
  for (const g of parsed) {
    if (!allowingGrant(creator.grants, g.triple, 'admin')) fail('access_denied', `no admin grant of yours contains ${g.text}`);
  }
  const grants = parsed.map((g) => g.text);
  return {
    id: randomId('tk_', 12),
    name: input.name,
    family: input.family ?? creator.family,
    grants,
    root: input.root ?? false,
    kind: 'api',
    createdAt: millis(now),
    expiresAt: input.expiresAt === undefined ? null : millis(input.expiresAt),
    revokedAt: null,
    createdBy: creator.tokenId,
  };
}

/** How many tokens deep a mint may be (the caller's chain, up to the nearest root, is walked in the step). */
export const MAX_TOKEN_CHAIN = 32;

/**
 * Refuse (`invalid_credential`) unless the caller's token and every token
 * above it, up to the nearest root, is live at `now`: read in the step that
 * acts, not from the credential cache (docs/operations.md "Revocation").
 * `minting` (the step inserts a token): on PostgreSQL the chain is locked
 * against a concurrent revoke until the step ends, and a chain already
 * `MAX_TOKEN_CHAIN` deep is `invalid_request`.
 */
export async function assertLiveChain(tx: Tx, p: Principal, now: number, minting = false): Promise<void> {
  const chain = await tx.tokenChain(p.tokenId, MAX_TOKEN_CHAIN, minting);
  const self = chain[chain.length - 1];
  if (!self || self.id !== p.tokenId) fail('invalid_credential', 'unknown token');
  for (const t of chain) {
    if (t.revokedAt !== null) fail('invalid_credential', t.id === p.tokenId ? 'token revoked' : 'token revoked: a token above it was revoked');
    if (t.expiresAt !== null && t.expiresAt <= now) fail('invalid_credential', 'token expired');
  }
  const top = chain[0]!;
  if (minting && chain.length >= MAX_TOKEN_CHAIN && !top.root && top.createdBy !== null) {
    fail('invalid_request', `a token may mint only ${MAX_TOKEN_CHAIN} tokens deep; mint from a token nearer its root`);
  }
}

/** Embed tokens live at most this long (and never past their creator). */
export const EMBED_MAX_TTL_MS = LIMITS.embedTokenTtlMs.max;

/**
 * Plan a read-only embed token for one selector, which one grant of the
 * creator must contain with `read`. An embed token cannot mint another.
 */
export function planEmbedToken(creator: Principal, selector: string, ttlMs: number, now: number): Omit<TokenRow, 'secretHash'> {
  const sel = parseSelector(selector);
  if (!sel.ok) fail('invalid_selector', `selector ${sel.reason}`);
  if (creator.kind === 'embed') fail('access_denied', 'an embed token cannot create tokens');
  authorize(creator, sel.value.triple, 'read');
  const expiresAt = millis(Math.min(now + Math.min(ttlMs, EMBED_MAX_TTL_MS), creator.expiresAt ?? Infinity));
  return {
    id: randomId('tk_', 12),
    name: `embed ${selector}`,
    family: creator.family,
    grants: [`${selector}#read`],
    root: false,
    kind: 'embed',
    createdAt: millis(now),
    expiresAt,
    revokedAt: null,
    createdBy: creator.tokenId,
  };
}

/** The bootstrap admin token of an empty store (engine start): a root token of `default` with `lease://**#admin`. */
export function bootstrapTokenRow(secret: string, now: TokenRow['createdAt']): TokenRow {
  return {
    id: randomId('tk_', 12),
    secretHash: hashSecret(secret),
    name: 'bootstrap admin',
    family: 'default',
    grants: ['lease://**#admin'],
    root: true,
    kind: 'api',
    createdAt: now,
    expiresAt: null,
    revokedAt: null,
    createdBy: null,
  };
}
