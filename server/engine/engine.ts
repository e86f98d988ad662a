/**
 * LeaseEngine: the lease service's public surface, free of HTTP and Next.js.
 * Every method takes an authenticated principal and plain validated inputs,
 * runs one or more atomic store steps, publishes the resulting change events
 * after commit, and returns plain answers or throws a LeaseholdError.
 *
 * Authorization by grant is the caller's job (the HTTP layer checks it before
 * reading the body, as the contract orders); the engine enforces family
 * isolation: it only ever reads and writes the principal's family.
 */

import { randomBytes } from 'node:crypto';
import type { ParsedSelector } from '@/lib/selector';
import type { Store, Tx } from '../store/types';
import { CursorCodec } from './cursor';
import { LeaseholdError, fail, fromStoreError } from './errors';
import { EventHub } from './events';
import { hashSecret, randomId } from './ids';
import {
  acquireStep,
  checkpointStep,
  endLease,
  expireDue,

  releaseStep,
  renewStep,
  settleRoute,
  type AcquireResult,
  type CheckpointWritten,
  type HolderProof,
  type ReleaseResult,
  type RenewResult,
} from './leases';
import { forgetAnswer } from './idempotency';
import { newStep, DEFAULT_LIMITS, type EngineContext, type QueuedGrant, type Limits, type Step } from './step';
import { newSecret, planToken, TokenAuthority, tokenInfo, type CreateTokenInput, type Principal, type TokenInfo } from './tokens';
import { leaseView, type LeaseView, type Metadata, type SessionView } from './views';
import { listQueryKey, listStep, type ListPage, type ListQuery } from './inventory';
import { closeSessionStep, keepAliveStep, listSessionsStep, newSessionId, openSessionStep, type SessionPage } from './sessions';

export type { ListPage, ListQuery };
import { WaiterQueues, type Waiter } from './waiters';

export interface Outcome<T> {
  answer: T;
  /** True when this is an idempotent replay of an earlier success. */
  replayed: boolean;
}

export interface AcquireInput {
  sessionId: string;
  requestId: string;
  ttlMs: number;
  maxLifetimeMs: number;
  waitMs: number;
  metadata: Metadata | null;
  /** The idempotency digest of the request body. */
  digest: string;
  /** Aborted when the client goes away while waiting. */
  signal?: AbortSignal;
}

export interface ProofInput {
  sessionId: string;
  requestId: string;
  leaseId: string;
  fencingToken: number;
  digest: string;
}

export interface EngineOptions {
  limits?: Partial<Limits>;
  /** The bootstrap admin token's secret for an empty store (else random). */
  bootstrapSecret?: string;
  /** Key for cursors; else generated once and kept in the store. */
  secret?: string;
  /** How often expirations are processed (ms). */
  sweepIntervalMs?: number;
}

export interface StartResult {
  /** The bootstrap admin token, shown once: only on the first start of an empty store. */
  bootstrapToken?: string;
}

const SWEEP_BATCH = 512;

/** Answer a waiter that was taken off its queue without a grant. */
function refuse(r: { waiter: Waiter; error: LeaseholdError }): void {
  if (r.waiter.timer) clearTimeout(r.waiter.timer);
  r.waiter.state = 'done';
  r.waiter.reject(r.error);
}

export class LeaseEngine {
  readonly events = new EventHub();
  readonly waiters = new WaiterQueues();
  readonly tokens: TokenAuthority;
  private readonly ctx: EngineContext;
  private cursors: CursorCodec | undefined;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private sweeping = false;
  private readonly startedAt: number;

  constructor(
    readonly store: Store,
    private readonly opts: EngineOptions = {},
  ) {
    this.ctx = { store, waiters: this.waiters, limits: { ...DEFAULT_LIMITS, ...opts.limits } };
    this.tokens = new TokenAuthority(store);
    this.startedAt = store.now();
  }

  get limits(): Limits {
    return this.ctx.limits;
  }

