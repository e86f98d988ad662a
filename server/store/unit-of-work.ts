/**
 * The one unit of work behind both step runners (docs/design.md, "One unit
 * of work"): what the SQLite batch (`sqlite/write-behind.ts`, `BatchTx`)
 * and the PostgreSQL batch (`postgres/pg-batch.ts`, `PgBatchTx`) share.
 *
 * - `CachedTable`: one table's rows as a batch sees them, read through and
 *   written behind, with the current step's writes in an overlay that is
 *   merged into the batch when the step succeeds and dropped when it
 *   throws. Each store extends it with how its pending rows are written.
 * - The hot tables' specs (keys, columns, values), shared by both flushes.
 * - `UnitOfWork`: the `Tx` method table. Cached rows are read through and
 *   written into the step's overlay (or, in a step that writes through,
 *   handed to the direct `Tx`); reads the caches cannot answer go through
 *   `read` (which first writes what the batch holds); uncached writes go
 *   through `write` (the step writes through under a savepoint from
 *   there); tokens, logins and meta, never cached, go to the direct `Tx`.
 *
 * Each store keeps only its dialect: its flush, its savepoint handling,
 * the family revision and (PostgreSQL) the prefetch.
 *
 * EVERY new `Tx` method or lease column is added here (the method table
 * below, `LEASES`), in the direct `Tx` of each store, and to the store
 * conformance test.
 */

import { routeSegments } from '@/lib/selector';
import { RARE_AUDIT_TYPES, renewedRow } from './types';
import type { AuditScan, AuditScanResult, ChangeLogTx, ChangeRow, CheckpointRow, IdempotencyRow, LeaseRow, LeaseScan, LeaseScanResult } from './types';
import type { LoginRow, NewAuditRow, PolicyTx, SessionRow, TokenRow, Tx } from './types';
import type { Millis } from './millis';

/** Separates the parts of a composite cache key. */
export const SEP = '\u0000';
export const leaseKey = (family: string, route: string) => family + SEP + route;
export const idemKey = (family: string, op: string, route: string, requestId: string) => [family, op, route, requestId].join(SEP);

export interface TableSpec<V> {
  name: string;
  keyCols: readonly string[];
  cols: readonly string[];
  values(row: V): unknown[];
  /**
   * A row that differs from the database's only in these fields is written
   * by an UPDATE of their columns alone (`params(row)`: its key, then `cols`' values): the
   * other columns' indexes are left alone. A renewal moves four columns of
   * a lease; rewriting the whole row touched every index of the table
   * (docs/benchmarks.md "Fleets").
   */
  narrow?: {
    fields: ReadonlyArray<keyof V & string>;
    cols: readonly string[];
    /** The key columns' values (`keyCols`' order), then `cols`' values: one row of the narrow UPDATE. */
    params(row: V): unknown[];
    /** `differsOnlyIn(before, after, fields)` written out for the table's row type (a table flushes one per changed row). */
    only?(before: V, after: V): boolean;
  };
}

/** `after` differs from `before` in `narrow`'s fields at most (rows of one key: plain objects of primitives). */
export function differsOnlyIn<V>(before: V, after: V, fields: ReadonlyArray<keyof V & string>): boolean {
  const a = after as Record<string, unknown>;
  const b = before as Record<string, unknown>;
  // for…in over plain rows: no key arrays built (this runs once per renewed lease at the flush).
  let n = 0;
  for (const k in a) {
    n++;
    if (b[k] !== a[k] && !(fields as readonly string[]).includes(k)) return false;
  }
  for (const _ in b) n--;
  return n === 0;
}

