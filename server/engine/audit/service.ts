/**
 * The audit service (`engine.audit`): the family's audit trail, paged, and
 * the notes HTTP adds to it (refusals before the engine is called). It owns
 * audit paging; the writer behind it is audit.ts (docs/design.md "Engine map").
 */

import { millis, type Millis } from '../../store/millis';
import type { NewAuditRow } from '../../store/types';
import type { ParsedSelector } from '@/lib/selector';
import { fail, fromStoreError } from '../core/errors';
import type { EngineEvent } from '../core/events';
import type { AuditFacts, Principal } from '../core/model';
import type { Runner } from '../runner';
import { auditView, type AuditEvent, type AuditEventType, type AuditLog, type AuditSpec, type Counted } from './audit';

export interface AuditQuery {
  selector: ParsedSelector;
  eventType?: AuditEventType;
  since?: number;
  until?: number;
  limit: number;
  cursor?: string;
  /** Oldest first (an exact route only; `invalid_request` otherwise). */
  oldestFirst?: boolean;
}

export interface AuditPage {
  items: AuditEvent[];
  next_cursor: string | null;
}

/** The caller of system events (expiry): no token, no request. */
const SYSTEM: Principal = { tokenId: '', name: 'system', family: '', grants: [], root: false, kind: 'api', expiresAt: null };

export class AuditService {
  constructor(
    private readonly r: Runner,
    private readonly log: AuditLog,
  ) {}

  /** Refusals counted, not audited, and events lost to a full buffer (metrics). */
  get counts(): Readonly<AuditLog['counts']> {
    return this.log.counts;
  }

  /** Audit one outcome of a call (buffered; see audit.ts). */
  note(spec: AuditSpec, result: string, facts?: AuditFacts): void {
    this.log.note(spec, result, facts);
  }

  /** Count a refusal that is counted, not audited. */
  count(code: Counted): void {
    this.log.count(code);
  }

  /** Buffer a prepared event (tests fill the trail with it). */
  record(row: NewAuditRow): void {
    this.log.record(row);
  }

  /** Write the buffered events now. */
  flush(): Promise<void> {
    return this.log.flush();
  }

  /** Prune what retention and the quotas allow (at most `maxSteps` steps); returns the events pruned. */
  prune(maxSteps?: number): Promise<number> {
    return this.log.prune(maxSteps);
  }

  /**
   * Expiry and a session's end are system events: audited from the changes
   * they make, by the instance that made them (never for another instance's
   * change).
   */
  onEvent(e: EngineEvent): void {
    if (e.remote) return;
    if (e.type === 'change') {
      // An expiry, or a session's end, on each route it ends (audit.ts, leaseEnded).
      this.log.leaseEnded(e);
    } else if (e.type === 'session_expired') {
      const caller = { ...SYSTEM, family: e.family };
      this.log.record(this.log.row({ caller, type: 'session_expire', route: null, success: 'session_expired' }, 'session_expired', { ownerId: e.ownerId, incarnation: e.incarnation }));
    }
  }

  /**
   * One page of the family's audit events matching the selector, newest
   * first (time, then id). Events without a route are included only when the
   * selector matches every route (the caller was authorized on it). Buffered
   * events are written first, so the page reflects every answered request.
   */
  async list(p: Principal, q: AuditQuery): Promise<AuditPage> {
    await this.log.flush().catch((e: unknown) => {
      // Writes refused (a full disk): the trail as stored; the events since wait in the buffer for room.
      if (this.r.store.writeFault?.() !== undefined) return;
      throw fromStoreError(e);
    });
    const triple = q.selector.triple;
    const routeless = triple.every((t) => t === null);
    const oldestFirst = q.oldestFirst === true;
    if (oldestFirst && triple.some((t) => t === null)) fail('invalid_request', 'order=oldest needs one exact route');
    const query = JSON.stringify([triple, q.eventType ?? null, q.since ?? null, q.until ?? null, ...(oldestFirst ? ['oldest'] : [])]);
    const c = this.r.cursor(p.family, 'audit', query, q.cursor, (x): x is [Millis, number] => Array.isArray(x) && x.length === 2 && x.every((n) => Number.isSafeInteger(n)));
    const scan = await this.r.read(() => this.r.run((step) =>
      step.tx.scanAudit({
        family: p.family,
        triple,
        selector: q.selector.selector,
        routeless,
        eventType: q.eventType,
        since: q.since === undefined ? undefined : millis(q.since),
        until: q.until === undefined ? undefined : millis(q.until),
        before: c.after,
        oldestFirst,
        limit: q.limit + 1,
        budget: this.r.ctx.limits.listBudget,
      }),
    ));
    const page = scan.rows.slice(0, q.limit);
    const last = page[page.length - 1];
    // Resume after the last event shown; or, on a short page that ran out of
    // budget, after the last event examined (like LIST, a page may be short).
    const resume: [Millis, number] | null = scan.rows.length > q.limit && last ? [last.time, last.seq] : scan.exhausted ? null : (scan.lastExamined as [Millis, number] | null);
    return { items: page.map(auditView), next_cursor: resume ? c.encode(resume) : null };
  }
}
