/**
 * The audit trail (docs/semantics.md §11).
 *
 * Two ways in. An admin action (force-release, revoke) writes its event in
 * the same atomic step as its state change, so there is no success without
 * its audit and no audit without its effect. Every other event is buffered
 * here and written in batches, one store step per flush (every 100 ms, or at
 * once when 1,000 are waiting): a crash loses at most the events of the last
 * flush interval, never an admin action's.
 *
 * `lease_conflict` (polling would flood the log), `invalid_credential`
 * and every other refusal of a caller who is not authenticated (they have no
 * family, and writing them would let anyone fill the trail) are counted, not
 * audited, and logged at most once per interval.
 *
 * Retention (docs/operations.md, "Threat model"): each family keeps at most
 * `maxRowsPerFamily` events, so one tenant's volume never prunes another's
 * history; all families together at most `maxRows` (the global ceiling);
 * and nothing older than `retentionMs`. An event never holds a secret, a session id, a body or a
 * metadata value: its fields are the closed list below.
 */

import { addMs, millis } from '../../store/millis';
import { correlationId } from '../core/ids';
import { RARE_AUDIT_EVENT_TYPES, type AuditRow, type NewAuditRow, type Store } from '../../store/types';
import { iso, type Json } from '../core/views';
import type { AuditFacts, Caller } from '../core/model';
import type { Logger } from '../core/logger';
import type { LeaseChange } from '../core/events';

export const AUDIT_EVENT_TYPES = [
  'session_open',
  'session_close',
  'session_expire',
  'lease_acquire',
  'lease_renew',
  'lease_release',
  'lease_expire',
  'lease_checkpoint',
  ...RARE_AUDIT_EVENT_TYPES,
] as const;

export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** A session's end as each of its leases records it on its route: event type and result. */
const SESSION_ENDS = {
  closed: ['lease_release', 'session_closed'],
  expired: ['lease_expire', 'session_expired'],
} as const;

/**
 * An event's `details` with what an end of a lease adds to them: the
 * lock-delay it started, and how many times the tenure was renewed (when
 * it was), which batched renewals do not say on the route (docs/design.md
 * "Audit"). `details` itself when the end adds nothing.
 */
function withEndDetails(details: Record<string, Json> | undefined, lockDelayUntil: number | undefined, renewalCount: number | undefined): Record<string, Json> | undefined {
  if (lockDelayUntil === undefined && !renewalCount) return details;
  return { ...details, ...(lockDelayUntil === undefined ? {} : { lock_delay_until: iso(lockDelayUntil) }), ...(renewalCount ? { renewal_count: renewalCount } : {}) };
}

/** What the API shows of one event (docs/semantics.md §11, plus `subject_token_id`). */
export interface AuditEvent {
  id: string;
  time: string;
  event_type: AuditEventType;
  family: string;
  route: string | null;
  token_id: string | null;
  subject_token_id: string | null;
  owner_id: string | null;
  holder_incarnation: string | null;
  result: string;
  fencing_token: number | null;
  reason: string | null;
  correlation_id: string;
  latency_ms: number;
  /** What the event recorded besides its reason (a policy's values); absent when nothing. */
  details?: Record<string, Json>;
}

export function auditView(r: AuditRow): AuditEvent {
  return {
    id: `ae_${r.seq}`,
    time: iso(r.time),
    event_type: r.eventType as AuditEventType,
    family: r.family,
    route: r.route,
    token_id: r.tokenId,
    subject_token_id: r.subjectTokenId,
    owner_id: r.ownerId,
    holder_incarnation: r.incarnation,
    result: r.result,
    fencing_token: r.fencingToken,
    reason: r.reason,
    correlation_id: r.correlationId,
    latency_ms: r.latencyMs,
    ...(typeof r.details === 'string' ? { details: JSON.parse(r.details) as Record<string, Json> } : {}),
  };
}

export type { AuditFacts, Caller, RequestInfo } from '../core/model';

/** How one engine call is audited. */
export interface AuditSpec {
  caller: Caller;
  type: AuditEventType;
  route: string | null;
  /** The success code (the answer's `code`). */
  success: string;
  /** Write the success event inside the step itself (admin actions). */
  inTx?: boolean;
  /** The caller's reason, verbatim: what the operation chose goes in the route or `details`, never here. */
  reason?: string;
}

export interface AuditOptions {
  /** Events older than this are pruned (ms). */
  retentionMs: number;
  /** At most this many events are kept, all families together (the global ceiling). */
  maxRows: number;
  /** At most this many events are kept per family (its quota). */
  maxRowsPerFamily: number;
  flushIntervalMs?: number;
  pruneIntervalMs?: number;
  /** Where counted-not-audited refusals are reported (at most every 10 s, with their counts). */
  logger?: Logger;
}