export const LEASES: TableSpec<LeaseRow> = {
  name: 'leases',
  keyCols: ['family', 'route'],
  cols: [
    'family', 'route', 'realm', 'area', 'resource', 'lease_id', 'fencing_token', 'session_hash', 'owner_id', 'incarnation',
    'acquired_at', 'renewed_at', 'expires_at', 'max_expires_at', 'ttl_ms', 'renewal_count', 'revision', 'metadata',
    'release_request',
  ],
  narrow: {
    fields: ['renewedAt', 'expiresAt', 'ttlMs', 'renewalCount'],
    cols: ['renewed_at', 'expires_at', 'ttl_ms', 'renewal_count'],
    params: (r) => [r.family, r.route, r.renewedAt, r.expiresAt, r.ttlMs, r.renewalCount],
    // Every other field of a LeaseRow; a release request absent or null is the same NULL column.
    only: (b, a) =>
      b.family === a.family && b.route === a.route && b.leaseId === a.leaseId && b.fencingToken === a.fencingToken &&
      b.sessionHash === a.sessionHash && b.ownerId === a.ownerId && b.incarnation === a.incarnation && b.acquiredAt === a.acquiredAt &&
      b.maxExpiresAt === a.maxExpiresAt && b.revision === a.revision && b.metadata === a.metadata && (b.releaseRequest ?? null) === (a.releaseRequest ?? null),
  },
  values: (r) => {
    const [realm, area, resource] = routeSegments(r.route);
    return [
      r.family, r.route, realm, area, resource, r.leaseId, r.fencingToken, r.sessionHash, r.ownerId, r.incarnation,
      r.acquiredAt, r.renewedAt, r.expiresAt, r.maxExpiresAt, r.ttlMs, r.renewalCount, r.revision, r.metadata,
      r.releaseRequest ?? null,
    ];
  },
};

export const SESSIONS: TableSpec<SessionRow> = {
  name: 'sessions',
  keyCols: ['id_hash'],
  cols: ['id_hash', 'family', 'incarnation', 'owner_id', 'ttl_ms', 'created_at', 'expires_at', 'ending', 'batches', 'lease_count'],
  values: (r) => [r.idHash, r.family, r.incarnation, r.ownerId, r.ttlMs, r.createdAt, r.expiresAt, r.ending ?? null, r.batches ?? null, r.leaseCount ?? 0],
  // A keepalive, a lease count that moved, a batched call's note: the listing index is left alone.
  narrow: {
    fields: ['expiresAt', 'leaseCount', 'batches'],
    cols: ['expires_at', 'lease_count', 'batches'],
    params: (r) => [r.idHash, r.expiresAt, r.leaseCount ?? 0, r.batches ?? null],
  },
};

export const IDEMPOTENCY: TableSpec<IdempotencyRow> = {
  name: 'idempotency',
  keyCols: ['family', 'op', 'route', 'request_id'],
  cols: ['family', 'op', 'route', 'request_id', 'digest', 'status', 'answer', 'expires_at'],
  values: (r) => [r.family, r.op, r.route, r.requestId, r.digest, r.status, r.answer, r.expiresAt],
};

export const CHECKPOINTS: TableSpec<CheckpointRow> = {
  name: 'checkpoints',
  keyCols: ['family', 'route'],
  cols: ['family', 'route', 'value', 'fencing_token', 'lease_id', 'written_at', 'version'],
  values: (r) => [r.family, r.route, r.value, r.fencingToken, r.leaseId, r.writtenAt, r.version],
};

export const AUDIT_COLS = [
  'time', 'family', 'event_type', 'route', 'token_id', 'subject_token_id', 'owner_id', 'incarnation',
  'result', 'fencing_token', 'reason', 'correlation_id', 'latency_ms', 'rare', 'details',
] as const;

/** An audit row's values in `AUDIT_COLS` order; `rare` is the dialect's true (the column is true or null). */
export function auditValues(r: NewAuditRow, rare: unknown): unknown[] {
  return [
    r.time, r.family, r.eventType, r.route, r.tokenId, r.subjectTokenId, r.ownerId, r.incarnation,
    r.result, r.fencingToken, r.reason, r.correlationId, r.latencyMs, RARE_AUDIT_TYPES.has(r.eventType) ? rare : null, r.details ?? null,
  ];
}

/** The change log's columns (docs/design.md, "Change log"), and a row's values in their order: both stores. */
export const CHANGE_COLS = ['family', 'revision', 'route', 'time', 'data'] as const;

export const changeValues = (r: ChangeRow): unknown[] => [r.family, r.revision, r.route, r.time, r.data];

/** A table's pending writes: a row, or null for a deleted key. */
export type Entries<V> = ReadonlyArray<readonly [string, V | null]>;

/** One table's rows as a batch sees them: read through, written behind (see the file comment). */
export class CachedTable<V> {
  /** State known in this batch (read, or written by a step that succeeded): a row, or null when absent. */
  protected readonly known = new Map<string, V | null>();
  /** Keys of `known` written by steps that succeeded and not yet in the database. */
  protected readonly dirty = new Set<string>();
  /** The current step's writes. */
  protected readonly step = new Map<string, V | null>();

  constructor(readonly spec: TableSpec<V>) {}

