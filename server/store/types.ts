/**
 * The store boundary. Two backends sit behind it: the embedded SQLite store
 * (server/store/sqlite) and, later, PostgreSQL. Everything above it talks to
 * the store only through `atomic()` and the asynchronous `Tx` it hands out, so
 * nothing above assumes the store is in-process: a PostgreSQL `Tx` is one
 * database transaction with row locks, an SQLite `Tx` one savepoint inside a
 * group-committed transaction.
 *
 * Time belongs to the store (backend time): `tx.now` is read once when the
 * atomic step starts, from the injected clock (SQLite) or the database clock
 * (PostgreSQL, after its locks are taken).
 */

import type { StoreKind } from '@/lib/wire';
import { matches, routeSegments, type Triple } from '@/lib/selector';
import type { Millis } from './millis';

export type Family = string & { readonly __brand: 'Family' };

export interface SessionRow {
  family: string;
  /** SHA-256 of the session secret; the secret itself is never stored. */
  idHash: string;
  incarnation: string;
  ownerId: string;
  ttlMs: number;
  createdAt: Millis;
  expiresAt: Millis;
  /**
   * Set once the session is closed or expired but still holds leases that
   * later steps end (CONTRACT §19, docs/design.md "Bounded steps"): how they
   * end, JSON text the engine reads. Null or absent while the session lives.
   */
  ending?: string | null;
  /**
   * The session's last batched calls (CONTRACT §20), JSON text the engine
   * reads (engine/core/views.ts, `SessionBatches`): the last batched renewal and
   * the last all-or-nothing acquire, each when and how many. Null or absent
   * before the first.
   */
  batches?: string | null;
  /**
   * How many leases the session holds, kept by the store as leases are
   * inserted and deleted (renew and keepalive answer it without counting
   * rows: docs/design.md "Batched calls"). Absent: 0 (a new session).
   */
  leaseCount?: number;
}

export interface LeaseRow {
  family: string;
  route: string;
  leaseId: string;
  fencingToken: number;
  sessionHash: string;
  ownerId: string;
  incarnation: string;
  acquiredAt: Millis;
  renewedAt: Millis;
  expiresAt: Millis;
  maxExpiresAt: Millis;
  ttlMs: number;
  renewalCount: number;
  /** Revision of the change that created this lease. */
  revision: number;
  /** The metadata object as canonical JSON text, or null. */
  metadata: string | null;
  /** The pending release request as JSON text (docs/release-requests.md), or null; ends with the row. */
  releaseRequest?: string | null;
}

/**
 * `l` renewed: the same row with the four fields a renewal moves. Built
 * field by field, not spread: a spread with overrides cost about 1 µs a
 * row, and a batched renewal makes two per lease (docs/benchmarks.md
 * "Wave 3, fifteenth session"). The row keeps exactly `l`'s keys, so the
 * flush still sees a narrow change (`TableSpec.narrow`).
 */
export function renewedRow(l: LeaseRow, renewedAt: Millis, expiresAt: Millis, ttlMs: number, renewalCount: number): LeaseRow {
  const row: LeaseRow = {
    family: l.family,
    route: l.route,
    leaseId: l.leaseId,
    fencingToken: l.fencingToken,
    sessionHash: l.sessionHash,
    ownerId: l.ownerId,
    incarnation: l.incarnation,
    acquiredAt: l.acquiredAt,
    renewedAt,
    expiresAt,
    maxExpiresAt: l.maxExpiresAt,
    ttlMs,
    renewalCount,
    revision: l.revision,
    metadata: l.metadata,
  };
  if ('releaseRequest' in l) row.releaseRequest = l.releaseRequest;
  return row;
}

export interface CheckpointRow {
  family: string;
  route: string;
  /** The JSON value as text, so it round-trips exactly. */
  value: string;
  fencingToken: number;
  leaseId: string;
  writtenAt: Millis;
  version: number;
}

export interface IdempotencyRow {
  family: string;
  op: string;
  route: string;
  requestId: string;
  digest: string;
  status: number;
  /** The original answer's payload, as JSON text. */
  answer: string;
  expiresAt: Millis;
}