  /**
   * Prepare the store (secret, bootstrap token on an empty store), expire
   * everything whose deadline passed while the server was down, and start the
   * periodic sweep. Must complete before the first request is answered.
   */
  async start(): Promise<StartResult> {
    const result = await this.run(async (step) => {
      const secret = this.opts.secret ?? (await step.tx.initMeta('secret', randomBytes(32).toString('base64url')));
      let bootstrapToken: string | undefined;
      if ((await step.tx.countTokens()) === 0) {
        bootstrapToken = this.opts.bootstrapSecret ?? newSecret();
        await step.tx.insertToken({
          id: randomId('tk_', 12),
          secretHash: hashSecret(bootstrapToken),
          name: 'bootstrap admin',
          family: 'default',
          grants: ['lease://**#admin'],
          root: true,
          kind: 'api',
          createdAt: step.now,
          expiresAt: null,
          revokedAt: null,
          createdBy: null,
        });
      }
      return { secret, bootstrapToken };
    });
    this.cursors = new CursorCodec(Buffer.from(result.secret));
    while ((await this.sweep()) >= SWEEP_BATCH);
    const every = this.opts.sweepIntervalMs ?? 100;
    this.sweepTimer = setInterval(() => void this.sweepAll(), every);
    this.sweepTimer.unref?.();
    return { bootstrapToken: result.bootstrapToken };
  }

