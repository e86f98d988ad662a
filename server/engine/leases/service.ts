/**
 * The lease service (`engine.leases`): a holder's calls (acquire, renew,
 * release, checkpoints), the reads of one route and of the inventory, and
 * release requests. Each call is one step of the runner (docs/design.md
 * "Engine map").
 */

import type { StepScope } from '../../store/types';
import type { ParsedSelector } from '@/lib/selector';
import { fail, LeaseholdError } from '../core/errors';
import { hashSecret } from '../core/ids';
import type { Caller, Outcome, Principal } from '../core/model';
import { leaseView, type Json, type LeaseView, type Metadata } from '../core/views';
import { spec, type Runner } from '../runner';
import { assertLiveChain } from '../tokens/tokens';
import { listQueryKey, listStep, type ListPage, type ListQuery } from './inventory';
import { summaryStep, type LeaseSummary } from './inventory-summary';
import { acquireStep, checkpointStep, releaseStep, renewStep } from './holder-steps';
import { grantNext, settleRoute, waiterCount, type AcquireResult, type CheckpointWritten, type HolderProof, type ReleaseResult, type RenewResult } from './leases';
import { activeLockDelay } from './lock-delay';
import { lockDelayStep, type LockDelayPage } from './lock-delay-list';
import { heldLease, runningLockDelay } from './read-only';
import { askedLeases, releaseRequestStep, withReleaseRequests, type PendingReleaseRequest, type ReleaseRequested, type ReleaseRequestInput } from './release-requests';

export interface AcquireInput {
  sessionId: string;
  requestId: string;
  /** Absent: the route's policy default. */
  ttlMs?: number;
  maxLifetimeMs?: number;
  waitMs: number;
  metadata: Metadata | null;
  /** The idempotency digest of the request body. */
  digest: string;
  /** Aborted when the client goes away while waiting. */
  signal?: AbortSignal;
  /** Continue the queue place this ticket names (CONTRACT §20, waiters/queue-tickets.ts). */
  queueTicket?: string;
}

export interface ProofInput {
  sessionId: string;
  requestId: string;
  leaseId: string;
  fencingToken: number;
  digest: string;
}

export class LeaseService {
  constructor(private readonly r: Runner) {}

  /**
   * Acquire a route for a session. Grants at once if free; else refuses with
   * `lease_conflict`, or with `wait_ms > 0` waits in the route's FIFO queue
   * until granted, the deadline passes (`lease_conflict`) or the client goes
   * away (the waiter is dropped; an undeliverable grant is rolled back).
   * A wait that ends without a grant keeps its place for `parkMs` and is
   * refused with a `queueTicket`; `input.queueTicket` continues that place
   * (another session's or route's, or a malformed one: `invalid_request`).
   * A wait ends after `maxWaitMs` at most, whatever `waitMs` asks.
   */
  async acquire(p: Caller, route: string, input: AcquireInput): Promise<Outcome<AcquireResult>> {
    const ctx = this.r.ctx;
    const audit = this.r.audit;
    const s = spec(p, 'lease_acquire', route, 'lease_acquired');
    if (input.maxLifetimeMs !== undefined && input.maxLifetimeMs > ctx.limits.maxLifetimeMs) {
      audit.note(s, 'invalid_request');
      fail('invalid_request', `max_lifetime_ms exceeds the server maximum of ${ctx.limits.maxLifetimeMs}`);
    }
    const sessionHash = hashSecret(input.sessionId);
    let place: string | undefined;
    if (input.queueTicket !== undefined) {
      try {
        place = ctx.tickets.placeOf(input.queueTicket, p.family, route, sessionHash);
      } catch (e) {
        audit.note(s, 'invalid_request');
        throw e;
      }
    }
    // A ticket continues a place the family already gave: kept, as a renewal keeps a lease.
    if (place === undefined) this.r.admitAcquisition(p.family);
    const waitMs = Math.min(input.waitMs, ctx.limits.maxWaitMs);
    const params = {
      family: p.family,
      route,
      sessionHash,
      requestId: input.requestId,
      digest: input.digest,
      ttlMs: 0,
      maxLifetimeMs: 0,
      askedTtlMs: input.ttlMs,
      askedLifetimeMs: input.maxLifetimeMs,
      metadata: input.metadata,
    };
    const prefetch = { idempotency: { op: 'acquire', route, requestId: input.requestId }, sessionHash: params.sessionHash, route };
    const r = await this.r.run((step) => acquireStep(ctx, step, params, waitMs, input.signal, place), s, p.family, prefetch);
    if (r.kind === 'done') return { answer: r.answer, replayed: r.replayed };
    const w = r.waiter;
    if (w.state === 'waiting') this.r.waiting.arm(w, waitMs, input.signal);
    // A waiting acquire is audited when it is answered.
    r.done.then(
      (a) => audit.note(s, 'lease_acquired', { ownerId: a.lease.owner_id, incarnation: a.lease.holder_incarnation, fencingToken: a.lease.fencing_token }),
      (e: unknown) => audit.note(s, e instanceof LeaseholdError ? e.code : 'internal_error'),
    );
    return { answer: await r.done, replayed: false };
  }