export interface TokenRow {
  id: string;
  secretHash: string;
  name: string;
  family: string;
  grants: string[];
  root: boolean;
  kind: 'api' | 'embed';
  createdAt: Millis;
  expiresAt: Millis | null;
  revokedAt: Millis | null;
  createdBy: string | null;
}

/** A console login: the cookie holds a secret whose hash is `idHash`. */
export interface LoginRow {
  idHash: string;
  tokenId: string;
  createdAt: Millis;
  expiresAt: Millis;
}

/** One audit event (docs/semantics.md §11). `seq` is assigned by the store, increasing. */
export interface AuditRow {
  seq: number;
  time: Millis;
  eventType: string;
  family: string;
  route: string | null;
  /** The acting token (never its secret). */
  tokenId: string | null;
  /** The token a token_create / token_revoke / embed_token_create acted on. */
  subjectTokenId: string | null;
  ownerId: string | null;
  incarnation: string | null;
  /** The answer's code. */
  result: string;
  fencingToken: number | null;
  /** The caller's reason, verbatim. */
  reason: string | null;
  correlationId: string;
  latencyMs: number;
  /**
   * The values the event recorded, as JSON text of an object (a policy's
   * fields for `policy_set` / `policy_delete`), or null. Optional when
   * written: rows without it store null.
   */
  details?: string | null;
}

export type NewAuditRow = Omit<AuditRow, 'seq'>;

/** Audit event types written rarely (operators, tokens, denials): the store indexes them by type. */
export const RARE_AUDIT_EVENT_TYPES = [
  'lease_force_release',
  'lease_revoke',
  'token_create',
  'token_revoke',
  'embed_token_create',
  'access_denied',
  'policy_set',
  'policy_delete',
  'lease_release_request',
] as const;
export const RARE_AUDIT_TYPES: ReadonlySet<string> = new Set(RARE_AUDIT_EVENT_TYPES);

/** A page of audit events, newest first (time, then seq), read after a keyset position. */
export interface AuditScan {
  family: string;
  /** Routes matching this triple; events without a route only if `routeless`. */
  triple: Triple;
  /**
   * The selector as given. An event whose route is a selector (a policy's,
   * with a wildcard) matches only this exact string, or a triple matching
   * every route; never the routes its wildcards stand for.
   */
  selector?: string;
  routeless: boolean;
  eventType?: string;
  /** Inclusive lower bound on time. */
  since?: Millis;
  /** Exclusive upper bound on time. */
  until?: Millis;
  /** Only events strictly older than this (time, seq) position (newer, with `oldestFirst`). */
  before: [Millis, number] | null;
  /** One exact route only: oldest first, along its route index (the lease timeline, docs/release-requests.md). */
  oldestFirst?: boolean;
  /** Stop after this many matches. */
  limit: number;
  /** Stop after examining this many stored events. */
  budget: number;
}

export interface AuditScanResult {
  rows: AuditRow[];
  /** The (time, seq) of the last event examined, to resume from. */
  lastExamined: [number, number] | null;
  /** True when the index range was read to its end. */
  exhausted: boolean;
}

export interface LeaseScan {
  family: string;
  triple: Triple;
  /** Keyset position: only routes strictly greater than this are examined. */
  after: string | null;
  /** Stop after this many matches. */
  want: number;
  /** Stop after examining this many stored routes. */
  budget: number;
  now: Millis;
  ownerId?: string;
  incarnation?: string;
  /** Only leases expiring at or before this time ("expiring soon"). */
  expiresBy?: Millis;
  /** Only leases with a pending release request. */
  releaseRequested?: boolean;
}

/** Does an examined row belong in the scan's answer (selector, unexpired, filters)? The same test on every backend. */
export function scanAccepts(scan: LeaseScan, row: LeaseRow): boolean {
  return (
    matches(scan.triple, routeSegments(row.route)) &&
    row.expiresAt > scan.now &&
    (scan.ownerId === undefined || row.ownerId === scan.ownerId) &&
    (scan.incarnation === undefined || row.incarnation === scan.incarnation) &&
    (scan.expiresBy === undefined || row.expiresAt <= scan.expiresBy) &&
    (scan.releaseRequested !== true || (row.releaseRequest ?? null) !== null)
  );
}

