/**
 * Per-pattern policies (docs/policies.md): a family's TTL bounds and default,
 * lifetime cap, lock-delay and waiter cap for the routes a selector matches.
 *
 * A route's policy is the most specific matching one: positions compare left
 * to right, a literal beats `*`, and `*` beats a position covered by `**`.
 * Policies live in a per-family segment trie (the registration index's idea,
 * server/engine/feed/subscription-index.ts) whose branches at each level are
 * tried in that order, so the first complete match is the answer and a
 * lookup visits at most 3 + 9 + 27 nodes whatever the number of policies.
 *
 * The trie is a cache of the stored policies, rebuilt for a family on first
 * use after a change: the instance that changes a policy drops it at once,
 * other instances when the change's event arrives (and, on a shared store,
 * after at most `maxAgeMs` whatever happens to the channel).
 */

import { LIMITS } from '@/lib/limits';
import { parseSelector, routeSegments, type ParsedSelector } from '@/lib/selector';
import type { PolicyRow, Tx } from '../../store/types';
import { fail } from '../core/errors';
import type { Limits } from '../core/step';

/** Global lease bounds (a policy's fields live inside them): lib/limits.ts, one row per limit. */
const LEASE_TTL = LIMITS.leaseTtlMs;
const LIFETIME = LIMITS.maxLifetimeMs;
export const POLICIES_PER_FAMILY = 1_000;

/** One selector position's kind, in order of specificity. */
const LITERAL = 0;
const STAR = 1;
const GLOB = 2;
type Position = { kind: typeof LITERAL; value: string } | { kind: typeof STAR | typeof GLOB };

/** The three positions of a selector, telling `*` from a position `**` covers. */
export function positions(selector: string): [Position, Position, Position] | undefined {
  const r = parseSelector(selector);
  if (!r.ok) return undefined;
  const segs = selector.slice('lease://'.length).split('/');
  const out: Position[] = [];
  for (const s of segs) {
    if (s === '**') for (let i = 0; i < 3 - (segs.length - 1); i++) out.push({ kind: GLOB });
    else if (s === '*') out.push({ kind: STAR });
    else out.push({ kind: LITERAL, value: s });
  }
  return out as [Position, Position, Position];
}

function keyOf(p: Position): string {
  // Literal keys are segments (never `*` or `**`), so the three kinds never collide.
  return p.kind === LITERAL ? p.value : p.kind === STAR ? '*' : '**';
}

interface Node {
  children: Map<string, Node> | undefined;
  policy: PolicyRow | undefined;
}

/** The policies of one family as a specificity-ordered segment trie. */
export class PolicyIndex {
  private readonly root: Node = { children: undefined, policy: undefined };
  readonly size: number;

  constructor(readonly rows: readonly PolicyRow[]) {
    for (const row of rows) {
      const pos = positions(row.selector);
      if (!pos) continue;
      let n = this.root;
      for (const p of pos) {
        n.children ??= new Map();
        let next = n.children.get(keyOf(p));
        if (!next) n.children.set(keyOf(p), (next = { children: undefined, policy: undefined }));
        n = next;
      }
      // Two selectors with the same positions (`lease://a/**` and `lease://a/*/*` differ; `a/**/x` and `a/*/x` differ too) share a leaf only if equal.
      n.policy = row;
    }
    this.size = rows.length;
  }

  /** The most specific policy matching the route, or undefined. */
  match(route: string): PolicyRow | undefined {
    return find(this.root, routeSegments(route), 0);
  }
}

function find(n: Node, segs: readonly [string, string, string], depth: number): PolicyRow | undefined {
  if (depth === 3) return n.policy;
  const c = n.children;
  if (!c) return undefined;
  for (const key of [segs[depth]!, '*', '**']) {
    const next = c.get(key);
    if (next) {
      const hit = find(next, segs, depth + 1);
      if (hit) return hit;
    }
  }
  return undefined;
}

/** The bounds a route's leases get: its policy's fields inside the global limits. */
export interface Bounds {
  ttlMinMs: number;
  ttlMaxMs: number;
  ttlDefaultMs: number;
  /** Cap of max_lifetime_ms: the policy's value, else the server maximum. */
  maxLifetimeMs: number;
  /** What an acquire without max_lifetime_ms gets: the policy's value, else the global default (never above the cap). */
  maxLifetimeDefaultMs: number;
  lockDelayMs: number;
  maxWaiters: number;
}

export function boundsOf(policy: PolicyRow | undefined, limits: Limits): Bounds {
  const ttlMinMs = policy?.ttlMinMs ?? LEASE_TTL.min;
  const ttlMaxMs = policy?.ttlMaxMs ?? LEASE_TTL.max;
  const ttlDefaultMs = clamp(policy?.ttlDefaultMs ?? LEASE_TTL.default, ttlMinMs, ttlMaxMs);
  const maxLifetimeMs = Math.min(policy?.maxLifetimeMs ?? limits.maxLifetimeMs, limits.maxLifetimeMs);
  return {
    ttlMinMs,
    ttlMaxMs,
    ttlDefaultMs,
    maxLifetimeMs,
    maxLifetimeDefaultMs: Math.min(policy?.maxLifetimeMs ?? LIFETIME.default, maxLifetimeMs),
    lockDelayMs: policy?.lockDelayMs ?? LIMITS.lockDelayMs.default,
    maxWaiters: Math.min(policy?.maxWaiters ?? limits.waitersPerRoute, limits.waitersPerRoute),
  };
}

export function clamp(v: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, v));
}