  /** The row under `key`: the step's, else the batch's, else loaded (synchronously or not) and remembered. */
  read(key: string, load: () => V | undefined | Promise<V | undefined>): V | undefined | Promise<V | undefined> {
    let v = this.step.get(key);
    if (v === undefined) v = this.known.get(key);
    if (v !== undefined) return v ?? undefined;
    const got = load();
    return got instanceof Promise ? this.loadedLater(key, got) : this.loaded(key, got);
  }

  private async loadedLater(key: string, got: Promise<V | undefined>): Promise<V | undefined> {
    return this.loaded(key, await got);
  }

  private loaded(key: string, r: V | undefined): V | undefined {
    this.known.set(key, r ?? null);
    return r ?? undefined;
  }

  /** Whether the batch or the step knows this key's row (or that it has none). */
  knows(key: string): boolean {
    return this.step.has(key) || this.known.has(key);
  }

  /** A row read ahead of the steps (null: absent); a key already known stays as it is. */
  learn(key: string, v: V | null): void {
    if (!this.known.has(key)) this.known.set(key, v);
  }

  write(key: string, v: V | null): void {
    this.step.set(key, v);
  }

  get stepWrites(): number {
    return this.step.size;
  }

  commitStep(): void {
    for (const [k, v] of this.step) {
      this.known.set(k, v);
      this.dirty.add(k);
    }
    this.step.clear();
  }

  abortStep(): void {
    this.step.clear();
  }

  /** Forget everything (a batch that did not commit, or after a step wrote through). */
  reset(): void {
    this.known.clear();
    this.dirty.clear();
    this.step.clear();
  }

  /** The batch's pending rows, now counted as written (the cache stays valid); undefined when none. */
  protected takeBatch(): Entries<V> | undefined {
    if (this.dirty.size === 0) return undefined;
    const entries = [...this.dirty].map((k) => [k, this.known.get(k)!] as const);
    this.dirty.clear();
    return entries;
  }

  /** The step's rows, now counted as written (it writes through from here); undefined when none. */
  protected takeStep(): Entries<V> | undefined {
    if (this.step.size === 0) return undefined;
    const entries = [...this.step];
    this.step.clear();
    return entries;
  }
}

/** The state every unit of work keeps (in one object: see `UnitOfWork`). */
interface StepState {
  /** The current step writes through SQL under a savepoint. */
  direct: boolean;
  /** The step's audit rows, appended with the batch when it succeeds. */
  stepAudit: NewAuditRow[];
  /** Change-log rows (docs/design.md, "Change log"): the batch's, and the current step's. */
  changes: ChangeRow[];
  stepChanges: ChangeRow[];
}

/**
 * One batch's `Tx` (see the file comment). Mutable state lives in one
 * object (`st`), so a wrapper made with `Object.create(tx)` (tests inject
 * faults that way) changes the batch's state, not a shadow of it.
 */
export abstract class UnitOfWork<B extends Tx = Tx> implements Tx {
  abstract now: Millis;
  abstract readonly policies: PolicyTx;
  abstract readonly changes: ChangeLogTx;
  protected abstract readonly st: StepState;
  /** The direct statements: every `Tx` method answered by SQL at once. */
  protected abstract readonly base: B;
  protected abstract readonly leases: CachedTable<LeaseRow>;
  protected abstract readonly sessions: CachedTable<SessionRow>;
  protected abstract readonly idem: CachedTable<IdempotencyRow>;
  protected abstract readonly checkpoints: CachedTable<CheckpointRow>;

  abstract revision(family: string): Promise<number>;
  abstract bumpRevision(family: string): Promise<number>;

  /** A read the caches cannot answer: the database first holds every write so far, this step's included. */
  protected abstract read<T>(f: () => Promise<T>): Promise<T>;
  /** An uncached write: from here on the step writes through SQL, under a savepoint. */
  protected abstract write<T>(f: () => Promise<T>): Promise<T>;
  /** A cached table's row written through by a step that writes through (the caches may be stale once it ends). */
  protected abstract wroteThrough(): void;

  /**
   * Whether a session may have a lease with a pending release request,
   * answered without flushing the batch (`read`): false only when neither
   * the database nor a row waiting in the caches holds one. A store that
   * cannot tell says true, and the list is read (docs/design.md "Batched
   * calls": a renewal whose session has no request reads nothing more).
   */
  protected mayHaveReleaseRequests(_idHash: string): boolean {
    return true;
  }
  /** A release request was written behind for a lease of this session (see `mayHaveReleaseRequests`). */
  protected releaseRequestWritten(_sessionHash: string): void {}