export interface LeaseScanResult {
  rows: LeaseRow[];
  examined: number;
  /** The last route examined (the keyset position to resume from), or null if none. */
  lastExamined: string | null;
  /** True when the index range was read to its end. */
  exhausted: boolean;
}

/** One atomic step's view of the store. Every method is asynchronous by design. */
export interface Tx {
  /** Backend time in epoch milliseconds, fixed for this step. */
  readonly now: Millis;

  /** The current revision of a family (0 when it has never changed). */
  revision(family: string): Promise<number>;
  /** Is the store's schema the one this build migrates to (not older, not newer)? For readiness. */
  schemaCurrent(): Promise<boolean>;
  /** Increment the family's revision and return the new value. */
  bumpRevision(family: string): Promise<number>;

  getSession(idHash: string): Promise<SessionRow | undefined>;
  insertSession(row: SessionRow): Promise<void>;
  setSessionExpiry(idHash: string, expiresAt: Millis): Promise<void>;
  /** Mark a session as ending (its `ending`), due at `expiresAt`: no longer live, its remaining leases ended by later steps. */
  setSessionEnding(idHash: string, ending: string, expiresAt: Millis): Promise<void>;
  /** Record a session's last batched calls (its `batches`). */
  setSessionBatches(idHash: string, batches: string): Promise<void>;
  deleteSession(idHash: string): Promise<void>;
  /** Sessions whose expiry is at or before `now`, earliest first (of one family when given). */
  dueSessions(now: Millis, limit: number, family?: string): Promise<SessionRow[]>;
  /** Families with a lease or session due at `now` (at most `limit`), for a sweep that runs one step per family. */
  dueFamilies(now: Millis, limit: number): Promise<string[]>;
  /**
   * The sweep horizon through which both stores find due leases
   * (docs/design.md "The sweep horizon"): move it on for up to `limit`
   * leases whose horizon passed but that are not due; how many it moved on
   * (`limit`: there may be more). Only in a step without a family (a
   * family's batched transaction on PostgreSQL has none).
   */
  rearmLeases?(now: Millis, limit: number): Promise<number>;
  /** Live sessions (not ending), by (created_at, incarnation). */
  listSessions(family: string, ownerId: string | undefined, after: [number, string] | null, limit: number): Promise<SessionRow[]>;
  countSessionLeases(idHash: string): Promise<number>;
  /** The family's due leases plus the leases of its ending sessions, each counted up to `cap` (a sweep behind its work, for readiness). */
  countBacklog(family: string, now: Millis, cap: number): Promise<number>;