export const DEFAULT_AUDIT: AuditOptions = { retentionMs: 30 * 86_400_000, maxRows: 10_000_000, maxRowsPerFamily: 1_000_000 };

/** Refusals counted instead of audited row by row. */
export type Counted = 'lease_conflict' | 'invalid_credential' | 'anonymous_refusal' | 'acquire_shed';
const COUNTED = new Set(['lease_conflict', 'invalid_credential']);
/**
 * Buffered events kept while the store is unavailable; beyond it new events
 * are dropped (and counted): the ones from before the outage are the ones an
 * investigator needs, and dropping is O(1) while requests keep failing.
 */
const MAX_BUFFERED = 100_000;
const FLUSH_AT = 1_000;
const WRITE_CHUNK = 250;
/** Rows one retention step deletes at most (each step holds the writer for a few ms). */
export const PRUNE_BATCH = 500;
const PRUNE_STEPS_PER_TICK = 40;
const LOG_EVERY_MS = 10_000;

export class AuditLog {
  private buffer: NewAuditRow[] = [];
  private flushing: Promise<void> | undefined;
  private flushTimer: ReturnType<typeof setInterval> | undefined;
  private pruneTimer: ReturnType<typeof setInterval> | undefined;
  private pruning = false;
  private lastLog = 0;
  private unlogged: Record<Counted, number> = { lease_conflict: 0, invalid_credential: 0, anonymous_refusal: 0, acquire_shed: 0 };
  /**
   * Totals since start: refusals counted instead of audited (`anonymous_refusal`:
   * any refusal of a caller with no token, e.g. a cross-site logout;
   * `acquire_shed`: acquisitions turned away while the family was behind,
   * docs/design.md "Admission"), and events lost to a full buffer.
   */
  readonly counts = { lease_conflict: 0, invalid_credential: 0, anonymous_refusal: 0, acquire_shed: 0, dropped: 0 };
  readonly opts: Required<Omit<AuditOptions, 'logger'>> & Pick<AuditOptions, 'logger'>;

  constructor(
    private readonly store: Store,
    opts: Partial<AuditOptions> = {},
  ) {
    this.opts = { flushIntervalMs: 100, pruneIntervalMs: 1_000, ...DEFAULT_AUDIT, ...opts };
  }

  /** Start the periodic flush and prune. */
  start(): void {
    this.flushTimer = setInterval(() => void this.flush().catch(() => undefined), this.opts.flushIntervalMs);
    this.pruneTimer = setInterval(() => void this.pruneAll(), this.opts.pruneIntervalMs);
    this.flushTimer.unref?.();
    this.pruneTimer.unref?.();
  }

  /** Stop the timers and write what is buffered (best effort). */
  async stop(): Promise<void> {
    clearInterval(this.flushTimer);
    clearInterval(this.pruneTimer);
    await this.flush().catch(() => undefined);
  }

  /** The event for an operation's outcome, built from its spec and facts. */
  row(spec: AuditSpec, result: string, facts: AuditFacts): NewAuditRow {
    const now = this.store.now();
    const req = spec.caller.request;
    const denied = result === 'access_denied';
    const details = withEndDetails(facts.details, facts.lockDelayUntil, facts.renewalCount);
    return {
      time: now,
      eventType: denied ? 'access_denied' : spec.type,
      family: spec.caller.family,
      route: spec.route,
      tokenId: spec.caller.tokenId || null,
      subjectTokenId: facts.subjectTokenId ?? null,
      ownerId: facts.ownerId ?? null,
      incarnation: facts.incarnation ?? null,
      result,
      fencingToken: facts.fencingToken ?? null,
      reason: spec.reason ?? null,
      correlationId: req?.correlationId ?? correlationId(),
      latencyMs: req ? Math.max(0, Math.round(now - req.startedAt)) : 0,
      details: details ? JSON.stringify(details) : null,
    };
  }

  /**
   * Record how a lease ended when no request of its own says so on its
   * route (docs/design.md "Audit"): its expiry (`lease_expire`,
   * `lease_expired`), or its session's end, closed (`lease_release`,
   * `session_closed`) or expired (`lease_expire`, `session_expired`). The
   * event's time is when the lease ended (an expiry's deadline, however
   * late the sweep noticed it), a lock-delay it started is in
   * `details.lock_delay_until`, and how often the tenure was renewed (when
   * it was) in `details.renewal_count`. Other ends are audited by the
   * request that made them (release, force-release, revoke). Buffered like every system
   * event: a session's end publishes at most one step's bound of changes at
   * a time, and the buffer writes them 250 to a store step.
   */
  leaseEnded(e: LeaseChange): void {
    const kind = e.change === 'expired' ? (['lease_expire', 'lease_expired'] as const) : e.change === 'session_closed' ? SESSION_ENDS[e.sessionEnd ?? 'closed'] : undefined;
    if (!kind || e.remote) return;
    const details = withEndDetails(undefined, e.lockDelayUntil, e.renewalCount);
    this.record({
      time: millis(e.endedAt ?? this.store.now()),
      eventType: kind[0],
      family: e.family,
      route: e.route,
      tokenId: null,
      subjectTokenId: null,
      ownerId: e.ownerId ?? null,
      incarnation: e.incarnation ?? null,
      result: kind[1],
      fencingToken: e.fencingToken,
      reason: null,
      correlationId: correlationId(),
      latencyMs: 0,
      details: details ? JSON.stringify(details) : null,
    });
  }