  // The cached rows' loaders (synchronous where the driver is).
  protected abstract sessionRow(idHash: string): SessionRow | undefined | Promise<SessionRow | undefined>;
  protected abstract leaseRow(family: string, route: string): LeaseRow | undefined | Promise<LeaseRow | undefined>;
  protected abstract checkpointRow(family: string, route: string): CheckpointRow | undefined | Promise<CheckpointRow | undefined>;
  protected abstract idempotencyRow(family: string, op: string, route: string, requestId: string): IdempotencyRow | undefined | Promise<IdempotencyRow | undefined>;

  /**
   * The policy table: policies and lock-delays are never cached, so reads go
   * straight to SQL and writes make the step write through (a step that
   * throws undoes them too). The lock-delay read and write are the store's.
   */
  protected delegatePolicies(p: PolicyTx, lockDelay: Pick<PolicyTx, 'getLockDelay' | 'setLockDelay'>): PolicyTx {
    return {
      listPolicies: (family) => p.listPolicies(family),
      countPolicies: (family) => p.countPolicies(family),
      putPolicy: (row) => this.write(() => p.putPolicy(row)),
      deletePolicy: (family, selector) => this.write(() => p.deletePolicy(family, selector)),
      getLockDelay: lockDelay.getLockDelay,
      setLockDelay: lockDelay.setLockDelay,
      deleteLockDelay: (family, route, until) => this.write(() => p.deleteLockDelay(family, route, until)),
      dueLockDelays: (family, now, limit) => p.dueLockDelays(family, now, limit),
      dueDelayFamilies: (now, limit) => p.dueDelayFamilies(now, limit),
      countLockDelays: (now) => p.countLockDelays(now),
      scanLockDelays: (family, after, before, limit) => p.scanLockDelays(family, after, before, limit),
    };
  }

  /**
   * The change log: appends are the store's; a replay's pages read the
   * batch's own rows from memory (merged with what the database holds), so a
   * herd of resuming streams does not flush the batch at every page; only a
   * prune (which writes through) moves a horizon.
   */
  protected delegateChanges(c: ChangeLogTx, append: ChangeLogTx['append']): ChangeLogTx {
    return {
      append,
      read: async (family, after, upTo, limit) => {
        const inRange = (r: ChangeRow) => r.family === family && r.revision > after && r.revision <= upTo;
        const held = this.heldChanges().filter(inRange);
        const stored = await c.read(family, after, upTo, limit);
        return held.length === 0 ? stored : [...stored, ...held].sort((a, b) => a.revision - b.revision).slice(0, limit);
      },
      horizon: (family) => c.horizon(family),
      prune: (keepChanges, olderThan, limit) => this.write(() => c.prune(keepChanges, olderThan, limit)),
      stats: () => this.read(() => c.stats()),
    };
  }

  /** Change-log rows appended but not yet in the database (the store's flush writes them). */
  protected heldChanges(): ChangeRow[] {
    return [...this.st.changes, ...this.st.stepChanges];
  }

  // ---- cached rows ------------------------------------------------------------