  getLease(family: string, route: string): Promise<LeaseRow | undefined>;
  insertLease(row: LeaseRow): Promise<void>;
  /** Update renewal fields of the lease with this exact lease_id and token. */
  updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: number, expiresAt: number, ttlMs: number, renewalCount: number): Promise<void>;
  /** Compare-and-delete: remove only the lease with this exact lease_id and token. */
  deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean>;
  /** The session's leases by route (the first `limit` when given). */
  sessionLeases(idHash: string, limit?: number): Promise<LeaseRow[]>;
  /**
   * The session's leases that carry a release request, by route (the first
   * `limit`), found through a partial index of those leases alone: the cost
   * grows with the pending requests, not with the session's leases.
   */
  sessionReleaseRequests(idHash: string, limit: number): Promise<LeaseRow[]>;
  /** Set the pending release request (JSON text) of the lease with this exact lease_id and token; false if it is not there. */
  setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean>;
  /** Leases whose expiry is at or before `now`, earliest first (of one family when given). */
  dueLeases(now: Millis, limit: number, family?: string): Promise<LeaseRow[]>;
  scanLeases(scan: LeaseScan): Promise<LeaseScanResult>;
  countLeases(family: string | null): Promise<number>;
  /** Held leases and live sessions per family (families with neither are left out). */
  familyCounts(): Promise<Array<{ family: string; leases: number; sessions: number }>>;

  getCheckpoint(family: string, route: string): Promise<CheckpointRow | undefined>;
  putCheckpoint(row: CheckpointRow): Promise<void>;

  getIdempotency(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined>;
  putIdempotency(row: IdempotencyRow): Promise<void>;
  deleteIdempotency(family: string, op: string, route: string, requestId: string): Promise<void>;
  pruneIdempotency(now: Millis, limit: number): Promise<number>;

  getTokenByHash(secretHash: string): Promise<TokenRow | undefined>;
  getToken(id: string): Promise<TokenRow | undefined>;
  insertToken(row: TokenRow): Promise<void>;
  revokeToken(id: string, at: Millis): Promise<void>;
  /**
   * A token and every token it minted, transitively (`created_by`), revoked
   * or not; empty when the token does not exist. A root token minted along
   * the way is an anchor of its own: the lineage does not descend into it.
   */
  tokenLineage(id: string): Promise<TokenRow[]>;
  /**
   * The token and the tokens that minted it, up to and including the nearest
   * root token (a root is its own anchor), at most `max` of them, the
   * oldest ancestor first; empty when the token does not exist. With
   * `lock` (a mint), PostgreSQL locks them FOR SHARE, in that order, until
   * the step ends: a concurrent revoke of any of them either committed first
   * (and is seen here) or waits for this step, and its lineage then holds
   * what this step inserted (docs/operations.md "Revocation").
   */
  tokenChain(id: string, max: number, lock: boolean): Promise<TokenRow[]>;
  /** Embed tokens minted by this token that are neither revoked nor expired at `now`. */
  countLiveEmbedTokens(createdBy: string, now: Millis): Promise<number>;
  listTokens(family: string | null): Promise<TokenRow[]>;
  countTokens(): Promise<number>;
  countLiveRootTokens(now: Millis): Promise<number>;

  insertLogin(row: LoginRow): Promise<void>;
  getLogin(idHash: string): Promise<LoginRow | undefined>;
  deleteLogin(idHash: string): Promise<void>;
  pruneLogins(now: Millis): Promise<number>;
  /** Delete up to `limit` embed tokens that expired at or before `now` (they are minted per page load). */
  pruneEmbedTokens(now: Millis, limit: number): Promise<number>;

  /** Append audit events (each gets the next seq). */
  insertAudit(rows: readonly NewAuditRow[]): Promise<void>;
  scanAudit(scan: AuditScan): Promise<AuditScanResult>;
  /**
   * The retention age and the global ceiling: delete up to `limit` of the
   * oldest audit events (lowest seq) while they are older than `olderThan`
   * or beyond the newest `maxRows` of all families together (counted by
   * `auditCounts`). Deletion stops at the first event that is neither; the
   * newest event is always kept, so a seq is never reused.
   * Returns how many were deleted.
   */
  pruneAudit(olderThan: Millis, maxRows: number, limit: number): Promise<number>;
  /** Audit rows per family (families with none are left out); kept with every insert and delete, never a scan. */
  auditCounts(): Promise<Map<string, number>>;
  /**
   * The family's quota: delete up to `limit` of the family's oldest events
   * (by time, then seq) beyond its newest `keepNewest` (at least one is
   * always kept). Returns how many were deleted.
   */
  pruneAuditFamily(family: string, keepNewest: number, limit: number): Promise<number>;

  getMeta(key: string): Promise<string | undefined>;
  /** Set a meta value only if it is absent; returns the value now stored. */
  initMeta(key: string, value: string): Promise<string>;

  /**
   * Shared stores only (absent on the embedded store): deliver `message` to
   * every instance's `Bus` listener if and when this step commits, after
   * the messages of every step that committed before it.
   */
  broadcast?(message: string): Promise<void>;
  /** Shared stores only: the FIFO queues every instance uses. */
  readonly waiters?: SharedWaiters;
  /** Per-pattern policies and lock-delay deadlines (docs/policies.md). */
  readonly policies: PolicyTx;
  /** The families' change logs, which a resuming stream replays (docs/design.md, "Change log"). */
  readonly changes: ChangeLogTx;
}

/** One logged change of a family, as the feed sends it (without the registration it matched). */
export interface ChangeRow {
  family: string;
  revision: number;
  route: string;
  /** Backend time of the step that made it (the retention by age). */
  time: Millis;
  /** The change event's data, as the JSON text the feed sends live. */
  data: string;
}

/** One family's change log, for metrics: `rows` is its revision minus its horizon (revisions are contiguous, so no scan). */
export interface ChangeLogStats {
  family: string;
  rows: number;
  horizon: number;
}

