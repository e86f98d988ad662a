/**
 * The SQL dialects the stores speak, as far as the shared plans need them
 * (docs/design.md "Scan plans, written once"): placeholders, forcing an
 * index, boolean columns, column aliases, and how a selector's literal
 * route segments are tested on an examined row.
 */

import type { StoreKind } from '@/lib/wire';
import type { Triple } from '@/lib/selector';

export interface Dialect {
  readonly name: StoreKind;
  /** The placeholder of the n-th parameter (from 1). */
  param(n: number): string;
  /**
   * The placeholder of the n-th parameter in a statement that uses one more
   * than once or out of order: on SQLite a named one (`@p1`, bound by
   * `named`), since better-sqlite3 binds an array only to bare `?` in text
   * order; on PostgreSQL `$n`.
   */
  numbered(n: number): string;
  /** ` INDEXED BY <index>` where the planner must be told (SQLite prefers the family's primary key), else nothing. */
  indexedBy(index: string): string;
  /** A boolean column is true. */
  isTrue(column: string): string;
  /** `column AS field`, the field name kept in camel case. */
  alias(column: string, field: string): string;
  /** Conditions that hold exactly when a route's literal segments equal the triple's (`bind` adds a parameter, returns its placeholder). */
  routeMatches(triple: Triple, bind: (v: unknown) => string): string[];
}

export const sqlite: Dialect = {
  name: 'sqlite',
  param: () => '?',
  numbered: (n) => `@p${n}`,
  indexedBy: (index) => ` INDEXED BY ${index}`,
  isTrue: (column) => `${column} = 1`,
  alias: (column, field) => (column === field ? column : `${column} AS ${field}`),
  // A GLOB is exact here: route segments hold no GLOB characters (lib/selector.ts).
  routeMatches: ([realm, area, resource], bind) => [`route GLOB ${bind(`lease://${realm ?? '*'}/${area ?? '*'}/${resource ?? '*'}`)}`],
};

export const postgres: Dialect = {
  name: 'postgres',
  param: (n) => `$${n}`,
  numbered: (n) => `$${n}`,
  indexedBy: () => '',
  isTrue: (column) => column,
  alias: (column, field) => (column === field ? column : `${column} AS "${field}"`),
  routeMatches: ([realm, area, resource], bind) => [
    'route IS NOT NULL',
    ...(realm !== null ? [`split_part(route, '/', 3) = ${bind(realm)}`] : []),
    ...(area !== null ? [`split_part(route, '/', 4) = ${bind(area)}`] : []),
    ...(resource !== null ? [`split_part(route, '/', 5) = ${bind(resource)}`] : []),
  ],
};

/** Parameters collected while a statement is rendered. */
export class Params {
  readonly values: unknown[] = [];
  constructor(private readonly d: Dialect) {}
  /** Add a value; its placeholder. */
  bind = (v: unknown): string => {
    this.values.push(v);
    return this.d.param(this.values.length);
  };
}

/** A column list with aliases: `[column, field]` pairs. */
export function columns(d: Dialect, cols: ReadonlyArray<readonly [string, string]>): string {
  return cols.map(([c, f]) => d.alias(c, f)).join(', ');
}

export const LEASE_FIELDS = [
  ['family', 'family'], ['route', 'route'], ['lease_id', 'leaseId'], ['fencing_token', 'fencingToken'],
  ['session_hash', 'sessionHash'], ['owner_id', 'ownerId'], ['incarnation', 'incarnation'], ['acquired_at', 'acquiredAt'],
  ['renewed_at', 'renewedAt'], ['expires_at', 'expiresAt'], ['max_expires_at', 'maxExpiresAt'],
  ['ttl_ms', 'ttlMs'], ['renewal_count', 'renewalCount'], ['revision', 'revision'], ['metadata', 'metadata'], ['release_request', 'releaseRequest'],
] as const;

export const AUDIT_FIELDS = [
  ['seq', 'seq'], ['time', 'time'], ['event_type', 'eventType'], ['family', 'family'], ['route', 'route'], ['token_id', 'tokenId'],
  ['subject_token_id', 'subjectTokenId'], ['owner_id', 'ownerId'], ['incarnation', 'incarnation'], ['result', 'result'],
  ['fencing_token', 'fencingToken'], ['reason', 'reason'], ['correlation_id', 'correlationId'], ['latency_ms', 'latencyMs'],
  ['details', 'details'],
] as const;

export const TOKEN_FIELDS = [
  ['id', 'id'], ['secret_hash', 'secretHash'], ['name', 'name'], ['family', 'family'], ['grants', 'grants'], ['root', 'root'], ['kind', 'kind'],
  ['created_at', 'createdAt'], ['expires_at', 'expiresAt'], ['revoked_at', 'revokedAt'], ['created_by', 'createdBy'],
] as const;

export const CHECKPOINT_FIELDS = [
  ['family', 'family'], ['route', 'route'], ['value', 'value'], ['fencing_token', 'fencingToken'], ['lease_id', 'leaseId'], ['written_at', 'writtenAt'], ['version', 'version'],
] as const;

export const POLICY_FIELDS = [
  ['family', 'family'], ['selector', 'selector'], ['ttl_min_ms', 'ttlMinMs'], ['ttl_max_ms', 'ttlMaxMs'], ['ttl_default_ms', 'ttlDefaultMs'],
  ['max_lifetime_ms', 'maxLifetimeMs'], ['lock_delay_ms', 'lockDelayMs'], ['max_waiters', 'maxWaiters'], ['updated_at', 'updatedAt'], ['updated_by', 'updatedBy'],
] as const;

export const SESSION_FIELDS = [
  ['family', 'family'], ['id_hash', 'idHash'], ['incarnation', 'incarnation'], ['owner_id', 'ownerId'], ['ttl_ms', 'ttlMs'],
  ['created_at', 'createdAt'], ['expires_at', 'expiresAt'], ['ending', 'ending'], ['batches', 'batches'], ['lease_count', 'leaseCount'],
] as const;

/** The parameters of a statement written with `Dialect.numbered`, as SQLite's driver binds them: `{ p1, p2, … }`. */
export function named(params: readonly unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < params.length; i++) out[`p${i + 1}`] = params[i];
  return out;
}