  /**
   * A holder's proof, and what its step reads first (its answer record,
   * session and lease: a shared store reads them with its lock). The session
   * id is hashed once per request.
   */
  private holder(op: string, route: string, input: ProofInput): { proof: HolderProof; prefetch: StepScope['prefetch'] } {
    const sessionHash = hashSecret(input.sessionId);
    return {
      proof: { sessionHash, leaseId: input.leaseId, fencingToken: input.fencingToken },
      prefetch: { idempotency: { op, route, requestId: input.requestId }, sessionHash, route },
    };
  }

  /** Renew the exact lease held by the session, or `lease_lost` (nothing changes). */
  async renew(p: Caller, route: string, input: ProofInput & { ttlMs?: number }): Promise<Outcome<RenewResult & { release_requests: PendingReleaseRequest[] }>> {
    const h = this.holder('renew', route, input);
    return this.r.run(
      async (step) => {
        // Read before the step writes (release-requests.ts, askedLeases).
        const asked = await askedLeases(step, h.proof.sessionHash);
        const r = await renewStep(this.r.ctx, step, p.family, route, h.proof, input.ttlMs, input.requestId, input.digest);
        return { ...r, answer: await withReleaseRequests(step, h.proof.sessionHash, r.answer, asked) };
      },
      spec(p, 'lease_renew', route, 'lease_renewed'),
      p.family,
      h.prefetch,
      { keeps: true },
    );
  }

  /** Release the exact lease held by the session, or `lease_lost`; a stale release never removes a successor. */
  async release(p: Caller, route: string, input: ProofInput): Promise<Outcome<ReleaseResult>> {
    const h = this.holder('release', route, input);
    return this.r.run(
      (step) => releaseStep(this.r.ctx, step, p.family, route, h.proof, input.requestId, input.digest),
      spec(p, 'lease_release', route, 'lease_released'),
      p.family,
      h.prefetch,
    );
  }

  /** The fenced write of a route's checkpoint (`value` is JSON text). */
  async writeCheckpoint(p: Caller, route: string, input: ProofInput & { value: string }): Promise<Outcome<CheckpointWritten>> {
    const h = this.holder('checkpoint', route, input);
    return this.r.run(
      (step) => checkpointStep(this.r.ctx, step, p.family, route, h.proof, input.value, input.requestId, input.digest),
      spec(p, 'lease_checkpoint', route, 'checkpoint_written'),
      p.family,
      h.prefetch,
    );
  }

  /** The route's checkpoint as last written (linearizable), or `checkpoint_not_found`. */
  async readCheckpoint(p: Principal, route: string): Promise<{ checkpoint: { route: string; value: Json; fencing_token: number; written_at: string; version: number } }> {
    return this.r.read(() => this.r.run(async (step) => {
      const c = await step.tx.getCheckpoint(p.family, route);
      if (!c) fail('checkpoint_not_found', 'this route never had a checkpoint');
      return {
        checkpoint: { route, value: JSON.parse(c.value) as Json, fencing_token: c.fencingToken, written_at: new Date(c.writtenAt).toISOString(), version: c.version },
      };
    }, undefined, p.family));
  }

