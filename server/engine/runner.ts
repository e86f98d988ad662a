/**
 * The step runner every engine service shares (docs/design.md "Engine map",
 * "Atomic steps"): one atomic store step, its change log and cluster
 * broadcast inside it, its events, waiter grants and audit after it; reads
 * re-run read-only when the disk refused their batch; cursors bound to their
 * query.
 */

import type { StepScope, Store, Tx } from '../store/types';
import type { AuditLog, AuditSpec } from './audit/audit';
import type { Caller } from './core/model';
import type { AuditEventType } from './audit/audit';
import { bindCursor, CursorCodec, type BoundCursor, type CursorBinding } from './core/cursor';
import { LeaseholdError, fail, fromStoreError } from './core/errors';
import type { EventHub } from './core/events';
import { newStep, type Limits, type Step } from './core/step';
import { logChanges } from './feed/change-log';
import type { Cluster } from './feed/cluster';
import type { EngineContext } from './leases/context';
import type { ExpirySweeper } from './leases/sweeper';
import type { Waiting } from './waiters/waiting';

/** The audit spec of an engine call. */
export function spec(caller: Caller, type: AuditEventType, route: string | null, success: string, extra?: Partial<AuditSpec>): AuditSpec {
  // The hot calls have no extra: one literal, no spread.
  return extra === undefined ? { caller, type, route, success } : { caller, type, route, success, ...extra };
}

export class Runner {
  /** Present on a shared store (set by engine.ts before the first step). */
  cluster: Cluster | undefined;
  /** Set by engine.ts before the first step: they run steps through this runner. */
  waiting!: Waiting;
  sweeper!: ExpirySweeper;
  private cursors: CursorCodec | undefined;

  constructor(
    readonly store: Store,
    readonly ctx: EngineContext,
    private readonly events: EventHub,
    readonly audit: AuditLog,
  ) {}

  get limits(): Limits {
    return this.ctx.limits;
  }

  /**
   * Admission (docs/design.md "Admission"): while the oldest step of
   * `family` not yet answered is older than `admitQueueMs`, the store is behind
   * with the family's work, and a new acquisition is turned away
   * (`rate_limited`, counted, not audited row by row) before it queues, so
   * that the renewals, releases and keepalives of the leases already
   * granted are served first, as Kubernetes' priority and fairness keeps
   * leader-election lease updates ahead of other traffic.
   */
  admitAcquisition(family: string): void {
    const limit = this.limits.admitQueueMs;
    if (limit <= 0) return;
    const behind = this.store.queueDelayMs(family);
    if (behind <= limit) return;
    this.audit.count('acquire_shed');
    fail('rate_limited', `the server is ${Math.round(behind)} ms behind on this family's work: new acquisitions wait while it keeps the leases it granted`, {
      retryAfterMs: Math.min(5_000, Math.max(250, Math.round(behind))),
    });
  }

  /** The key of every cursor, from the store's secret (engine start). */
  setCursorSecret(secret: Buffer): void {
    this.cursors = new CursorCodec(secret);
  }

  /**
   * Run one atomic step; after it commits, publish its events, refuse its
   * dropped waiters and deliver its grants. If it fails, undo its in-memory
   * effects on the queues. With an audit spec, the outcome is audited: an
   * `inTx` success inside the step itself (if that write fails, the step
   * fails and changes nothing), everything else buffered after the step.
   */
  async run<T>(
    fn: (step: Step) => Promise<T>,
    audit?: AuditSpec,
    family = audit?.caller.family,
    prefetch?: StepScope['prefetch'],
    kind: Pick<StepScope, 'alone' | 'keeps' | 'work'> = {},
  ): Promise<T> {
    let step: Step | undefined;
    let value: T;
    let refusal: LeaseholdError | undefined;
    try {
      value = await this.store.atomic(async (tx: Tx) => {
        step = newStep(tx);
        let v: T;
        try {
          v = await fn(step);
          if (audit?.inTx && !step.facts.replayed) await tx.insertAudit([this.audit.row(audit, audit.success, step.facts)]);
        } catch (e) {
          // A domain refusal still commits the housekeeping the step did
          // before refusing (expirations it processed); any other error
          // rolls the whole step back.
          if (!(e instanceof LeaseholdError)) throw e;
          refusal = e;
          v = undefined as T;
        }
        // Its changes are logged in its own transaction, so a resuming stream
        // replays exactly what committed (docs/design.md, "Change log").
        await logChanges(step);
        // On a shared store, other instances learn of the step's events from
        // its commit (and its grants of their waiters).
        if (this.cluster) await this.cluster.broadcast(tx, step);
        return v;
      }, family === undefined ? undefined : { family, prefetch, ...kind });
    } catch (e) {
      if (step) this.waiting.undo(step);
      const err = fromStoreError(e);
      if (audit && err instanceof LeaseholdError) this.audit.note(audit, err.code, step?.facts);
      throw err;
    }
    const done = step!;
    if (done.backlog) this.sweeper.wake();
    if (this.cluster) this.cluster.committed(done.events);
    else for (const e of done.events) this.events.publish(e);
    this.waiting.settle(done);
    if (audit) {
      if (refusal) this.audit.note(audit, refusal.code, done.facts);
      else if (!audit.inTx && !done.facts.replayed && !done.facts.pending) this.audit.note(audit, audit.success, done.facts);
    }
    if (refusal) throw refusal;
    return value;
  }

  /**
   * A read, given whether the store refuses writes (leases/read-only.ts). A read
   * that shared its batch with writes the disk then refused is refused with
   * them, since it may have seen them; the store refuses writes from then
   * on, so the read runs once more, read-only, over what is durable: reads
   * keep answering on a full disk (CONTRACT §19, docs/design.md "A full
   * disk"). Safe to repeat: the first run changed nothing that stayed.
   */
  async read<T>(fn: (readOnly: boolean) => Promise<T>): Promise<T> {
    const readOnly = this.store.writeFault?.() !== undefined;
    try {
      return await fn(readOnly);
    } catch (e) {
      const refusedWithItsBatch = !readOnly && e instanceof LeaseholdError && e.code === 'backend_unavailable' && this.store.writeFault?.() !== undefined;
      if (!refusedWithItsBatch) throw e;
      return fn(true);
    }
  }

  /** The one binding of a paged query's cursor: kind, family, query text and store epoch. */
  cursor<P>(family: string, kind: CursorBinding['kind'], query: string, cursor: string | undefined, isPosition: (x: unknown) => x is P): BoundCursor<P> {
    if (!this.cursors) throw new Error('engine not started');
    return bindCursor(this.cursors, { kind, family, query, epoch: this.store.epoch() }, cursor, isPosition);
  }
}