  /** Record an operation's outcome: buffered, or only counted for the codes that are. */
  note(spec: AuditSpec, result: string, facts: AuditFacts = {}): void {
    if (COUNTED.has(result)) this.count(result as Counted);
    // No token, no family: never a row (anyone could fill the trail with them).
    else if (spec.caller.tokenId === '') this.count('anonymous_refusal');
    else this.record(this.row(spec, result, facts));
  }

  /** Buffer one event for the next batch. */
  record(row: NewAuditRow): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.counts.dropped++;
      return;
    }
    this.buffer.push(row);
    if (this.buffer.length === FLUSH_AT) void this.flush().catch(() => undefined);
  }

  /** Count a refusal that is not audited row by row, logging a summary at most every 10 s. */
  count(code: Counted): void {
    this.counts[code]++;
    this.unlogged[code]++;
    const now = this.store.now();
    if (this.opts.logger && now - this.lastLog >= LOG_EVERY_MS) {
      // Refused credentials in numbers may be someone guessing, shed acquisitions an overloaded family: warnings; conflicts are routine.
      const level = this.unlogged.invalid_credential > 0 || this.unlogged.acquire_shed > 0 ? 'warn' : 'info';
      this.opts.logger[level]('refusals counted, not audited row by row', { since_last_report: { ...this.unlogged } });
      this.unlogged = { lease_conflict: 0, invalid_credential: 0, anonymous_refusal: 0, acquire_shed: 0 };
      this.lastLog = now;
    }
  }

  /**
   * Write every buffered event, in store steps of at most 250 events one
   * after another (requests interleave between them). Concurrent calls share
   * the flush in progress and then flush what arrived meanwhile. On failure
   * the unwritten events go back to the front of the buffer and the error
   * is rethrown.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    const rows = this.buffer;
    this.buffer = [];
    this.flushing = this.write(rows).finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async write(rows: NewAuditRow[]): Promise<void> {
    let i = 0;
    try {
      for (; i < rows.length; i += WRITE_CHUNK) {
        const chunk = rows.slice(i, i + WRITE_CHUNK);
        await this.store.atomic((tx) => tx.insertAudit(chunk));
      }
    } catch (e) {
      this.buffer = rows.slice(i).concat(this.buffer);
      const over = this.buffer.length - MAX_BUFFERED;
      if (over > 0) {
        this.buffer.length = MAX_BUFFERED;
        this.counts.dropped += over;
      }
      throw e;
    }
  }

  /**
   * Enforce retention: delete events older than the retention age or beyond
   * the row cap, in steps of at most 500 rows (each its own store step, so
   * requests interleave and never wait behind a long delete), up to 40 steps
   * a call. Returns how many were deleted.
   */
  async prune(maxSteps = PRUNE_STEPS_PER_TICK): Promise<number> {
    let total = 0;
    let steps = 0;
    // Each family's quota first (one family's volume only ever prunes its own history)…
    const counts = await this.store.atomic((tx) => tx.auditCounts());
    for (const [family, rows] of counts) {
      if (rows <= this.opts.maxRowsPerFamily) continue;
      while (steps < maxSteps) {
        steps++;
        const n = await this.store.atomic((tx) => tx.pruneAuditFamily(family, this.opts.maxRowsPerFamily, PRUNE_BATCH));
        total += n;
        if (n < PRUNE_BATCH) break;
      }
    }
    // …then the retention age and the global ceiling, oldest first across families.
    for (let i = 0; i < Math.max(1, maxSteps - steps); i++) {
      const n = await this.store.atomic((tx) => tx.pruneAudit(addMs(tx.now, -this.opts.retentionMs), this.opts.maxRows, PRUNE_BATCH));
      total += n;
      if (n < PRUNE_BATCH) break;
    }
    return total;
  }

  private async pruneAll(): Promise<void> {
    if (this.pruning) return;
    this.pruning = true;
    try {
      await this.prune();
    } catch {
      // The store is unavailable; the next tick tries again.
    } finally {
      this.pruning = false;
    }
  }
}