/**
 * The per-family change logs. A family's log holds every change with a
 * revision above its horizon (0 until the first prune; the family's revision
 * when a database from before the log was upgraded), so a resume from
 * `since` is complete exactly when `since >= horizon`.
 */
export interface ChangeLogTx {
  /** Append changes (written with the step: in the same transaction as the changes themselves). */
  append(rows: readonly ChangeRow[]): Promise<void>;
  /** The family's logged changes with `after < revision <= upTo`, in revision order, at most `limit`. */
  read(family: string, after: number, upTo: number, limit: number): Promise<ChangeRow[]>;
  /** Every change of the family above this revision is in the log. */
  horizon(family: string): Promise<number>;
  /**
   * Delete up to `limit` of the oldest changes (all families together) that
   * are neither among their family's newest `keepChanges` nor at or after
   * `olderThan`, raising each family's horizon to its last deleted revision.
   * Returns how many were deleted.
   */
  prune(keepChanges: number, olderThan: Millis, limit: number): Promise<number>;
  /** Every family's log size and horizon (families that never changed are left out). */
  stats(): Promise<ChangeLogStats[]>;
}

/** A family's rule for the routes its selector matches (null: the global limit or default applies). */
export interface PolicyRow {
  family: string;
  selector: string;
  ttlMinMs: number | null;
  ttlMaxMs: number | null;
  ttlDefaultMs: number | null;
  maxLifetimeMs: number | null;
  lockDelayMs: number | null;
  maxWaiters: number | null;
  updatedAt: number;
  /** The token id that set it. */
  updatedBy: string;
}

/** A free route that accepts no new holder before `until` (lock-delay). */
export interface LockDelayRow {
  family: string;
  route: string;
  until: number;
}

/** Policies and lock-delay deadlines, in the step's transaction. */
export interface PolicyTx {
  listPolicies(family: string): Promise<PolicyRow[]>;
  countPolicies(family: string): Promise<number>;
  /** Create or replace the policy of exactly this selector. */
  putPolicy(row: PolicyRow): Promise<void>;
  deletePolicy(family: string, selector: string): Promise<boolean>;
  getLockDelay(family: string, route: string): Promise<number | undefined>;
  setLockDelay(row: LockDelayRow): Promise<void>;
  /** Compare-and-delete: only the delay with exactly this deadline. */
  deleteLockDelay(family: string, route: string, until: number): Promise<boolean>;
  /** Delays whose deadline is at or before `now`, earliest first, of one family. */
  dueLockDelays(family: string, now: number, limit: number): Promise<LockDelayRow[]>;
  /** Families with a delay due at `now` (at most `limit`). */
  dueDelayFamilies(now: number, limit: number): Promise<string[]>;
  /** Routes in delay now (all families). */
  countLockDelays(now: number): Promise<number>;
  /**
   * A family's delays with routes strictly between `after` and `before`, in
   * route order, at most `limit` of them (due or not: the caller tests
   * `until`); read along the primary key, so the cost is `limit` rows.
   */
  scanLockDelays(family: string, after: string, before: string, limit: number): Promise<LockDelayRow[]>;
}

/** A queued acquire in a shared store's FIFO queue (the waiting client is held by `instance`). */
export interface WaiterRow {
  family: string;
  route: string;
  requestId: string;
  instance: string;
  sessionHash: string;
  digest: string;
  ttlMs: number;
  maxLifetimeMs: number;
  /** The metadata object as JSON text, or null. */
  metadata: string | null;
  /** The waiter's deadline (backend time); past it the row is ignored and removed. For a parked place, when it lapses. */
  deadline: Millis;
  /** The place's id, kept by every request that continues it (its queue tickets name it; docs/design.md "Queue tickets"). */
  place: string;
  /** A parked place: its wait ended without a grant and no client waits; it keeps its position until `deadline`. */
  parked: boolean;
}

/**
 * The shared FIFO queues of a store several instances use, so that the step
 * that frees a route grants its head waiter whichever instance holds it.
 * Present on a shared store's `Tx` only.
 */