/** The TTL and lifetime an acquire gets: asked values clamped into the bounds, defaults when absent. */
export function grantedTerms(b: Bounds, ttlMs: number | undefined, maxLifetimeMs: number | undefined): { ttlMs: number; maxLifetimeMs: number } {
  return {
    ttlMs: ttlMs === undefined ? b.ttlDefaultMs : clamp(ttlMs, b.ttlMinMs, b.ttlMaxMs),
    maxLifetimeMs: maxLifetimeMs === undefined ? b.maxLifetimeDefaultMs : Math.min(maxLifetimeMs, b.maxLifetimeMs),
  };
}

/** Per-family policy indexes, loaded from the store on first use after a change. */
export class PolicyCache {
  private readonly families = new Map<string, { index: PolicyIndex; loadedAt: number }>();

  /** `maxAgeMs`: reload a family's index at least this often (shared stores); Infinity on the embedded store. */
  constructor(
    private readonly maxAgeMs: number,
    private readonly clock: () => number,
  ) {}

  async index(tx: Tx, family: string): Promise<PolicyIndex> {
    const hit = this.families.get(family);
    const now = this.clock();
    if (hit && now - hit.loadedAt < this.maxAgeMs) return hit.index;
    const index = new PolicyIndex(await tx.policies.listPolicies(family));
    this.families.set(family, { index, loadedAt: now });
    return index;
  }

  async policyFor(tx: Tx, family: string, route: string): Promise<PolicyRow | undefined> {
    return (await this.index(tx, family)).match(route);
  }

  /** A family's policies changed (here or on another instance). */
  invalidate(family?: string): void {
    if (family === undefined) this.families.clear();
    else this.families.delete(family);
  }
}

/** A policy as answers show it. */
export interface PolicyView {
  selector: string;
  ttl_min_ms: number | null;
  ttl_max_ms: number | null;
  ttl_default_ms: number | null;
  max_lifetime_ms: number | null;
  lock_delay_ms: number | null;
  max_waiters: number | null;
  updated_at: string;
  updated_by: string;
}

export function policyView(r: PolicyRow): PolicyView {
  return {
    selector: r.selector,
    ttl_min_ms: r.ttlMinMs,
    ttl_max_ms: r.ttlMaxMs,
    ttl_default_ms: r.ttlDefaultMs,
    max_lifetime_ms: r.maxLifetimeMs,
    lock_delay_ms: r.lockDelayMs,
    max_waiters: r.maxWaiters,
    updated_at: new Date(r.updatedAt).toISOString(),
    updated_by: r.updatedBy,
  };
}

export interface LimitsView {
  ttl_min_ms: number;
  ttl_max_ms: number;
  ttl_default_ms: number;
  /** The cap a requested max_lifetime_ms is clamped to. */
  max_lifetime_ms: number;
  /** What an acquire without max_lifetime_ms gets. */
  max_lifetime_default_ms: number;
  lock_delay_ms: number;
  max_waiters: number;
}

export function limitsView(b: Bounds): LimitsView {
  return {
    ttl_min_ms: b.ttlMinMs,
    ttl_max_ms: b.ttlMaxMs,
    ttl_default_ms: b.ttlDefaultMs,
    max_lifetime_ms: b.maxLifetimeMs,
    max_lifetime_default_ms: b.maxLifetimeDefaultMs,
    lock_delay_ms: b.lockDelayMs,
    max_waiters: b.maxWaiters,
  };
}

export type PolicyFields = Pick<PolicyRow, 'ttlMinMs' | 'ttlMaxMs' | 'ttlDefaultMs' | 'maxLifetimeMs' | 'lockDelayMs' | 'maxWaiters'>;

/** Inconsistent or out-of-range bounds are `invalid_request` (nothing is stored). */
export function checkFields(f: PolicyFields, limits: Limits): void {
  const range = (name: string, v: number | null, min: number, max: number) => {
    if (v !== null && (!Number.isInteger(v) || v < min || v > max)) fail('invalid_request', `${name} must be an integer from ${min} to ${max}`);
  };
  range('ttl_min_ms', f.ttlMinMs, LEASE_TTL.min, LEASE_TTL.max);
  range('ttl_max_ms', f.ttlMaxMs, LEASE_TTL.min, LEASE_TTL.max);
  range('ttl_default_ms', f.ttlDefaultMs, LEASE_TTL.min, LEASE_TTL.max);
  range('max_lifetime_ms', f.maxLifetimeMs, LIFETIME.min, limits.maxLifetimeMs);
  range('lock_delay_ms', f.lockDelayMs, LIMITS.lockDelayMs.min, LIMITS.lockDelayMs.max);
  range('max_waiters', f.maxWaiters, LIMITS.waitersPerRoute.min, Math.min(LIMITS.waitersPerRoute.max, limits.waitersPerRoute));
  const min = f.ttlMinMs ?? LEASE_TTL.min;
  const max = f.ttlMaxMs ?? LEASE_TTL.max;
  if (min > max) fail('invalid_request', 'ttl_min_ms is above ttl_max_ms');
  if (f.ttlDefaultMs !== null && (f.ttlDefaultMs < min || f.ttlDefaultMs > max)) fail('invalid_request', 'ttl_default_ms is outside ttl_min_ms..ttl_max_ms');
}

/** Parse a policy selector, or `invalid_selector`. */
export function policySelector(selector: string): ParsedSelector {
  const r = parseSelector(selector);
  if (!r.ok) fail('invalid_selector', `selector ${r.reason}`);
  return r.value;
}
