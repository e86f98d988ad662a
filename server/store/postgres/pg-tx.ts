/**
 * The direct statements of the PostgreSQL store, on one pooled connection
 * inside one transaction (READ COMMITTED plus row locks; see
 * docs/design.md): the whole `Tx` of a step without a family, and what a
 * family's batch (`pg-batch.ts`) reads and writes through.
 * Statements are named, so each connection prepares each of them once.
 */

import { millis } from '../millis';
import type { PoolClient } from 'pg';
import { routeSegments } from '@/lib/selector';
import {
  RARE_AUDIT_TYPES,
  prunePrefix,
  tally,
  type OldAuditRow,
  type AuditRow,
  type AuditScan,
  type AuditScanResult,
  type CheckpointRow,
  type IdempotencyRow,
  type LeaseRow,
  type LeaseScan,
  type LeaseScanResult,
  type LoginRow,
  type NewAuditRow,
  type SessionRow,
  type PolicyTx,
  type SharedWaiters,
  type TokenRow,
  type Tx,
} from '../types';
import { CHANNEL, LOCK_TOKENS } from './pg-connection';
import { toStoreError } from './pg-errors';
import { PgWaiters } from './pg-waiters';
import { PgPolicies } from './pg-policies';
import { changeInsertSql, PgChangeLog } from './pg-change-log';
import { MIGRATIONS } from './schema';
import { CHECKPOINT_FIELDS, columns, LEASE_FIELDS, postgres, SESSION_FIELDS, TOKEN_FIELDS } from '../plan/dialect';
import { planLeaseScan, renderLeaseChunk, runLeaseScan } from '../plan/lease-scan';
import { planAuditScan, renderAuditScan } from '../plan/audit-scan';
import { auditPruneSql, backlogSql, dueFamiliesSql, dueSql, familyExcess, REARM_SQL, SweepFloor } from '../plan/expiry';

export const LEASE_COLS = columns(postgres, LEASE_FIELDS);
export const SESSION_COLS = columns(postgres, SESSION_FIELDS);
const TOKEN_COLS = columns(postgres, TOKEN_FIELDS);
const CHECKPOINT_COLS = columns(postgres, CHECKPOINT_FIELDS);
type RawToken = Omit<TokenRow, 'grants'> & { grants: string };

function tokenFromRaw(raw: RawToken | undefined): TokenRow | undefined {
  if (!raw) return undefined;
  return { ...raw, grants: JSON.parse(raw.grants) as string[] };
}

/**
 * Expired idempotency records, at most $2. SKIP LOCKED: two instances'
 * sweeps prune different rows, never wait on each other. In expiry order,
 * so the plan walks the expiry index and stops at the first live record:
 * without the order, a generic plan may read the whole table to find that
 * nothing has expired (it did, once a second, on every instance). The rows
 * found are deleted by their ctids (a TID scan; `ctid IN (…)` was planned
 * as a hash join over the whole table).
 */
export const PRUNE_IDEMPOTENCY = `DELETE FROM idempotency WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`;

/** Due work and audit pruning, rendered once from the shared plans (server/store/plan/expiry.ts). */
const PRUNE = auditPruneSql(postgres);
const DUE = {
  leases: dueSql(postgres, 'leases', false),
  leasesFamily: dueSql(postgres, 'leases', true),
  sessions: dueSql(postgres, 'sessions', false),
  sessionsFamily: dueSql(postgres, 'sessions', true),
  families: dueFamiliesSql(postgres),
};
const BACKLOG = backlogSql(postgres);

export class PgTx implements Tx {
  now = millis(0);
  readonly waiters: SharedWaiters = new PgWaiters(this);
  readonly policies: PolicyTx = new PgPolicies(this);
  readonly changes = new PgChangeLog(this);
  private messages: string[] = [];
  private locked: { family: string; revision: number; dirty: boolean; hasWaiters: boolean } | undefined;

  /** `floor`: the store's (PgStore), shared by its steps; where the sweep horizon's walks start. */
  constructor(
    private readonly client: PoolClient,
    private readonly floor = new SweepFloor(),
  ) {}