export interface SharedWaiters {
  enqueueWaiter(row: WaiterRow): Promise<void>;
  /** The head waiter of a route, skipping (and removing) rows past their deadline or of instances no longer listening. */
  headWaiter(family: string, route: string, now: Millis): Promise<WaiterRow | undefined>;
  deleteWaiter(family: string, route: string, requestId: string): Promise<boolean>;
  countWaiters(family: string, route: string, now: Millis): Promise<number>;
  /** Waiter counts of several routes (absent: none). */
  countWaitersOf(family: string, routes: readonly string[], now: Millis): Promise<Map<string, number>>;
  findWaiter(family: string, route: string, requestId: string, now: Millis): Promise<WaiterRow | undefined>;
  sessionWaiting(family: string, route: string, sessionHash: string, now: Millis): Promise<boolean>;
  /** Remove and return every waiting (not parked) waiter of a session. */
  takeSessionWaiters(sessionHash: string): Promise<WaiterRow[]>;
  /** Remove every waiter an instance holds (at its shutdown); parked places stay (any instance may continue them). */
  deleteInstanceWaiters(instance: string): Promise<void>;
  /** Park a queued waiter (its wait ended): it keeps its position until `until`; false if its row was gone. */
  parkWaiter(family: string, route: string, requestId: string, until: Millis): Promise<boolean>;
  /** The live row (waiting or parked) holding this place, if any. */
  findPlace(family: string, route: string, place: string, now: Millis): Promise<WaiterRow | undefined>;
  /** A parked place continued by a new request (its waiter's fields, waiting again): false if it was not parked. */
  resumePlace(row: WaiterRow): Promise<boolean>;
  /** Keep a parked place until `until`; false if it was not parked. */
  reparkPlace(family: string, route: string, place: string, until: Millis): Promise<boolean>;
  deletePlace(family: string, route: string, place: string): Promise<boolean>;
  /** Drop a session's parked place on a route (it came back without its ticket). */
  deleteSessionPlace(family: string, route: string, sessionHash: string): Promise<boolean>;
  /** Parked places of a family whose time ran out, earliest first. */
  dueParked(family: string, now: Millis, limit: number): Promise<Array<{ route: string; place: string }>>;
  /** Families with a parked place whose time ran out (at most `limit`). */
  dueParkedFamilies(now: Millis, limit: number): Promise<string[]>;
  /** A session ended: its parked places lapse now (the sweep serves their routes); how many. */
  lapseSessionPlaces(sessionHash: string, now: Millis): Promise<number>;
}

/** What a step locks before it reads (see `Store.atomic`). */
export interface StepScope {
  /** The one family the step reads and changes: its revision row is locked first, and `tx.now` read after. */
  family?: string;
  /**
   * Rows of that family the step will read first (a hint): a shared store
   * reads them in the round trip that takes the lock.
   */
  prefetch?: {
    idempotency?: { op: string; route: string; requestId: string };
    sessionHash?: string;
    route?: string;
    /** More routes (a batched call's): read like `route`. */
    routes?: readonly string[];
  };
  /**
   * A long step (a sweep ending up to LEASEHOLD_STEP_MAX_LEASES leases):
   * a store that batches a family's steps into one transaction runs it in
   * a batch of its own, so the requests queued beside it do not wait for it
   * twice (CONTRACT §19).
   */
  alone?: boolean;
  /**
   * The step keeps leases already granted alive (a renewal, a keepalive, a
   * batched renewal): a store that forms a family's batches from a queue
   * takes such steps ahead of the others queued, so that a burst of new
   * acquisitions cannot delay them past their leases' expiry (docs/design.md
   * "Admission").
   */
  keeps?: boolean;
  /**
   * The step's share of a batch's work, when it is not its hinted routes'
   * count (`prefetch.routes`, else 1): a page of a listing counts the rows
   * it may examine, so a store that bounds its batches by work gives it no
   * renewals to delay beside it (docs/design.md "PostgreSQL: row locks, one
   * batch per family").
   */
  work?: number;
}

/** Receives a shared store's cross-instance messages. */
export interface BusListener {
  /** A message broadcast by a committed step (of any instance, this one included), in commit order. */
  message(text: string): void;
  /**
   * The notification channel is (again) connected: `revisions` holds every
   * family's revision read after it started listening, so any later change
   * arrives as a message. Also called after a reconnection.
   */
  ready(revisions: ReadonlyMap<string, number>): void;
  /** The channel was lost: messages may have been missed until the next `ready`. */
  lost(): void;
}