  async getSession(idHash: string): Promise<SessionRow | undefined> {
    if (this.st.direct) return this.base.getSession(idHash);
    return this.sessions.read(idHash, () => this.sessionRow(idHash));
  }
  async insertSession(row: SessionRow): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.insertSession(row);
    }
    this.sessions.write(row.idHash, row);
  }
  async setSessionExpiry(idHash: string, expiresAt: Millis): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.setSessionExpiry(idHash, expiresAt);
    }
    const s = await this.getSession(idHash);
    if (s) this.sessions.write(idHash, { ...s, expiresAt });
  }
  async setSessionEnding(idHash: string, ending: string, expiresAt: Millis): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.setSessionEnding(idHash, ending, expiresAt);
    }
    const s = await this.getSession(idHash);
    if (s) this.sessions.write(idHash, { ...s, ending, expiresAt });
  }
  async setSessionBatches(idHash: string, batches: string): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.setSessionBatches(idHash, batches);
    }
    const s = await this.getSession(idHash);
    if (s) this.sessions.write(idHash, { ...s, batches });
  }
  async deleteSession(idHash: string): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.deleteSession(idHash);
    }
    this.sessions.write(idHash, null);
  }

  async getLease(family: string, route: string): Promise<LeaseRow | undefined> {
    if (this.st.direct) return this.base.getLease(family, route);
    return this.leases.read(leaseKey(family, route), () => this.leaseRow(family, route));
  }
  async insertLease(row: LeaseRow): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.insertLease(row);
    }
    this.leases.write(leaseKey(row.family, row.route), row);
    await this.countLease(row.sessionHash, 1);
  }

  /** The session's lease count moves with its leases (`SessionRow.leaseCount`); a session already gone has none to keep. */
  private async countLease(idHash: string, by: 1 | -1): Promise<void> {
    const s = await this.getSession(idHash);
    if (s) this.sessions.write(idHash, { ...s, leaseCount: Math.max(0, (s.leaseCount ?? 0) + by) });
  }
  async updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: Millis, expiresAt: Millis, ttlMs: number, renewalCount: number): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.updateLeaseRenewal(family, route, leaseId, renewedAt, expiresAt, ttlMs, renewalCount);
    }
    // The key built once for the read and the write (a renewal is the hot path).
    const key = leaseKey(family, route);
    const l = await this.leases.read(key, () => this.leaseRow(family, route));
    if (l && l.leaseId === leaseId) this.leases.write(key, renewedRow(l, renewedAt, expiresAt, ttlMs, renewalCount));
  }
  async setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.setReleaseRequest(family, route, leaseId, fencingToken, request);
    }
    const l = await this.getLease(family, route);
    if (!l || l.leaseId !== leaseId || l.fencingToken !== fencingToken) return false;
    this.releaseRequestWritten(l.sessionHash);
    this.leases.write(leaseKey(family, route), { ...l, releaseRequest: request });
    return true;
  }
  async deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.deleteLease(family, route, leaseId, fencingToken);
    }
    const l = await this.getLease(family, route);
    if (!l || l.leaseId !== leaseId || l.fencingToken !== fencingToken) return false;
    this.leases.write(leaseKey(family, route), null);
    await this.countLease(l.sessionHash, -1);
    return true;
  }

  async getCheckpoint(family: string, route: string): Promise<CheckpointRow | undefined> {
    if (this.st.direct) return this.base.getCheckpoint(family, route);
    return this.checkpoints.read(leaseKey(family, route), () => this.checkpointRow(family, route));
  }
  async putCheckpoint(row: CheckpointRow): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.putCheckpoint(row);
    }
    this.checkpoints.write(leaseKey(row.family, row.route), row);
  }

  async getIdempotency(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined> {
    if (this.st.direct) return this.base.getIdempotency(family, op, route, requestId);
    return this.idem.read(idemKey(family, op, route, requestId), () => this.idempotencyRow(family, op, route, requestId));
  }
  async putIdempotency(row: IdempotencyRow): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.putIdempotency(row);
    }
    this.idem.write(idemKey(row.family, row.op, row.route, row.requestId), row);
  }
  async deleteIdempotency(family: string, op: string, route: string, requestId: string): Promise<void> {
    if (this.st.direct) {
      this.wroteThrough();
      return this.base.deleteIdempotency(family, op, route, requestId);
    }
    this.idem.write(idemKey(family, op, route, requestId), null);
  }

  async insertAudit(rows: readonly NewAuditRow[]): Promise<void> {
    if (this.st.direct) return this.base.insertAudit(rows);
    this.st.stepAudit.push(...rows);
  }

  // ---- reads the caches cannot answer ------------------------------------------

  dueSessions(now: Millis, limit: number, family?: string): Promise<SessionRow[]> {
    return this.read(() => this.base.dueSessions(now, limit, family));
  }
  dueFamilies(now: Millis, limit: number): Promise<string[]> {
    return this.read(() => this.base.dueFamilies(now, limit));
  }
  listSessions(family: string, ownerId: string | undefined, after: [number, string] | null, limit: number): Promise<SessionRow[]> {
    return this.read(() => this.base.listSessions(family, ownerId, after, limit));
  }
  /** The session row's count (kept with its leases, no rows counted); a session row already gone: its leases counted. */
  async countSessionLeases(idHash: string): Promise<number> {
    const s = await this.getSession(idHash);
    if (s) return s.leaseCount ?? 0;
    return this.read(() => this.base.countSessionLeases(idHash));
  }
  countBacklog(family: string, now: Millis, cap: number): Promise<number> {
    return this.read(() => this.base.countBacklog(family, now, cap));
  }
  async sessionLeases(idHash: string, limit?: number): Promise<LeaseRow[]> {
    return this.learnLeases(await this.read(() => this.base.sessionLeases(idHash, limit)));
  }
  async sessionReleaseRequests(idHash: string, limit: number): Promise<LeaseRow[]> {
    if (!this.st.direct && !this.mayHaveReleaseRequests(idHash)) return [];
    return this.learnLeases(await this.read(() => this.base.sessionReleaseRequests(idHash, limit)));
  }
  async dueLeases(now: Millis, limit: number, family?: string): Promise<LeaseRow[]> {
    return this.learnLeases(await this.read(() => this.base.dueLeases(now, limit, family)));
  }
  /**
   * Rows just read (the database held every write so far) are what the
   * cache would load: ending a page of them then reads none again, one
   * round trip each on PostgreSQL (docs/design.md "Bounded steps").
   */
  private learnLeases(rows: LeaseRow[]): LeaseRow[] {
    if (!this.st.direct) for (const r of rows) this.leases.learn(leaseKey(r.family, r.route), r);
    return rows;
  }
  scanLeases(scan: LeaseScan): Promise<LeaseScanResult> {
    return this.read(() => this.base.scanLeases(scan));
  }
  countLeases(family: string | null): Promise<number> {
    return this.read(() => this.base.countLeases(family));
  }
  familyCounts(): Promise<Array<{ family: string; leases: number; sessions: number }>> {
    return this.read(() => this.base.familyCounts());
  }
  scanAudit(scan: AuditScan): Promise<AuditScanResult> {
    return this.read(() => this.base.scanAudit(scan));
  }
  auditCounts(): Promise<Map<string, number>> {
    return this.read(() => this.base.auditCounts());
  }

  // ---- tokens, logins and meta are never cached (written through only): read directly ----

  getTokenByHash(secretHash: string): Promise<TokenRow | undefined> {
    return this.base.getTokenByHash(secretHash);
  }
  getToken(id: string): Promise<TokenRow | undefined> {
    return this.base.getToken(id);
  }
  listTokens(family: string | null): Promise<TokenRow[]> {
    return this.base.listTokens(family);
  }
  countTokens(): Promise<number> {
    return this.base.countTokens();
  }
  countLiveRootTokens(now: Millis): Promise<number> {
    return this.base.countLiveRootTokens(now);
  }
  countLiveEmbedTokens(createdBy: string, now: Millis): Promise<number> {
    return this.base.countLiveEmbedTokens(createdBy, now);
  }
  tokenLineage(id: string): Promise<TokenRow[]> {
    return this.base.tokenLineage(id);
  }
  tokenChain(id: string, max: number, lock: boolean): Promise<TokenRow[]> {
    return this.base.tokenChain(id, max, lock);
  }
  getLogin(idHash: string): Promise<LoginRow | undefined> {
    return this.base.getLogin(idHash);
  }
  getMeta(key: string): Promise<string | undefined> {
    return this.base.getMeta(key);
  }
  schemaCurrent(): Promise<boolean> {
    return this.base.schemaCurrent();
  }

  // ---- uncached writes: the step writes through from here -----------------------

  pruneIdempotency(now: Millis, limit: number): Promise<number> {
    return this.write(() => this.base.pruneIdempotency(now, limit));
  }
  insertToken(row: TokenRow): Promise<void> {
    return this.write(() => this.base.insertToken(row));
  }
  revokeToken(id: string, at: Millis): Promise<void> {
    return this.write(() => this.base.revokeToken(id, at));
  }
  insertLogin(row: LoginRow): Promise<void> {
    return this.write(() => this.base.insertLogin(row));
  }
  deleteLogin(idHash: string): Promise<void> {
    return this.write(() => this.base.deleteLogin(idHash));
  }
  pruneLogins(now: Millis): Promise<number> {
    return this.write(() => this.base.pruneLogins(now));
  }
  pruneEmbedTokens(now: Millis, limit: number): Promise<number> {
    return this.write(() => this.base.pruneEmbedTokens(now, limit));
  }
  pruneAudit(olderThan: Millis, maxRows: number, limit: number): Promise<number> {
    return this.write(() => this.base.pruneAudit(olderThan, maxRows, limit));
  }
  pruneAuditFamily(family: string, keepNewest: number, limit: number): Promise<number> {
    return this.write(() => this.base.pruneAuditFamily(family, keepNewest, limit));
  }
  initMeta(key: string, value: string): Promise<string> {
    return this.write(() => this.base.initMeta(key, value));
  }
}