  /**
   * The active lease of a route, or `lease_not_found`. While the store
   * refuses writes (a full disk), what fell due is left out, not ended
   * (read-only.ts).
   */
  async inspect(p: Principal, route: string): Promise<{ lease: LeaseView }> {
    const ctx = this.r.ctx;
    return this.r.read((readOnly) => this.r.run(async (step) => {
      const l = readOnly ? await heldLease(step, p.family, route) : await settleRoute(ctx, step, p.family, route);
      if (!l) {
        const until = readOnly ? await runningLockDelay(step, p.family, route) : await activeLockDelay(step, p.family, route, (f, r) => grantNext(ctx, step, f, r));
        // Ending a delay that ran out grants the route to its head waiter: that lease is the answer.
        const granted = until === undefined && !readOnly ? await step.tx.getLease(p.family, route) : undefined;
        if (granted) return { lease: leaseView(granted, step.now, await waiterCount(ctx, step, p.family, route)) };
        fail('lease_not_found', until === undefined ? 'no lease is held on this route' : 'no lease is held on this route; it is in lock-delay', { lockDelayUntil: until });
      }
      return { lease: leaseView(l, step.now, await waiterCount(ctx, step, p.family, route)) };
    }, undefined, p.family, { route }));
  }

  /**
   * One page of held, unexpired leases matching the selector, in route order,
   * with keyset pagination. A page stops at `limit` items or after examining
   * the budget of routes, so a sparse selector always makes progress.
   */
  async list(p: Principal, sel: ParsedSelector, q: ListQuery): Promise<ListPage> {
    const c = this.r.cursor(p.family, 'leases', listQueryKey(sel, q), q.cursor, (x): x is string => typeof x === 'string');
    const page = await this.r.read((readOnly) => this.r.run((step) => listStep(this.r.ctx, step, p.family, sel, q, c.after, c.encode, readOnly), undefined, p.family, undefined, this.scanWork(q)));
    return { ...page, epoch: this.r.store.epoch() };
  }

  /**
   * How many held leases match the selector and LIST's filters, and how many
   * each owner holds (inventory-summary.ts): counted with LIST's budget of
   * examined routes, so past it the total is a lower bound (`exact: false`).
   */
  async summary(p: Principal, sel: ParsedSelector, q: Omit<ListQuery, 'limit' | 'cursor'>): Promise<LeaseSummary> {
    return this.r.run((step) => summaryStep(this.r.ctx, step, p.family, sel, q), undefined, p.family, undefined, this.scanWork(q));
  }

  /** A scan's work is the routes it may examine (StepScope.work), so a fleet's renewals are not batched beside it. */
  private scanWork(q: { budget?: number }): { work: number } {
    return { work: q.budget ?? this.r.limits.listBudget };
  }

  /** One page of the free routes in lock-delay matching the selector, in route order (lock-delay-list.ts). */
  async lockDelays(p: Principal, sel: ParsedSelector, q: { limit: number; cursor?: string }): Promise<LockDelayPage> {
    const c = this.r.cursor(p.family, 'lock_delays', JSON.stringify([sel.selector]), q.cursor, (x): x is string => typeof x === 'string');
    return this.r.run((step) => lockDelayStep(this.r.ctx, step, p.family, sel, q, c.after, c.encode), undefined, p.family);
  }

  /**
   * Ask the holder of the route's lease to release it (docs/release-requests.md),
   * if it carries the expected token (`lease_mismatch` otherwise,
   * `lease_not_found` if free). Audited in the step, like the operator actions.
   */
  async requestRelease(p: Caller, route: string, input: ReleaseRequestInput): Promise<Outcome<ReleaseRequested>> {
    let replayed = false;
    const answer = await this.r.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const a = await releaseRequestStep(this.r.ctx, step, p.family, route, p.tokenId, input);
        replayed = step.facts.replayed === true;
        return a;
      },
      spec(p, 'lease_release_request', route, 'release_requested', { inTx: true, reason: input.reason }),
      p.family,
      { idempotency: { op: 'release_request', route, requestId: input.requestId }, route },
    );
    return { answer, replayed };
  }
}