/** A shared store's channel between instances (PostgreSQL LISTEN/NOTIFY). */
export interface Bus {
  /** This instance's id, unique among live instances. */
  readonly instanceId: string;
  /** Start listening (once). */
  listen(listener: BusListener): void;
  /** Send a message outside any step (delivered to every instance, this one included). */
  send(message: string): Promise<void>;
  /** Is the instance with this id listening now? */
  alive(instanceId: string): Promise<boolean>;
}

/**
 * Why a store refuses writes while it still answers reads (CONTRACT §19):
 * its disk is full (`no_space`), or failing (`io_error`).
 */
export type WriteFault = 'no_space' | 'io_error';

/** What a store tells its engine outside any step. */
export type StoreNotice =
  /** Writes are refused from now on (`backend_unavailable`); reads are answered. */
  | { type: 'writes_refused'; fault: WriteFault; message: string }
  /** Writes are taken again. */
  | { type: 'writes_accepted' }
  /** Changes may have been applied that no step published (a write answered `outcome_unknown` was): streams must resync. */
  | { type: 'unpublished' };

/** Thrown by a backend that cannot answer safely. `maybeCommitted` means the step may have taken effect. */
export class StoreUnavailableError extends Error {
  constructor(
    message: string,
    readonly maybeCommitted: boolean,
  ) {
    super(message);
    this.name = 'StoreUnavailableError';
  }
}

export interface Store {
  readonly kind: StoreKind;
  /**
   * Run `fn` as one atomic, isolated step and resolve once its effects are
   * durable (committed). If `fn` throws, none of its writes take effect and
   * the error is rethrown. Never runs two steps' writes interleaved.
   * `fn` must only await the `Tx` it is given. With `scope.family`, a
   * shared store locks that family's revision row before `fn` reads
   * anything, so the steps of one family are serialized across instances
   * and `tx.now` never goes back along that order.
   */
  atomic<T>(fn: (tx: Tx) => Promise<T>, scope?: StepScope): Promise<T>;
  /**
   * How long ago (ms, real time) the oldest step of `family` not yet
   * answered was submitted (queued, or in a batch not yet committed); 0
   * when none is pending. How far behind the store is with the family's
   * work: the engine turns new acquisitions away while it is more than
   * `LEASEHOLD_ADMIT_QUEUE_MS` (docs/design.md "Admission").
   */
  queueDelayMs(family: string): number;
  /** Shared stores only: the channel between instances. */
  readonly bus?: Bus;
  /** Backend time now, for decisions outside a step (cache ages, timers). */
  now(): Millis;
  /** The store's epoch (created with the store, never changes). */
  epoch(): string;
  /** Flush pending work and release the store. */
  close(): Promise<void>;
  /** Why writes are refused now; undefined while they are taken (a store that never refuses them need not say). */
  writeFault?(): WriteFault | undefined;
  /** Listen for the store's notices (see StoreNotice); returns the unsubscribe. */
  subscribe?(listener: (notice: StoreNotice) => void): () => void;
}

/** One of the oldest audit events, as the global prune reads them. */
export interface OldAuditRow {
  seq: number;
  time: number;
  family: string;
}

/**
 * Which of the oldest events (ascending seq) the global prune deletes: the
 * leading run that is older than `olderThan` or among the `excess` oldest
 * beyond the ceiling, never the newest event (`maxSeq`). Both stores use it.
 */
export function prunePrefix(oldest: readonly OldAuditRow[], olderThan: number, excess: number, maxSeq: number): OldAuditRow[] {
  const out: OldAuditRow[] = [];
  for (let i = 0; i < oldest.length; i++) {
    const r = oldest[i]!;
    if (r.seq >= maxSeq || (r.time >= olderThan && i >= excess)) break;
    out.push(r);
  }
  return out;
}

/** Deleted events per family, to keep the per-family counts. */
export function tally(rows: readonly { family: string }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) out.set(r.family, (out.get(r.family) ?? 0) + 1);
  return out;
}