  /** Stop the sweep and refuse every waiter (`backend_unavailable`): the first half of a shutdown. */
  drain(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const w of this.waiters.all()) {
      if (this.waiters.remove(w)) {
        if (w.timer) clearTimeout(w.timer);
        w.reject(new LeaseholdError('backend_unavailable', 'the server is shutting down'));
      }
    }
  }

  /** Drain, then close the store (committing what is pending). */
  async stop(): Promise<void> {
    this.drain();
    await this.store.close();
  }

  private async sweepAll(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      while ((await this.sweep()) >= SWEEP_BATCH);
    } catch {
      // The store is unavailable; the next tick tries again.
    } finally {
      this.sweeping = false;
    }
  }

  /** Process one batch of due expirations and prune idempotency records. Returns how many were due. */
  async sweep(): Promise<number> {
    return this.run(async (step) => {
      const n = await expireDue(this.ctx, step, SWEEP_BATCH);
      await step.tx.pruneIdempotency(step.now, 1_000);
      await step.tx.pruneLogins(step.now);
      return n;
    });
  }

  /**
   * Run one atomic step; after it commits, publish its events, refuse its
   * dropped waiters and deliver its grants. If it fails, undo its in-memory
   * effects on the queues.
   */
  private async run<T>(fn: (step: Step) => Promise<T>): Promise<T> {
    let step: Step | undefined;
    let value: T;
    let refusal: LeaseholdError | undefined;
    try {
      value = await this.store.atomic(async (tx: Tx) => {
        step = newStep(tx);
        try {
          return await fn(step);
        } catch (e) {
          // A domain refusal still commits the housekeeping the step did
          // before refusing (expirations it processed); any other error
          // rolls the whole step back.
          if (!(e instanceof LeaseholdError)) throw e;
          refusal = e;
          return undefined as T;
        }
      });
    } catch (e) {
      if (step) {
        for (const w of step.enqueued) this.waiters.remove(w);
        for (const g of step.grants.slice().reverse()) this.waiters.unclaim(g.waiter);
        // Waiters the step had already taken off their queue are refused all the same.
        step.refused.forEach(refuse);
      }
      throw fromStoreError(e);
    }
    const done = step!;
    for (const e of done.events) this.events.publish(e);
    done.refused.forEach(refuse);
    for (const g of done.grants) this.deliver(g);
    if (refusal) throw refusal;
    return value;
  }

  /** Answer a granted waiter, or roll the grant back if its client already left. */
  private deliver(g: QueuedGrant): void {
    const w = g.waiter;
    if (w.timer) clearTimeout(w.timer);
    w.state = 'done';
    if (!w.signal?.aborted) {
      w.resolve(g.answer);
      return;
    }
    void this.run(async (step) => {
      if (await endLease(this.ctx, step, g.lease, 'rolled_back')) {
        await forgetAnswer(step, { family: w.family, op: 'acquire', route: w.route, requestId: w.requestId });
      }
    }).catch(() => {
      // The lease stays until it expires; its holder is gone, so nobody renews it.
    });
  }

  // ---- sessions -------------------------------------------------------------

  /** Open a session; the answer is the only place its secret id ever appears. */
  async openSession(p: Principal, ownerId: string, ttlMs: number): Promise<{ session: SessionView & { session_id: string } }> {
    const sessionId = newSessionId();
    return this.run((step) => openSessionStep(step, p.family, ownerId, ttlMs, sessionId));
  }

  /** Reset a live session's expiry to now + TTL, or `session_not_found`. */
  async keepAlive(p: Principal, sessionId: string): Promise<{ session: SessionView }> {
    return this.run((step) => keepAliveStep(this.ctx, step, p.family, sessionId));
  }

  /** Close a live session, releasing its leases and dropping its waits. */
  async closeSession(p: Principal, sessionId: string): Promise<{ released: number }> {
    return this.run((step) => closeSessionStep(this.ctx, step, p.family, sessionId));
  }

  /** Sessions of the principal's family, by created_at then incarnation. */
  async listSessions(p: Principal, q: { ownerId?: string; limit: number; cursor?: string }): Promise<SessionPage> {
    const binding = { kind: 'sessions', family: p.family, query: JSON.stringify([q.ownerId ?? null]), epoch: this.store.epoch() };
    const after = q.cursor ? this.codec().decode(q.cursor, binding) : null;
    if (after !== null && !(Array.isArray(after) && typeof after[0] === 'number' && typeof after[1] === 'string')) {
      fail('cursor_invalid', 'cursor is malformed');
    }
    const encode = (pos: [number, string]) => this.codec().encode(binding, pos);
    return this.run((step) => listSessionsStep(this.ctx, step, p.family, q, after as [number, string] | null, encode));
  }

  // ---- leases ---------------------------------------------------------------

  /**
   * Acquire a route for a session. Grants at once if free; else refuses with
   * `lease_conflict`, or with `wait_ms > 0` waits in the route's FIFO queue
   * until granted, the deadline passes (`lease_conflict`) or the client goes
   * away (the waiter is dropped; an undeliverable grant is rolled back).
   */
  async acquire(p: Principal, route: string, input: AcquireInput): Promise<Outcome<AcquireResult>> {
    if (input.maxLifetimeMs > this.ctx.limits.maxLifetimeMs) {
      fail('invalid_request', `max_lifetime_ms exceeds the server maximum of ${this.ctx.limits.maxLifetimeMs}`);
    }
    const params = {
      family: p.family,
      route,
      sessionHash: hashSecret(input.sessionId),
      requestId: input.requestId,
      digest: input.digest,
      ttlMs: input.ttlMs,
      maxLifetimeMs: input.maxLifetimeMs,
      metadata: input.metadata,
    };
    const r = await this.run((step) => acquireStep(this.ctx, step, params, input.waitMs, input.signal));
    if (r.kind === 'done') return { answer: r.answer, replayed: r.replayed };
    const w = r.waiter;
    if (w.state === 'waiting') {
      w.timer = setTimeout(() => {
        if (this.waiters.remove(w)) void this.refuseTimedOut(w.family, w.route, w.reject);
      }, input.waitMs);
      input.signal?.addEventListener(
        'abort',
        () => {
          if (this.waiters.remove(w)) {
            clearTimeout(w.timer);
            w.reject(new LeaseholdError('lease_conflict', 'the client went away while waiting'));
          }
        },
        { once: true },
      );
    }
    return { answer: await r.done, replayed: false };
  }

  private async refuseTimedOut(family: string, route: string, reject: (e: unknown) => void): Promise<void> {
    let retryAfterMs = 50;
    try {
      retryAfterMs = await this.run(async (step) => {
        const l = await settleRoute(this.ctx, step, family, route);
        return Math.max(50, l ? l.expiresAt - step.now : 50);
      });
    } catch {
      // Keep the minimum hint.
    }
    reject(new LeaseholdError('lease_conflict', 'waited and timed out: the lease is still held', { retryAfterMs }));
  }

  private proof(input: ProofInput): HolderProof {
    return { sessionHash: hashSecret(input.sessionId), leaseId: input.leaseId, fencingToken: input.fencingToken };
  }

  /** Renew the exact lease held by the session, or `lease_lost` (nothing changes). */
  async renew(p: Principal, route: string, input: ProofInput & { ttlMs?: number }): Promise<Outcome<RenewResult>> {
    return this.run((step) => renewStep(this.ctx, step, p.family, route, this.proof(input), input.ttlMs, input.requestId, input.digest));
  }

  /** Release the exact lease held by the session, or `lease_lost`; a stale release never removes a successor. */
  async release(p: Principal, route: string, input: ProofInput): Promise<Outcome<ReleaseResult>> {
    return this.run((step) => releaseStep(this.ctx, step, p.family, route, this.proof(input), input.requestId, input.digest));
  }

  /** The fenced write of a route's checkpoint (`value` is JSON text). */
  async writeCheckpoint(p: Principal, route: string, input: ProofInput & { value: string }): Promise<Outcome<CheckpointWritten>> {
    return this.run((step) => checkpointStep(this.ctx, step, p.family, route, this.proof(input), input.value, input.requestId, input.digest));
  }

  /** The route's checkpoint as last written (linearizable), or `checkpoint_not_found`. */
  async readCheckpoint(p: Principal, route: string): Promise<{ checkpoint: { route: string; value: unknown; fencing_token: number; written_at: string; version: number } }> {
    return this.run(async (step) => {
      const c = await step.tx.getCheckpoint(p.family, route);
      if (!c) fail('checkpoint_not_found', 'this route never had a checkpoint');
      return {
        checkpoint: { route, value: JSON.parse(c.value) as unknown, fencing_token: c.fencingToken, written_at: new Date(c.writtenAt).toISOString(), version: c.version },
      };
    });
  }

  /** The active lease of a route, or `lease_not_found`. */
  async inspect(p: Principal, route: string): Promise<{ lease: LeaseView }> {
    return this.run(async (step) => {
      const l = await settleRoute(this.ctx, step, p.family, route);
      if (!l) fail('lease_not_found', 'no lease is held on this route');
      return { lease: leaseView(l, step.now, this.waiters.count(p.family, route)) };
    });
  }

  /**
   * One page of held, unexpired leases matching the selector, in route order,
   * with keyset pagination. A page stops at `limit` items or after examining
   * the budget of routes, so a sparse selector always makes progress.
   */
  async list(p: Principal, sel: ParsedSelector, q: ListQuery): Promise<ListPage> {
    const epoch = this.store.epoch();
    const binding = { kind: 'leases', family: p.family, query: listQueryKey(sel, q), epoch };
    const after = q.cursor ? this.codec().decode(q.cursor, binding) : null;
    if (after !== null && typeof after !== 'string') fail('cursor_invalid', 'cursor is malformed');
    const encode = (pos: string) => this.codec().encode(binding, pos);
    const page = await this.run((step) => listStep(this.ctx, step, p.family, sel, q, after as string | null, encode));
    return { ...page, epoch };
  }

  // ---- tokens ---------------------------------------------------------------

  /** Create a token whose grants are each contained in one admin grant of the creator. */
  async createToken(p: Principal, input: CreateTokenInput): Promise<{ token_id: string; token: string; family: string }> {
    const secret = newSecret();
    return this.run(async (step) => {
      const row = planToken(p, input, step.now);
      await step.tx.insertToken({ ...row, secretHash: hashSecret(secret) });
      return { token_id: row.id, token: secret, family: row.family };
    });
  }

  /** Tokens of a family (the caller's; a root token may name another). */
  async listTokens(p: Principal, family?: string): Promise<{ items: TokenInfo[] }> {
    if (family !== undefined && !p.root && family !== p.family) fail('access_denied', 'only a root token may list another family');
    return this.run(async (step) => ({
      items: (await step.tx.listTokens(family ?? p.family)).filter((t) => t.revokedAt === null && t.kind === 'api').map(tokenInfo),
    }));
  }

  /** Revoke a token. Only a root token may revoke a root token; the last live root cannot be revoked. */
  async revokeToken(p: Principal, tokenId: string): Promise<Record<string, never>> {
    await this.run(async (step) => {
      const t = await step.tx.getToken(tokenId);
      if (!t || t.revokedAt !== null || (t.family !== p.family && !p.root)) fail('not_found', 'no such token');
      if (t.root) {
        if (!p.root) fail('access_denied', 'only a root token may revoke a root token');
        if ((await step.tx.countLiveRootTokens(step.now)) <= 1) fail('invalid_request', 'cannot revoke the last root token');
      }
      await step.tx.revokeToken(tokenId, step.now);
    });
    this.tokens.forget(tokenId);
    return {};
  }

  // ---- health ---------------------------------------------------------------

  /** Is the store answering? Never throws. */
  async healthy(): Promise<boolean> {
    try {
      await this.store.atomic((tx) => tx.revision('default'));
      return true;
    } catch {
      return false;
    }
  }

  uptimeMs(): number {
    return this.store.now() - this.startedAt;
  }

  private codec(): CursorCodec {
    if (!this.cursors) throw new Error('engine not started');
    return this.cursors;
  }
}