  /** One statement for the shared queues (see `q`). */
  run<R>(name: string, text: string, values: unknown[]): Promise<R[]> {
    return this.q(name, text, values);
  }

  /** Run one statement; connection faults become StoreUnavailableError. */
  private async q<R>(name: string, text: string, values: unknown[] = []): Promise<R[]> {
    try {
      const r = await this.client.query({ name: name === '' ? undefined : name, text, values });
      return r.rows as R[];
    } catch (e) {
      throw toStoreError(e, false);
    }
  }

  private async one<R>(name: string, text: string, values: unknown[] = []): Promise<R | undefined> {
    return (await this.q<R>(name, text, values))[0];
  }

  private async count(name: string, text: string, values: unknown[] = []): Promise<number> {
    const r = await this.one<{ n: number }>(name, text, values);
    return r?.n ?? 0;
  }

  private async changed(name: string, text: string, values: unknown[]): Promise<number> {
    try {
      const r = await this.client.query({ name, text, values });
      return r.rowCount ?? 0;
    } catch (e) {
      throw toStoreError(e, false);
    }
  }

  /**
   * The step's family, locked at BEGIN: its revision is kept here (nobody
   * else can change it until this step commits) and written back with the
   * COMMIT, and whether it has any queued waiter at all (if not, the
   * queue questions need no round trip until this step queues one).
   */
  lockFamily(family: string, revision: number, hasWaiters: boolean): void {
    this.locked = { family, revision, dirty: false, hasWaiters };
  }

  /** Does the locked family certainly have no waiter rows? */
  noWaiters(family: string): boolean {
    return this.locked?.family === family && !this.locked.hasWaiters;
  }

  /** A waiter row was queued in this family. */
  queuedIn(family: string): void {
    if (this.locked?.family === family) this.locked.hasWaiters = true;
  }

  /** Statements to send with the COMMIT, in order: the locked family's revision, the change log's rows, then the notifications. */
  commitStatements(quote: (s: string) => string): string {
    let sql = '';
    const l = this.locked;
    if (l?.dirty) sql += `UPDATE families SET revision = ${l.revision} WHERE family = ${quote(l.family)}; `;
    // The step's changes, logged with it (docs/design.md, "Change log").
    sql += changeInsertSql(this.changes.pending, quote);
    this.changes.pending = [];
    for (const m of this.messages) sql += `SELECT pg_notify('${CHANNEL}', ${quote(m)}); `;
    this.messages = [];
    return sql;
  }

  async schemaCurrent(): Promise<boolean> {
    const r = await this.one<{ version: number }>('schema', 'SELECT version FROM leasehold_schema');
    return r?.version === MIGRATIONS.length;
  }

  async revision(family: string): Promise<number> {
    if (this.locked?.family === family) return this.locked.revision;
    const r = await this.one<{ revision: number }>('rev', `SELECT revision FROM families WHERE family = $1`, [family]);
    return r?.revision ?? 0;
  }
  async bumpRevision(family: string): Promise<number> {
    if (this.locked?.family === family) {
      this.locked.dirty = true;
      return ++this.locked.revision;
    }
    const r = await this.one<{ revision: number }>(
      'bump',
      `INSERT INTO families (family, revision) VALUES ($1, 1)
       ON CONFLICT (family) DO UPDATE SET revision = families.revision + 1 RETURNING revision`,
      [family],
    );
    return r!.revision;
  }

