/**
 * The session service (`engine.sessions`): open, keep alive, close and list
 * sessions, and a session's batched calls (CONTRACT §20, session-batch.ts).
 * Each call is one step of the runner (docs/design.md "Engine map").
 */

import { SESSION_BATCH } from '@/lib/limits';
import { fail, LeaseholdError } from '../core/errors';
import { hashSecret } from '../core/ids';
import type { AuditFacts, Caller, Outcome, Principal } from '../core/model';
import type { Step } from '../core/step';
import type { SessionView } from '../core/views';
import { spec, type Runner } from '../runner';
import { askedLeases, withReleaseRequests, type PendingReleaseRequest } from './release-requests';
import { acquireAllStep, renewAllStep, type AcquireItem, type BatchInput, type LeasesAcquired, type RenewItem, type SessionRenewed } from './session-batch';
import { closeSessionStep, keepAliveStep, listSessionsStep, newSessionId, openSessionStep, type SessionPage } from './sessions';

/** A session's batched call (CONTRACT §20): its secret id, request_id, body digest and items. */
export interface SessionBatch<I> {
  sessionId: string;
  requestId: string;
  digest: string;
  items: readonly I[];
}

export class SessionService {
  constructor(private readonly r: Runner) {}

  /** Open a session; the answer is the only place its secret id ever appears. */
  async open(p: Caller, ownerId: string, ttlMs: number): Promise<{ session: SessionView & { session_id: string } }> {
    const sessionId = newSessionId();
    return this.r.run((step) => openSessionStep(step, p.family, ownerId, ttlMs, sessionId), spec(p, 'session_open', null, 'session_opened'));
  }

  /** Reset a live session's expiry to now + TTL, or `session_not_found`. */
  async keepAlive(p: Principal, sessionId: string): Promise<{ session: SessionView; release_requests: PendingReleaseRequest[] }> {
    const sessionHash = hashSecret(sessionId);
    return this.r.run(
      async (step) => {
        // Read before the step writes (release-requests.ts, askedLeases).
        const asked = await askedLeases(step, sessionHash);
        return withReleaseRequests(step, sessionHash, await keepAliveStep(this.r.ctx, step, p.family, sessionHash), asked);
      },
      undefined,
      p.family,
      { sessionHash },
      { keeps: true },
    );
  }

  /** Close a live session, releasing its leases and dropping its waits. */
  async close(p: Caller, sessionId: string): Promise<{ released: number }> {
    // Alone: it may end up to LEASEHOLD_STEP_MAX_LEASES leases (see the sweeper's steps).
    return this.r.run((step) => closeSessionStep(this.r.ctx, step, p.family, sessionId), spec(p, 'session_close', null, 'session_closed'), undefined, undefined, { alone: true });
  }

  /** Sessions of the principal's family, by created_at then incarnation. */
  async list(p: Principal, q: { ownerId?: string; limit: number; cursor?: string }): Promise<SessionPage> {
    const c = this.r.cursor(p.family, 'sessions', JSON.stringify([q.ownerId ?? null]), q.cursor, (x): x is [number, string] => Array.isArray(x) && typeof x[0] === 'number' && typeof x[1] === 'string');
    return this.r.run((step) => listSessionsStep(this.r.ctx, step, p.family, q, c.after, c.encode), undefined, p.family);
  }