  async getSession(idHash: string): Promise<SessionRow | undefined> {
    return this.one('sget', `SELECT ${SESSION_COLS} FROM sessions WHERE id_hash = $1`, [idHash]);
  }
  async insertSession(r: SessionRow): Promise<void> {
    await this.q(
      'sins',
      `INSERT INTO sessions (id_hash, family, incarnation, owner_id, ttl_ms, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [r.idHash, r.family, r.incarnation, r.ownerId, r.ttlMs, r.createdAt, r.expiresAt],
    );
  }
  async setSessionExpiry(idHash: string, expiresAt: number): Promise<void> {
    await this.q('sexp', `UPDATE sessions SET expires_at = $1 WHERE id_hash = $2`, [expiresAt, idHash]);
  }
  async setSessionEnding(idHash: string, ending: string, expiresAt: number): Promise<void> {
    await this.q('send', `UPDATE sessions SET ending = $1, expires_at = $2 WHERE id_hash = $3`, [ending, expiresAt, idHash]);
  }
  async setSessionBatches(idHash: string, batches: string): Promise<void> {
    await this.q('sbat', `UPDATE sessions SET batches = $1 WHERE id_hash = $2`, [batches, idHash]);
  }
  async deleteSession(idHash: string): Promise<void> {
    await this.q('sdel', `DELETE FROM sessions WHERE id_hash = $1`, [idHash]);
  }
  async dueSessions(now: number, limit: number, family?: string): Promise<SessionRow[]> {
    if (family === undefined) return this.q('sdue', DUE.sessions, [now, limit]);
    return this.q('sduef', DUE.sessionsFamily, [now, family, limit]);
  }
  async dueFamilies(now: number, limit: number): Promise<string[]> {
    const rows = await this.q<{ family: string }>('fdue', DUE.families, [now, now, limit, this.floor.at]);
    return rows.map((r) => r.family);
  }
  async rearmLeases(now: number, limit: number): Promise<number> {
    const r = await this.one<{ first: number | null; n: number }>('lrearm', REARM_SQL, [now, limit, this.floor.at]);
    this.floor.advance(now, r?.first ?? undefined);
    return r?.n ?? 0;
  }
  async listSessions(family: string, ownerId: string | undefined, after: [number, string] | null, limit: number): Promise<SessionRow[]> {
    const owner = ownerId === undefined ? '' : ` AND owner_id = $${after ? 5 : 3}`;
    const extra = ownerId === undefined ? [] : [ownerId];
    if (after) {
      return this.q(
        '',
        `SELECT ${SESSION_COLS} FROM sessions WHERE family = $1 AND ending IS NULL AND (created_at, incarnation) > ($2, $3)${owner}
         ORDER BY created_at, incarnation LIMIT $4`,
        [family, after[0], after[1], limit, ...extra],
      );
    }
    return this.q('', `SELECT ${SESSION_COLS} FROM sessions WHERE family = $1 AND ending IS NULL${owner} ORDER BY created_at, incarnation LIMIT $2`, [family, limit, ...extra]);
  }
  async countBacklog(family: string, now: number, cap: number): Promise<number> {
    return this.count('lbkl', BACKLOG, [now, family, cap, family, cap, this.floor.at]);
  }
  async countSessionLeases(idHash: string): Promise<number> {
    return this.count('scount', `SELECT count(*)::int8 AS n FROM leases WHERE session_hash = $1`, [idHash]);
  }

  async getLease(family: string, route: string): Promise<LeaseRow | undefined> {
    return this.one('lget', `SELECT ${LEASE_COLS} FROM leases WHERE family = $1 AND route = $2`, [family, route]);
  }
  async insertLease(r: LeaseRow): Promise<void> {
    const [realm, area, resource] = routeSegments(r.route);
    await this.q(
      'lins',
      // The session's lease count moves with it (SessionRow.leaseCount), in the same statement.
      `WITH ins AS (
         INSERT INTO leases (family, route, realm, area, resource, lease_id, fencing_token, session_hash, owner_id, incarnation,
           acquired_at, renewed_at, expires_at, max_expires_at, ttl_ms, renewal_count, revision, metadata, sweep_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $13)
         RETURNING session_hash)
       UPDATE sessions SET lease_count = lease_count + 1 WHERE id_hash IN (SELECT session_hash FROM ins)`,
      [
        r.family, r.route, realm, area, resource, r.leaseId, r.fencingToken, r.sessionHash, r.ownerId, r.incarnation,
        r.acquiredAt, r.renewedAt, r.expiresAt, r.maxExpiresAt, r.ttlMs, r.renewalCount, r.revision, r.metadata,
      ],
    );
  }
  async updateLeaseRenewal(family: string, route: string, leaseId: string, renewedAt: number, expiresAt: number, ttlMs: number, renewalCount: number): Promise<void> {
    await this.q(
      'lren',
      `UPDATE leases SET renewed_at = $1, expires_at = $2, sweep_at = LEAST(sweep_at, $2), ttl_ms = $3, renewal_count = $4 WHERE family = $5 AND route = $6 AND lease_id = $7`,
      [renewedAt, expiresAt, ttlMs, renewalCount, family, route, leaseId],
    );
  }
  async deleteLease(family: string, route: string, leaseId: string, fencingToken: number): Promise<boolean> {
    const n = await this.count(
      'ldel',
      `WITH del AS (DELETE FROM leases WHERE family = $1 AND route = $2 AND lease_id = $3 AND fencing_token = $4 RETURNING session_hash),
         counted AS (UPDATE sessions SET lease_count = greatest(0, lease_count - 1) WHERE id_hash IN (SELECT session_hash FROM del))
       SELECT count(*)::int8 AS n FROM del`,
      [family, route, leaseId, fencingToken],
    );
    return n === 1;
  }
  async setReleaseRequest(family: string, route: string, leaseId: string, fencingToken: number, request: string): Promise<boolean> {
    const n = await this.changed('lrr', `UPDATE leases SET release_request = $1 WHERE family = $2 AND route = $3 AND lease_id = $4 AND fencing_token = $5`, [
      request, family, route, leaseId, fencingToken,
    ]);
    return n === 1;
  }
  async sessionLeases(idHash: string, limit?: number): Promise<LeaseRow[]> {
    if (limit !== undefined) return this.q('lsesn', `SELECT ${LEASE_COLS} FROM leases WHERE session_hash = $1 ORDER BY route LIMIT $2`, [idHash, limit]);
    return this.q('lses', `SELECT ${LEASE_COLS} FROM leases WHERE session_hash = $1 ORDER BY route`, [idHash]);
  }
  async sessionReleaseRequests(idHash: string, limit: number): Promise<LeaseRow[]> {
    return this.q('lsesrr', `SELECT ${LEASE_COLS} FROM leases WHERE session_hash = $1 AND release_request IS NOT NULL ORDER BY route LIMIT $2`, [idHash, limit]);
  }
  async dueLeases(now: number, limit: number, family?: string): Promise<LeaseRow[]> {
    if (family === undefined) return this.q('ldue', DUE.leases, [now, limit, this.floor.at]);
    return this.q('lduef', DUE.leasesFamily, [now, family, limit, this.floor.at]);
  }
  async familyCounts(): Promise<Array<{ family: string; leases: number; sessions: number }>> {
    const rows = await this.q<{ family: string; leases: number; sessions: number }>(
      'fcounts',
      `SELECT family, sum(l)::int8 AS leases, sum(s)::int8 AS sessions FROM (
         SELECT family, count(*) AS l, 0 AS s FROM leases GROUP BY family
         UNION ALL SELECT family, 0, count(*) FROM sessions GROUP BY family) c
       GROUP BY family`,
    );
    return rows.map((r) => ({ family: r.family, leases: Number(r.leases), sessions: Number(r.sessions) }));
  }

  async countLeases(family: string | null): Promise<number> {
    if (family === null) return this.count('lcnt', `SELECT count(*)::int8 AS n FROM leases`);
    return this.count('lcntf', `SELECT count(*)::int8 AS n FROM leases WHERE family = $1`, [family]);
  }

  /** The shared LIST plan (server/store/plan/lease-scan.ts), read in chunks. */
  async scanLeases(scan: LeaseScan): Promise<LeaseScanResult> {
    const plan = planLeaseScan(scan);
    return runLeaseScan(scan, plan, (position, n) => {
      const q = renderLeaseChunk(postgres, plan, scan.family, position, n);
      // The text depends only on the index, so each is a named (prepared) statement.
      return this.q<LeaseRow>(`lscan-${plan.index}`, q.sql, q.params);
    });
  }

  async getCheckpoint(family: string, route: string): Promise<CheckpointRow | undefined> {
    return this.one(
      'cget',
      `SELECT ${CHECKPOINT_COLS} FROM checkpoints WHERE family = $1 AND route = $2`,
      [family, route],
    );
  }
  async putCheckpoint(r: CheckpointRow): Promise<void> {
    await this.q(
      'cput',
      `INSERT INTO checkpoints (family, route, value, fencing_token, lease_id, written_at, version) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (family, route) DO UPDATE SET value = excluded.value, fencing_token = excluded.fencing_token,
         lease_id = excluded.lease_id, written_at = excluded.written_at, version = excluded.version`,
      [r.family, r.route, r.value, r.fencingToken, r.leaseId, r.writtenAt, r.version],
    );
  }

  async getIdempotency(family: string, op: string, route: string, requestId: string): Promise<IdempotencyRow | undefined> {
    return this.one(
      'iget',
      `SELECT family, op, route, request_id AS "requestId", digest, status, answer, expires_at AS "expiresAt"
       FROM idempotency WHERE family = $1 AND op = $2 AND route = $3 AND request_id = $4`,
      [family, op, route, requestId],
    );
  }
  async putIdempotency(r: IdempotencyRow): Promise<void> {
    await this.q(
      'iput',
      `INSERT INTO idempotency (family, op, route, request_id, digest, status, answer, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (family, op, route, request_id) DO UPDATE SET digest = excluded.digest, status = excluded.status,
         answer = excluded.answer, expires_at = excluded.expires_at`,
      [r.family, r.op, r.route, r.requestId, r.digest, r.status, r.answer, r.expiresAt],
    );
  }
  async deleteIdempotency(family: string, op: string, route: string, requestId: string): Promise<void> {
    await this.q('idel', `DELETE FROM idempotency WHERE family = $1 AND op = $2 AND route = $3 AND request_id = $4`, [family, op, route, requestId]);
  }
  async pruneIdempotency(now: number, limit: number): Promise<number> {
    return this.changed('iprune', PRUNE_IDEMPOTENCY, [now, limit]);
  }

  async getTokenByHash(secretHash: string): Promise<TokenRow | undefined> {
    return tokenFromRaw(await this.one<RawToken>('tbyhash', `SELECT ${TOKEN_COLS} FROM tokens WHERE secret_hash = $1`, [secretHash]));
  }
  async getToken(id: string): Promise<TokenRow | undefined> {
    return tokenFromRaw(await this.one<RawToken>('tbyid', `SELECT ${TOKEN_COLS} FROM tokens WHERE id = $1`, [id]));
  }
  async insertToken(r: TokenRow): Promise<void> {
    await this.q(
      'tins',
      `INSERT INTO tokens (id, secret_hash, name, family, grants, root, kind, created_at, expires_at, revoked_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [r.id, r.secretHash, r.name, r.family, JSON.stringify(r.grants), r.root, r.kind, r.createdAt, r.expiresAt, r.revokedAt, r.createdBy],
    );
  }
  async revokeToken(id: string, at: number): Promise<void> {
    await this.q('trev', `UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, [at, id]);
  }
  async tokenLineage(id: string): Promise<TokenRow[]> {
    // The token first, in a statement of its own: a mint as any of the lineage
    // that locked its chain before this waits here, and once it commits the
    // walk below (a new snapshot under READ COMMITTED) sees what it minted.
    // A mint that comes later waits on this lock and then sees the revoke.
    await this.q('trevlock', `SELECT id FROM tokens WHERE id = $1 FOR UPDATE`, [id]);
    const rows = await this.q<RawToken>(
      'tlineage',
      `WITH RECURSIVE tree(id) AS (SELECT id FROM tokens WHERE id = $1 UNION SELECT t.id FROM tokens t JOIN tree ON t.created_by = tree.id WHERE NOT t.root)
       SELECT ${TOKEN_COLS} FROM tokens WHERE id IN (SELECT id FROM tree) ORDER BY created_at, id FOR UPDATE`,
      [id],
    );
    return rows.map((r) => tokenFromRaw(r)!);
  }
  async tokenChain(id: string, max: number, lock: boolean): Promise<TokenRow[]> {
    // Locked oldest first (the locking happens after the sort), the order a
    // revoke locks a lineage in, so a mint and a revoke never deadlock.
    const rows = await this.q<RawToken>(
      lock ? 'tchainl' : 'tchain',
      `WITH RECURSIVE chain(cid, parent, anchor, depth) AS (
         SELECT id, created_by, root, 1 FROM tokens WHERE id = $1
         UNION ALL
         SELECT t.id, t.created_by, t.root, c.depth + 1 FROM tokens t JOIN chain c ON t.id = c.parent WHERE NOT c.anchor AND c.depth < $2)
       SELECT ${TOKEN_COLS} FROM tokens JOIN chain ON tokens.id = chain.cid ORDER BY chain.depth DESC${lock ? ' FOR SHARE OF tokens' : ''}`,
      [id, max],
    );
    return rows.map((r) => tokenFromRaw(r)!);
  }
  async countLiveEmbedTokens(createdBy: string, now: number): Promise<number> {
    return this.count(
      'tembedn',
      `SELECT count(*)::int AS n FROM tokens WHERE created_by = $1 AND kind = 'embed' AND revoked_at IS NULL AND expires_at > $2`,
      [createdBy, now],
    );
  }
  async listTokens(family: string | null): Promise<TokenRow[]> {
    const raws =
      family === null
        ? await this.q<RawToken>('tlist', `SELECT ${TOKEN_COLS} FROM tokens ORDER BY created_at, id`)
        : await this.q<RawToken>('tlistf', `SELECT ${TOKEN_COLS} FROM tokens WHERE family = $1 ORDER BY created_at, id`, [family]);
    return raws.map((r) => tokenFromRaw(r)!);
  }
  /**
   * Counting tokens decides whether to create the bootstrap token, and
   * counting live roots whether a revoke may proceed: both first take a
   * transaction-scoped advisory lock, so instances deciding at once decide
   * one after the other (the first of several starting together creates the
   * bootstrap token; two revokes never remove the last two roots).
   */
  async countTokens(): Promise<number> {
    await this.q('tlock', `SELECT pg_advisory_xact_lock($1)`, [LOCK_TOKENS]);
    return this.count('tcount', `SELECT count(*)::int8 AS n FROM tokens`);
  }
  async countLiveRootTokens(now: number): Promise<number> {
    await this.q('tlock', `SELECT pg_advisory_xact_lock($1)`, [LOCK_TOKENS]);
    return this.count(
      'troots',
      `SELECT count(*)::int8 AS n FROM tokens WHERE root AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1)`,
      [now],
    );
  }

  async insertLogin(r: LoginRow): Promise<void> {
    await this.q('gins', `INSERT INTO logins (id_hash, token_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`, [r.idHash, r.tokenId, r.createdAt, r.expiresAt]);
  }
  async getLogin(idHash: string): Promise<LoginRow | undefined> {
    return this.one('gget', `SELECT id_hash AS "idHash", token_id AS "tokenId", created_at AS "createdAt", expires_at AS "expiresAt" FROM logins WHERE id_hash = $1`, [idHash]);
  }
  async deleteLogin(idHash: string): Promise<void> {
    await this.q('gdel', `DELETE FROM logins WHERE id_hash = $1`, [idHash]);
  }
  async pruneLogins(now: number): Promise<number> {
    return this.changed('gprune', `DELETE FROM logins WHERE expires_at <= $1`, [now]);
  }
  async pruneEmbedTokens(now: number, limit: number): Promise<number> {
    return this.changed(
      'tprune',
      `DELETE FROM tokens WHERE id IN (SELECT id FROM tokens WHERE kind = 'embed' AND expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [now, limit],
    );
  }

  async insertAudit(rows: readonly NewAuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    // The per-family counts first: their row lock orders two instances' batches of one family, so
    // seqs (taken by the INSERT below) commit in the order they were taken.
    await this.addAuditCounts(tally(rows));
    // One statement for the whole batch: columns as arrays, unnested.
    const cols: unknown[][] = Array.from({ length: 15 }, () => []);
    for (const r of rows) {
      const v = [r.time, r.family, r.eventType, r.route, r.tokenId, r.subjectTokenId, r.ownerId, r.incarnation, r.result, r.fencingToken, r.reason, r.correlationId, r.latencyMs, RARE_AUDIT_TYPES.has(r.eventType) ? true : null, r.details ?? null];
      v.forEach((x, i) => cols[i]!.push(x));
    }
    await this.q(
      'ains',
      `INSERT INTO audit (time, family, event_type, route, token_id, subject_token_id, owner_id, incarnation, result, fencing_token,
         reason, correlation_id, latency_ms, rare, details)
       SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
         $10::int8[], $11::text[], $12::text[], $13::int8[], $14::bool[], $15::text[])`,
      cols,
    );
  }

  /** Add to the per-family audit counts, families in a fixed order (so two instances' steps never deadlock on them). */
  private async addAuditCounts(perFamily: Map<string, number>): Promise<void> {
    if (perFamily.size === 0) return;
    const families = [...perFamily.keys()].sort();
    await this.q(
      'acnt',
      `INSERT INTO audit_counts (family, rows) SELECT * FROM unnest($1::text[], $2::int8[])
       ON CONFLICT (family) DO UPDATE SET rows = audit_counts.rows + EXCLUDED.rows`,
      [families, families.map((f) => perFamily.get(f)!)],
    );
  }

  async auditCounts(): Promise<Map<string, number>> {
    const rows = await this.q<{ family: string; rows: number }>('acounts', `SELECT family, rows FROM audit_counts WHERE rows > 0`);
    return new Map(rows.map((r) => [r.family, Number(r.rows)]));
  }

  async pruneAuditFamily(family: string, keepNewest: number, limit: number): Promise<number> {
    const row = await this.one<{ rows: number }>('acountf', `SELECT rows FROM audit_counts WHERE family = $1 FOR UPDATE`, [family]);
    const over = familyExcess(Number(row?.rows ?? 0), keepNewest, limit);
    if (over === 0) return 0;
    const n = await this.changed('adelf', PRUNE.deleteFamilyOldest, [family, over]);
    await this.addAuditCounts(new Map([[family, -n]]));
    return n;
  }

  /** The shared audit plan (server/store/plan/audit-scan.ts). */
  async scanAudit(scan: AuditScan): Promise<AuditScanResult> {
    const plan = planAuditScan(scan);
    const q = renderAuditScan(postgres, scan, plan);
    const rows = await this.q<AuditRow>('', q.sql, q.params);
    if (rows.length >= scan.limit || !q.edge) {
      const last = rows[rows.length - 1];
      return { rows, lastExamined: last ? [last.time, last.seq] : null, exhausted: rows.length < scan.limit };
    }
    // A short page: did the budget end it, or the index range?
    const edge = await this.one<{ time: number; seq: number }>('', q.edge.sql, q.edge.params);
    return { rows, lastExamined: edge ? [edge.time, edge.seq] : null, exhausted: edge === undefined };
  }

  async pruneAudit(olderThan: number, maxRows: number, limit: number): Promise<number> {
    const max = await this.one<{ seq: number | null }>('amax', PRUNE.maxSeq);
    const maxSeq = max?.seq ?? null;
    if (maxSeq === null) return 0;
    const total = [...(await this.auditCounts()).values()].reduce((n, k) => n + k, 0);
    const oldest = await this.q<OldAuditRow>('aold', PRUNE.oldest, [limit]);
    // The newest row stays, so a seq is never reused.
    const doomed = prunePrefix(oldest, olderThan, total - maxRows, maxSeq);
    if (doomed.length === 0) return 0;
    const n = await this.changed('adel', PRUNE.deleteThrough, [doomed[doomed.length - 1]!.seq]);
    await this.addAuditCounts(new Map([...tally(doomed)].map(([f, k]) => [f, -k])));
    return n;
  }

  async getMeta(key: string): Promise<string | undefined> {
    return (await this.one<{ value: string }>('mget', `SELECT value FROM meta WHERE key = $1`, [key]))?.value;
  }
  async initMeta(key: string, value: string): Promise<string> {
    await this.q('mins', `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, [key, value]);
    return (await this.getMeta(key))!;
  }

  /** Queued here and sent with the COMMIT, in the same round trip (see `commitStatements`). */
  async broadcast(message: string): Promise<void> {
    this.messages.push(message);
  }
}