  /**
   * Renew many of a session's leases in one step and keep the session alive
   * (session-batch.ts, `renewAllStep`): each item its own outcome, the
   * session's pending release requests listed. The call is one event
   * without a route (`lease_renew`, `session_renewed`, with the counts in
   * `details`), and each lost item one on its route (`lease_renew`,
   * `lease_lost`), as CONTRACT §11 asks of every loss; a renewed item has
   * no event of its own: at a fleet's 10,000 renewals a second those rows
   * would push every other event out of the family's quota within two
   * minutes (docs/design.md "Audit"). A refusal of the whole call is one
   * event without a route.
   */
  async renewAll(p: Caller, input: SessionBatch<RenewItem>): Promise<Outcome<SessionRenewed>> {
    const batch = this.batch(input, SESSION_BATCH.renewItems);
    const r = await this.runBatch(p, 'lease_renew', 'session_renew', batch, (step) => renewAllStep(this.r.ctx, step, p.family, batch));
    if (!r.replayed) {
      const facts = { ownerId: r.answer.session.owner_id, incarnation: r.answer.session.holder_incarnation };
      let lost = 0;
      r.answer.results.forEach((o, i) => {
        if (o.code !== 'lease_lost') return;
        lost++;
        this.r.audit.note(spec(p, 'lease_renew', o.route, 'lease_renewed'), 'lease_lost', { ...facts, fencingToken: input.items[i]!.fencingToken });
      });
      const details = { items: r.answer.results.length, renewed: r.answer.results.length - lost, lost };
      this.r.audit.note(spec(p, 'lease_renew', null, 'session_renewed'), 'session_renewed', { ...facts, details });
    }
    return r;
  }

  /**
   * Acquire every route for a session in one step, or none (session-batch.ts,
   * `acquireAllStep`): `lease_conflict` with `held` when any route cannot be
   * granted now. Each lease is audited as a single acquire's would be; a
   * refusal of the whole call is one event without a route (a conflict is
   * counted, as every conflict is).
   */
  async acquireAll(p: Caller, input: SessionBatch<AcquireItem>): Promise<Outcome<LeasesAcquired>> {
    const limits = this.r.ctx.limits;
    if (input.items.some((i) => i.maxLifetimeMs !== undefined && i.maxLifetimeMs > limits.maxLifetimeMs)) {
      this.r.audit.note(spec(p, 'lease_acquire', null, 'leases_acquired'), 'invalid_request');
      fail('invalid_request', `max_lifetime_ms exceeds the server maximum of ${limits.maxLifetimeMs}`);
    }
    const batch = this.batch(input, SESSION_BATCH.acquireItems);
    this.r.admitAcquisition(p.family);
    const r = await this.runBatch(p, 'lease_acquire', 'session_acquire', batch, (step) => acquireAllStep(this.r.ctx, step, p.family, batch));
    if (!r.replayed) {
      for (const l of r.answer.leases) {
        this.r.audit.note(spec(p, 'lease_acquire', l.route, 'lease_acquired'), 'lease_acquired', { ownerId: l.owner_id, incarnation: l.holder_incarnation, fencingToken: l.fencing_token });
      }
    }
    return r;
  }

  /** The batch as its step takes it; `invalid_request` (nothing changes) unless it names 1 to `max` routes, each once. */
  private batch<I extends { route: string }>(input: SessionBatch<I>, max: number): BatchInput<I> {
    if (input.items.length < 1 || input.items.length > max) fail('invalid_request', `a batch names 1 to ${max} routes`);
    if (new Set(input.items.map((i) => i.route)).size !== input.items.length) fail('invalid_request', 'a batch names each route once');
    return { sessionHash: hashSecret(input.sessionId), requestId: input.requestId, digest: input.digest, items: input.items };
  }

  /** One batched call's step: its rows read ahead (every route's), a refusal of the whole call audited once. */
  private async runBatch<T>(
    p: Caller,
    type: 'lease_renew' | 'lease_acquire',
    op: 'session_renew' | 'session_acquire',
    batch: BatchInput<{ route: string }>,
    fn: (step: Step) => Promise<{ answer: T; replayed: boolean }>,
  ): Promise<Outcome<T>> {
    const prefetch = { idempotency: { op, route: batch.sessionHash, requestId: batch.requestId }, sessionHash: batch.sessionHash, routes: batch.items.map((i) => i.route) };
    let facts: AuditFacts = {};
    try {
      return await this.r.run((step) => {
        facts = step.facts;
        return fn(step);
      }, undefined, p.family, prefetch, { keeps: op === 'session_renew' });
    } catch (e) {
      if (e instanceof LeaseholdError) this.r.audit.note(spec(p, type, null, ''), e.code, facts);
      throw e;
    }
  }
}
