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

import { millis, type Millis } from '../store/millis';
import { randomBytes } from 'node:crypto';
import { contains, routeSegments, selectorOrThrow, type ParsedSelector } from '@/lib/selector';
import { allowingGrant } from '@/lib/grants';
import { SESSION_BATCH } from '@/lib/limits';
import { AuditLog, auditView, type AuditEvent, type AuditEventType, type AuditFacts, type AuditOptions, type AuditSpec, type Caller } from './audit';
import type { ChangeLogStats, PolicyRow, StepScope, Store, StoreNotice, Tx } from '../store/types';
import { Cluster, type ClusterOptions } from './cluster';
import { bindCursor, CursorCodec, type BoundCursor, type CursorBinding } from './cursor';
import { LeaseholdError, fail, fromStoreError } from './errors';
import { EventHub } from './events';
import { logChanges, planReplay, readLoggedChanges } from './change-log';
import { FeedHub, type FeedLimits, type FeedSink, type Subscribed } from './feed';
import { hashSecret, randomId } from './ids';
import {
  acquireStep,
  checkpointStep,
  grantNext,
  releaseStep,
  renewStep,
  settleRoute,
  waiterCount,
  type AcquireResult,
  type CheckpointWritten,
  type HolderProof,
  type ReleaseResult,
  type RenewResult,
} from './leases';
import { activeLockDelay } from './lock-delay';
import { heldLease, runningLockDelay } from './read-only';
import {
  boundsOf,
  checkFields,
  limitsView,
  PolicyCache,
  POLICIES_PER_FAMILY,
  policySelector,
  policyView,
  type LimitsView,
  type PolicyFields,
  type PolicyView,
} from './policies';
import { systemScheduler, type Scheduler } from './scheduler';
import { ExpirySweeper, type Backlog } from './sweeper';
import { Waiting } from './waiting';
import { newStep, DEFAULT_LIMITS, type EngineContext, type Limits, type Step } from './step';
import { forceEndStep, type ForceReleased, type Revoked } from './operators';
import { askedLeases, releaseRequestStep, withReleaseRequests, type PendingReleaseRequest, type ReleaseRequested, type ReleaseRequestInput } from './release-requests';
import { assertLiveChain, newSecret, planEmbedToken, planToken, TokenAuthority, tokenInfo, type CreateTokenInput, type Principal, type TokenInfo } from './tokens';
import { leaseView, type Json, type LeaseView, type Metadata, type SessionView } from './views';
import { listQueryKey, listStep, type ListPage, type ListQuery } from './inventory';
import { summaryStep, type LeaseSummary } from './inventory-summary';
import { lockDelayStep, type LockDelayPage } from './lock-delay-list';
import { acquireAllStep, renewAllStep, type AcquireItem, type BatchInput, type LeasesAcquired, type RenewItem, type SessionRenewed } from './session-batch';
import { closeSessionStep, keepAliveStep, listSessionsStep, newSessionId, openSessionStep, type SessionPage } from './sessions';

export type { ListPage, ListQuery };

/** A policy's values as its audit events record them (`details`): the fields of its view, without the selector and the update stamp. */
function policyValues(r: PolicyRow): Record<string, Json> {
  const { selector: _selector, updated_at: _at, updated_by: _by, ...values } = policyView(r);
  return values;
}

/** The caller of system events (expiry): no token, no request. */
const SYSTEM: Principal = { tokenId: '', name: 'system', family: '', grants: [], root: false, kind: 'api', expiresAt: null };
import { waitQueueFor, type WaitQueue } from './waiters';
import { QueueTickets } from './queue-tickets';
import type { Logger } from './logger';

export interface Outcome<T> {
  answer: T;
  /** True when this is an idempotent replay of an earlier success. */
  replayed: boolean;
}

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
  /** Continue the queue place this ticket names (CONTRACT §20, queue-tickets.ts). */
  queueTicket?: string;
}

/** A session's batched call (CONTRACT §20): its secret id, request_id, body digest and items. */
export interface SessionBatch<I> {
  sessionId: string;
  requestId: string;
  digest: string;
  items: readonly I[];
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
  /** Audit retention and batching. */
  audit?: Partial<AuditOptions>;
  /** The bootstrap admin token's secret for an empty store (else random). */
  bootstrapSecret?: string;
  /** Key for cursors; else generated once and kept in the store. */
  secret?: string;
  /** How often expirations are processed (ms). */
  sweepIntervalMs?: number;
  /** Timers (waiter deadlines, the sweep); tests inject a manual clock. */
  scheduler?: Scheduler;
  /** Live feed caps and heartbeat. */
  feed?: Partial<FeedLimits>;
  /** Shared stores: cross-instance publication. */
  cluster?: ClusterOptions;
  /** Where the engine reports what an operator should see (silent when absent). */
  logger?: Logger;
  /** Live (unexpired, unrevoked) embed tokens one token may have minted at once (default 1,000). */
  embedTokensPerCreator?: number;
}

export const DEFAULT_EMBED_TOKENS_PER_CREATOR = 1_000;

export interface ForceEndRequest {
  requestId: string;
  reason: string;
  expectedFencingToken: number;
  digest: string;
  /** Shorten (never lengthen) or skip (0) the lock-delay this end starts. */
  lockDelayMs?: number;
}

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

export interface StartResult {
  /**
   * The bootstrap admin token, to be shown once: only on the first start of
   * an empty store, and only when the server generated it (a token given as
   * `bootstrapSecret` is never handed back).
   */
  bootstrapToken?: string;
  /** This start created the bootstrap admin token (generated or given). */
  bootstrapCreated: boolean;
}

export class LeaseEngine {
  readonly events = new EventHub();
  readonly waiters: WaitQueue;
  readonly tokens: TokenAuthority;
  readonly audit: AuditLog;
  readonly feed: FeedHub;
  /** Present on a shared store: publication, stream calls and waiters across instances. */
  readonly cluster: Cluster | undefined;
  private readonly ctx: EngineContext;
  private readonly policyCache: PolicyCache;
  /** Acquires refused by lock-delay since start (metrics). */
  delayRefusals = 0;
  private cursors: CursorCodec | undefined;
  private readonly scheduler: Scheduler;
  private readonly sweeper: ExpirySweeper;
  private readonly waiting: Waiting;
  private readonly startedAt: number;
  private readonly unsubscribeStore: (() => void) | undefined;

  constructor(
    readonly store: Store,
    private readonly opts: EngineOptions = {},
  ) {
    this.waiters = waitQueueFor(store);
    this.policyCache = new PolicyCache(store.bus ? 1_000 : Infinity, () => store.now());
    this.ctx = {
      store,
      waiters: this.waiters,
      limits: { ...DEFAULT_LIMITS, ...opts.limits },
      instanceId: store.bus?.instanceId,
      policies: this.policyCache,
      onDelayRefusal: () => this.delayRefusals++,
      tickets: new QueueTickets(),
    };
    this.scheduler = opts.scheduler ?? systemScheduler;
    // A sweep step may end up to LEASEHOLD_STEP_MAX_LEASES leases: it runs alone, not in the batch of the requests beside it.
    this.sweeper = new ExpirySweeper(this.ctx, (fn, family) => this.run(fn, undefined, family, undefined, family !== undefined), this.scheduler);
    this.waiting = new Waiting(this.ctx, this.scheduler, (fn, family) => this.run(fn, undefined, family));
    this.tokens = new TokenAuthority(store);
    this.audit = new AuditLog(store, { logger: opts.logger, ...opts.audit });
    this.startedAt = store.now();
    this.feed = new FeedHub(this.events, {
      limits: opts.feed,
      now: () => store.now(),
      epoch: () => store.epoch(),
      checkOwners: (owners) => this.tokens.invalidOwners(owners),
      streamIdPrefix: store.bus?.instanceId,
    });
    this.cluster = store.bus
      ? new Cluster(store.bus, this.events, this.feed, {
          scheduler: this.scheduler,
          logger: opts.logger,
          ...opts.cluster,
          granted: (n) => this.waiting.remoteGrant(n),
          refused: (n) => this.waiting.remoteRefusal(n),
          // A revision gap is filled from the change log, the shared store's record of every change.
          fill: (family, after, before) => store.atomic((tx) => readLoggedChanges(tx, family, after, before)),
        })
      : undefined;
    this.unsubscribeStore = store.subscribe?.((n) => this.storeNotice(n));
    // A store may open refusing writes already (a server started on a full disk).
    const fault = store.writeFault?.();
    if (fault !== undefined) this.storeNotice({ type: 'writes_refused', fault, message: 'refused since the store opened' });
    // Expiry and a session's end are system events: audited from the
    // changes they make, by the instance that made them (never for another
    // instance's change).
    this.events.subscribe((e) => {
      // A policy change (here or on another instance) applies from the next step.
      if (e.type === 'policy_changed') this.policyCache.invalidate(e.family);
      // Another instance's revoke: stop accepting the token here as soon as its commit's notice arrives.
      if (e.type === 'token_revoked' && e.remote) this.tokens.forget(e.tokenId);
      if (e.remote) return;
      if (e.type === 'change') {
        // An expiry, or a session's end, on each route it ends (audit.ts, leaseEnded).
        this.audit.leaseEnded(e);
      } else if (e.type === 'session_expired') {
        this.audit.record(this.systemRow('session_expire', 'session_expired', e.family, null, { ownerId: e.ownerId, incarnation: e.incarnation }));
      }
    });
  }

  /**
   * What the store says outside any step (CONTRACT §19 "A failure answer is
   * the truth"): writes refused or taken again are logged; changes applied
   * that no step published (a write answered `outcome_unknown` was applied)
   * send every stream `resync`, and the policies are read again.
   */
  private storeNotice(n: StoreNotice): void {
    const log = this.opts.logger;
    if (n.type === 'unpublished') {
      this.feed.resyncAll();
      this.policyCache.invalidate();
      log?.warn('the store applied changes no step published: streams resynced');
    } else if (n.type === 'writes_refused') {
      log?.error(n.fault === 'no_space' ? 'the disk is full: writes refused, reads served' : 'the disk fails: writes refused, reads served', { fault: n.fault, error: n.message });
    } else log?.info('writes taken again');
  }

  private systemRow(type: AuditEventType, result: string, family: string, route: string | null, facts: AuditFacts) {
    return this.audit.row({ caller: { ...SYSTEM, family }, type, route, success: result }, result, facts);
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
    await this.cluster?.start();
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
      return { secret, bootstrapToken, generated: this.opts.bootstrapSecret === undefined };
    });
    this.cursors = new CursorCodec(Buffer.from(result.secret));
    this.ctx.tickets.setSecret(Buffer.from(result.secret));
    await this.sweeper.start(this.opts.sweepIntervalMs ?? 100);
    this.audit.start();
    this.feed.start();
    // A token the operator gave (LEASEHOLD_BOOTSTRAP_TOKEN) is never handed back to be shown or written anywhere.
    if (result.bootstrapToken !== undefined) return result.generated ? { bootstrapToken: result.bootstrapToken, bootstrapCreated: true } : { bootstrapCreated: true };
    return { bootstrapCreated: false };
  }

  /** Stop the sweep, end every stream (`closed`: `shutdown`) and refuse every waiter (`backend_unavailable`): the first half of a shutdown. */
  drain(): void {
    this.sweeper.stop();
    this.feed.shutdown();
    this.cluster?.stop();
    for (const w of this.waiters.all()) {
      if (this.waiters.remove(w)) {
        w.timer?.cancel();
        w.reject(new LeaseholdError('backend_unavailable', 'the server is shutting down'));
      }
    }
  }

  /** Drain, write the buffered audit events, then close the store (committing what is pending). */
  async stop(): Promise<void> {
    this.drain();
    await this.waiters.leave(this.store).catch(() => undefined);
    await this.audit.stop();
    this.unsubscribeStore?.();
    await this.store.close();
  }

  /** Process one batch of due expirations (see ExpirySweeper); returns the largest number due in one family. */
  sweep(): Promise<number> {
    return this.sweeper.sweep();
  }

  /**
   * Run one atomic step; after it commits, publish its events, refuse its
   * dropped waiters and deliver its grants. If it fails, undo its in-memory
   * effects on the queues. With an audit spec, the outcome is audited: an
   * `inTx` success inside the step itself (if that write fails, the step
   * fails and changes nothing), everything else buffered after the step.
   */
  private async run<T>(fn: (step: Step) => Promise<T>, audit?: AuditSpec, family = audit?.caller.family, prefetch?: StepScope['prefetch'], alone = false): Promise<T> {
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
      }, family === undefined ? undefined : alone ? { family, prefetch, alone } : { family, prefetch });
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
   * A read, given whether the store refuses writes (read-only.ts). A read
   * that shared its batch with writes the disk then refused is refused with
   * them, since it may have seen them; the store refuses writes from then
   * on, so the read runs once more, read-only, over what is durable: reads
   * keep answering on a full disk (CONTRACT §19, docs/design.md "A full
   * disk"). Safe to repeat: the first run changed nothing that stayed.
   */
  private async read<T>(fn: (readOnly: boolean) => Promise<T>): Promise<T> {
    const readOnly = this.store.writeFault?.() !== undefined;
    try {
      return await fn(readOnly);
    } catch (e) {
      const refusedWithItsBatch = !readOnly && e instanceof LeaseholdError && e.code === 'backend_unavailable' && this.store.writeFault?.() !== undefined;
      if (!refusedWithItsBatch) throw e;
      return fn(true);
    }
  }

  /** The audit spec of an engine call. */
  private spec(caller: Caller, type: AuditEventType, route: string | null, success: string, extra?: Partial<AuditSpec>): AuditSpec {
    // The hot calls have no extra: one literal, no spread.
    return extra === undefined ? { caller, type, route, success } : { caller, type, route, success, ...extra };
  }

  // ---- sessions -------------------------------------------------------------

  /** Open a session; the answer is the only place its secret id ever appears. */
  async openSession(p: Caller, ownerId: string, ttlMs: number): Promise<{ session: SessionView & { session_id: string } }> {
    const sessionId = newSessionId();
    return this.run((step) => openSessionStep(step, p.family, ownerId, ttlMs, sessionId), this.spec(p, 'session_open', null, 'session_opened'));
  }

  /** Reset a live session's expiry to now + TTL, or `session_not_found`. */
  async keepAlive(p: Principal, sessionId: string): Promise<{ session: SessionView; release_requests: PendingReleaseRequest[] }> {
    const sessionHash = hashSecret(sessionId);
    return this.run(
      async (step) => {
        // Read before the step writes (release-requests.ts, askedLeases).
        const asked = await askedLeases(step, sessionHash);
        return withReleaseRequests(step, sessionHash, await keepAliveStep(this.ctx, step, p.family, sessionHash), asked);
      },
      undefined,
      p.family,
      { sessionHash },
    );
  }

  /** Close a live session, releasing its leases and dropping its waits. */
  async closeSession(p: Caller, sessionId: string): Promise<{ released: number }> {
    // Alone: it may end up to LEASEHOLD_STEP_MAX_LEASES leases (see the sweeper's steps).
    return this.run((step) => closeSessionStep(this.ctx, step, p.family, sessionId), this.spec(p, 'session_close', null, 'session_closed'), undefined, undefined, true);
  }

  /** Sessions of the principal's family, by created_at then incarnation. */
  async listSessions(p: Principal, q: { ownerId?: string; limit: number; cursor?: string }): Promise<SessionPage> {
    const c = this.cursor(p.family, 'sessions', JSON.stringify([q.ownerId ?? null]), q.cursor, (x): x is [number, string] => Array.isArray(x) && typeof x[0] === 'number' && typeof x[1] === 'string');
    return this.run((step) => listSessionsStep(this.ctx, step, p.family, q, c.after, c.encode), undefined, p.family);
  }

  // ---- leases ---------------------------------------------------------------

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
    const spec = this.spec(p, 'lease_acquire', route, 'lease_acquired');
    if (input.maxLifetimeMs !== undefined && input.maxLifetimeMs > this.ctx.limits.maxLifetimeMs) {
      this.audit.note(spec, 'invalid_request');
      fail('invalid_request', `max_lifetime_ms exceeds the server maximum of ${this.ctx.limits.maxLifetimeMs}`);
    }
    const sessionHash = hashSecret(input.sessionId);
    let place: string | undefined;
    if (input.queueTicket !== undefined) {
      try {
        place = this.ctx.tickets.placeOf(input.queueTicket, p.family, route, sessionHash);
      } catch (e) {
        this.audit.note(spec, 'invalid_request');
        throw e;
      }
    }
    const waitMs = Math.min(input.waitMs, this.ctx.limits.maxWaitMs);
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
    const r = await this.run((step) => acquireStep(this.ctx, step, params, waitMs, input.signal, place), spec, p.family, prefetch);
    if (r.kind === 'done') return { answer: r.answer, replayed: r.replayed };
    const w = r.waiter;
    if (w.state === 'waiting') this.waiting.arm(w, waitMs, input.signal);
    // A waiting acquire is audited when it is answered.
    r.done.then(
      (a) => this.audit.note(spec, 'lease_acquired', { ownerId: a.lease.owner_id, incarnation: a.lease.holder_incarnation, fencingToken: a.lease.fencing_token }),
      (e: unknown) => this.audit.note(spec, e instanceof LeaseholdError ? e.code : 'internal_error'),
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
    return this.run(
      async (step) => {
        // Read before the step writes (release-requests.ts, askedLeases).
        const asked = await askedLeases(step, h.proof.sessionHash);
        const r = await renewStep(this.ctx, step, p.family, route, h.proof, input.ttlMs, input.requestId, input.digest);
        return { ...r, answer: await withReleaseRequests(step, h.proof.sessionHash, r.answer, asked) };
      },
      this.spec(p, 'lease_renew', route, 'lease_renewed'),
      p.family,
      h.prefetch,
    );
  }

  /** Release the exact lease held by the session, or `lease_lost`; a stale release never removes a successor. */
  async release(p: Caller, route: string, input: ProofInput): Promise<Outcome<ReleaseResult>> {
    const h = this.holder('release', route, input);
    return this.run(
      (step) => releaseStep(this.ctx, step, p.family, route, h.proof, input.requestId, input.digest),
      this.spec(p, 'lease_release', route, 'lease_released'),
      p.family,
      h.prefetch,
    );
  }

  /** The fenced write of a route's checkpoint (`value` is JSON text). */
  async writeCheckpoint(p: Caller, route: string, input: ProofInput & { value: string }): Promise<Outcome<CheckpointWritten>> {
    const h = this.holder('checkpoint', route, input);
    return this.run(
      (step) => checkpointStep(this.ctx, step, p.family, route, h.proof, input.value, input.requestId, input.digest),
      this.spec(p, 'lease_checkpoint', route, 'checkpoint_written'),
      p.family,
      h.prefetch,
    );
  }

  /** The route's checkpoint as last written (linearizable), or `checkpoint_not_found`. */
  async readCheckpoint(p: Principal, route: string): Promise<{ checkpoint: { route: string; value: Json; fencing_token: number; written_at: string; version: number } }> {
    return this.read(() => this.run(async (step) => {
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
    return this.read((readOnly) => this.run(async (step) => {
      const l = readOnly ? await heldLease(step, p.family, route) : await settleRoute(this.ctx, step, p.family, route);
      if (!l) {
        const until = readOnly ? await runningLockDelay(step, p.family, route) : await activeLockDelay(step, p.family, route, (f, r) => grantNext(this.ctx, step, f, r));
        // Ending a delay that ran out grants the route to its head waiter: that lease is the answer.
        const granted = until === undefined && !readOnly ? await step.tx.getLease(p.family, route) : undefined;
        if (granted) return { lease: leaseView(granted, step.now, await waiterCount(this.ctx, step, p.family, route)) };
        fail('lease_not_found', until === undefined ? 'no lease is held on this route' : 'no lease is held on this route; it is in lock-delay', { lockDelayUntil: until });
      }
      return { lease: leaseView(l, step.now, await waiterCount(this.ctx, step, p.family, route)) };
    }, undefined, p.family, { route }));
  }

  /**
   * One page of held, unexpired leases matching the selector, in route order,
   * with keyset pagination. A page stops at `limit` items or after examining
   * the budget of routes, so a sparse selector always makes progress.
   */
  async list(p: Principal, sel: ParsedSelector, q: ListQuery): Promise<ListPage> {
    const c = this.cursor(p.family, 'leases', listQueryKey(sel, q), q.cursor, (x): x is string => typeof x === 'string');
    const page = await this.read((readOnly) => this.run((step) => listStep(this.ctx, step, p.family, sel, q, c.after, c.encode, readOnly), undefined, p.family));
    return { ...page, epoch: this.store.epoch() };
  }

  /**
   * How many held leases match the selector and LIST's filters, and how many
   * each owner holds (inventory-summary.ts): counted with LIST's budget of
   * examined routes, so past it the total is a lower bound (`exact: false`).
   */
  async leaseSummary(p: Principal, sel: ParsedSelector, q: Omit<ListQuery, 'limit' | 'cursor'>): Promise<LeaseSummary> {
    return this.run((step) => summaryStep(this.ctx, step, p.family, sel, q), undefined, p.family);
  }

  /** One page of the free routes in lock-delay matching the selector, in route order (lock-delay-list.ts). */
  async listLockDelays(p: Principal, sel: ParsedSelector, q: { limit: number; cursor?: string }): Promise<LockDelayPage> {
    const c = this.cursor(p.family, 'lock_delays', JSON.stringify([sel.selector]), q.cursor, (x): x is string => typeof x === 'string');
    return this.run((step) => lockDelayStep(this.ctx, step, p.family, sel, q, c.after, c.encode), undefined, p.family);
  }

  // ---- a session's batched calls (CONTRACT §20) -------------------------------

  /**
   * Renew many of a session's leases in one step and keep the session alive
   * (session-batch.ts, `renewAllStep`): each item its own outcome, the
   * session's pending release requests listed. Each item is audited as its
   * single renew would be (`lease_renew`, `lease_renewed` or `lease_lost`);
   * a refusal of the whole call is one event without a route.
   */
  async renewAll(p: Caller, input: SessionBatch<RenewItem>): Promise<Outcome<SessionRenewed>> {
    const batch = this.batch(input, SESSION_BATCH.renewItems);
    const r = await this.runBatch(p, 'lease_renew', 'session_renew', batch, (step) => renewAllStep(this.ctx, step, p.family, batch));
    if (!r.replayed) {
      const facts = { ownerId: r.answer.session.owner_id, incarnation: r.answer.session.holder_incarnation };
      r.answer.results.forEach((o, i) => this.audit.note(this.spec(p, 'lease_renew', o.route, 'lease_renewed'), o.code, { ...facts, fencingToken: input.items[i]!.fencingToken }));
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
    if (input.items.some((i) => i.maxLifetimeMs !== undefined && i.maxLifetimeMs > this.ctx.limits.maxLifetimeMs)) {
      this.audit.note(this.spec(p, 'lease_acquire', null, 'leases_acquired'), 'invalid_request');
      fail('invalid_request', `max_lifetime_ms exceeds the server maximum of ${this.ctx.limits.maxLifetimeMs}`);
    }
    const batch = this.batch(input, SESSION_BATCH.acquireItems);
    const r = await this.runBatch(p, 'lease_acquire', 'session_acquire', batch, (step) => acquireAllStep(this.ctx, step, p.family, batch));
    if (!r.replayed) {
      for (const l of r.answer.leases) {
        this.audit.note(this.spec(p, 'lease_acquire', l.route, 'lease_acquired'), 'lease_acquired', { ownerId: l.owner_id, incarnation: l.holder_incarnation, fencingToken: l.fencing_token });
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
      return await this.run((step) => {
        facts = step.facts;
        return fn(step);
      }, undefined, p.family, prefetch);
    } catch (e) {
      if (e instanceof LeaseholdError) this.audit.note(this.spec(p, type, null, ''), e.code, facts);
      throw e;
    }
  }

  // ---- operators ------------------------------------------------------------

  /**
   * End the route's lease as `force_released` if it carries the expected
   * token (`lease_mismatch` otherwise, `lease_not_found` if free; nothing
   * changes). The next waiter is granted in the same step, and the audit
   * event is written in it too: no success without its audit.
   */
  async forceRelease(p: Caller, route: string, input: ForceEndRequest): Promise<Outcome<ForceReleased>> {
    return this.forceEnd(p, route, input, false, 'lease_force_release', 'lease_force_released');
  }

  /** As forceRelease, ending the lease as `revoked`; `closeSession` also closes the holder's session. */
  async revoke(p: Caller, route: string, input: ForceEndRequest & { closeSession: boolean }): Promise<Outcome<Revoked>> {
    return this.forceEnd(p, route, input, input.closeSession, 'lease_revoke', 'lease_revoked') as Promise<Outcome<Revoked>>;
  }

  private async forceEnd(p: Caller, route: string, input: ForceEndRequest, closeSession: boolean, type: AuditEventType, success: string): Promise<Outcome<ForceReleased | Revoked>> {
    const kind = type === 'lease_revoke' ? 'revoked' : 'force_released';
    let replayed = false;
    const answer = await this.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const mayEnd = (r: string) => {
          const [a, b, c] = routeSegments(r);
          if (!allowingGrant(p.grants, [a, b, c], 'admin')) fail('access_denied', 'closing the session would end leases on routes you may not administer; revoke without close_session, or ask an admin of lease://**');
        };
        const a = await forceEndStep(this.ctx, step, p.family, route, { ...input, kind, closeSession, mayEnd });
        const choices = { ...(closeSession ? { close_session: true } : {}), ...(input.lockDelayMs === undefined ? {} : { lock_delay_ms: input.lockDelayMs }) };
        if (Object.keys(choices).length > 0) step.facts.details = choices;
        replayed = step.facts.replayed === true;
        if (!replayed && 'sessions_closed' in a && a.sessions_closed === 1) {
          // The operator closed the holder's session too: that is a change of its own, audited in the same step.
          const closed = this.spec(p, 'session_close', null, 'session_closed', { reason: input.reason });
          await step.tx.insertAudit([this.audit.row(closed, 'session_closed', { ownerId: step.facts.ownerId, incarnation: step.facts.incarnation, details: { revoke_of: route } })]);
        }
        return a;
      },
      // The reason is the operator's, verbatim; their choices (closing the session, the lock-delay) are the event's details.
      this.spec(p, type, route, success, { inTx: true, reason: input.reason }),
    );
    return { answer, replayed };
  }

  // ---- policies -------------------------------------------------------------

  /** Create or replace the policy of exactly this selector (the caller checked `admin` on it). */
  async setPolicy(p: Caller, selector: string, fields: PolicyFields, reason: string): Promise<{ policy: PolicyView }> {
    const sel = policySelector(selector);
    checkFields(fields, this.ctx.limits);
    return this.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const existing = (await step.tx.policies.listPolicies(p.family)).some((r) => r.selector === sel.selector);
        if (!existing && (await step.tx.policies.countPolicies(p.family)) >= POLICIES_PER_FAMILY) {
          fail('rate_limited', `a family has at most ${POLICIES_PER_FAMILY} policies`, { retryable: false });
        }
        const row = { family: p.family, selector: sel.selector, ...fields, updatedAt: step.now, updatedBy: p.tokenId };
        await step.tx.policies.putPolicy(row);
        step.events.push({ type: 'policy_changed', family: p.family });
        step.facts.details = policyValues(row);
        return { policy: policyView(row) };
      },
      // The audit event's route is the selector and its details the values set; the reason is the caller's, verbatim.
      this.spec(p, 'policy_set', sel.selector, 'policy_set', { inTx: true, reason }),
    );
  }

  /** Delete the policy of exactly this selector, or `not_found`. */
  async deletePolicy(p: Caller, selector: string, reason: string): Promise<Record<string, never>> {
    const sel = policySelector(selector);
    return this.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const existing = (await step.tx.policies.listPolicies(p.family)).find((r) => r.selector === sel.selector);
        if (!existing || !(await step.tx.policies.deletePolicy(p.family, sel.selector))) fail('not_found', 'no policy has exactly this selector');
        step.events.push({ type: 'policy_changed', family: p.family });
        step.facts.details = policyValues(existing);
        return {};
      },
      // Like set: the selector is the route, the values the deleted policy had are the details.
      this.spec(p, 'policy_delete', sel.selector, 'policy_deleted', { inTx: true, reason }),
    );
  }

  /** The family's policies whose selector the given one contains, by selector. */
  async listPolicies(p: Principal, within: ParsedSelector): Promise<{ items: PolicyView[] }> {
    return this.run(async (step) => {
      const rows = await step.tx.policies.listPolicies(p.family);
      return { items: rows.filter((r) => contains(within.triple, selectorOrThrow(r.selector).triple)).map(policyView) };
    }, undefined, p.family);
  }

  /** The policy that applies to a route now and the bounds it results in. */
  async effectivePolicy(p: Principal, route: string): Promise<{ policy: PolicyView | null; limits: LimitsView }> {
    return this.run(async (step) => {
      const policy = await this.policyCache.policyFor(step.tx, p.family, route);
      return { policy: policy ? policyView(policy) : null, limits: limitsView(boundsOf(policy, this.ctx.limits)) };
    }, undefined, p.family);
  }

  /** Routes in lock-delay now, in every family (metrics). */
  async routesInDelay(): Promise<number> {
    return this.store.atomic((tx) => tx.policies.countLockDelays(tx.now));
  }

  /**
   * Ask the holder of the route's lease to release it (docs/release-requests.md),
   * if it carries the expected token (`lease_mismatch` otherwise,
   * `lease_not_found` if free). Audited in the step, like the operator actions.
   */
  async requestRelease(p: Caller, route: string, input: ReleaseRequestInput): Promise<Outcome<ReleaseRequested>> {
    let replayed = false;
    const answer = await this.run(
      async (step) => {
        await assertLiveChain(step.tx, p, step.now);
        const a = await releaseRequestStep(this.ctx, step, p.family, route, p.tokenId, input);
        replayed = step.facts.replayed === true;
        return a;
      },
      this.spec(p, 'lease_release_request', route, 'release_requested', { inTx: true, reason: input.reason }),
      p.family,
      { idempotency: { op: 'release_request', route, requestId: input.requestId }, route },
    );
    return { answer, replayed };
  }

  // ---- audit ----------------------------------------------------------------

  /**
   * One page of the family's audit events matching the selector, newest
   * first (time, then id). Events without a route are included only when the
   * selector matches every route (the caller was authorized on it). Buffered
   * events are written first, so the page reflects every answered request.
   */
  async listAudit(p: Principal, q: AuditQuery): Promise<AuditPage> {
    await this.audit.flush().catch((e: unknown) => {
      // Writes refused (a full disk): the trail as stored; the events since wait in the buffer for room.
      if (this.store.writeFault?.() !== undefined) return;
      throw fromStoreError(e);
    });
    const triple = q.selector.triple;
    const routeless = triple.every((t) => t === null);
    const oldestFirst = q.oldestFirst === true;
    if (oldestFirst && triple.some((t) => t === null)) fail('invalid_request', 'order=oldest needs one exact route');
    const query = JSON.stringify([triple, q.eventType ?? null, q.since ?? null, q.until ?? null, ...(oldestFirst ? ['oldest'] : [])]);
    const c = this.cursor(p.family, 'audit', query, q.cursor, (x): x is [Millis, number] => Array.isArray(x) && x.length === 2 && x.every((n) => Number.isSafeInteger(n)));
    const scan = await this.read(() => this.run((step) =>
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
        budget: this.ctx.limits.listBudget,
      }),
    ));
    const page = scan.rows.slice(0, q.limit);
    const last = page[page.length - 1];
    // Resume after the last event shown; or, on a short page that ran out of
    // budget, after the last event examined (like LIST, a page may be short).
    const resume: [Millis, number] | null = scan.rows.length > q.limit && last ? [last.time, last.seq] : scan.exhausted ? null : (scan.lastExamined as [Millis, number] | null);
    return { items: page.map(auditView), next_cursor: resume ? c.encode(resume) : null };
  }

  // ---- tokens ---------------------------------------------------------------

  /** Create a token whose grants are each contained in one admin grant of the creator. */
  async createToken(p: Caller, input: CreateTokenInput): Promise<{ token_id: string; token: string; family: string }> {
    const secret = newSecret();
    return this.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now, true);
      const row = planToken(p, input, step.now);
      await step.tx.insertToken({ ...row, secretHash: hashSecret(secret) });
      step.facts.subjectTokenId = row.id;
      return { token_id: row.id, token: secret, family: row.family };
    }, this.spec(p, 'token_create', null, 'token_created'));
  }

  /**
   * Create a read-only token for one selector (contained with `read` in one
   * grant of the creator), expiring at the earlier of `ttlMs` (at most 24 h)
   * and the creator's expiry. It may only read the inventory.
   */
  async createEmbedToken(p: Caller, selector: string, ttlMs: number): Promise<{ token_id: string; token: string; expires_at: string }> {
    const secret = newSecret();
    return this.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now, true);
      const row = planEmbedToken(p, selector, ttlMs, step.now);
      const cap = this.opts.embedTokensPerCreator ?? DEFAULT_EMBED_TOKENS_PER_CREATOR;
      if ((await step.tx.countLiveEmbedTokens(p.tokenId, step.now)) >= cap) {
        fail('rate_limited', `a token may have at most ${cap} live embed tokens; let some expire or revoke them from /tokens`, { retryAfterMs: 60_000 });
      }
      await step.tx.insertToken({ ...row, secretHash: hashSecret(secret) });
      step.facts.subjectTokenId = row.id;
      return { token_id: row.id, token: secret, expires_at: new Date(row.expiresAt!).toISOString() };
    }, this.spec(p, 'embed_token_create', null, 'embed_token_created'));
  }

  /** Tokens of a family (the caller's; a root token may name another), API and live embed tokens. */
  async listTokens(p: Caller, family?: string): Promise<{ items: TokenInfo[] }> {
    if (family !== undefined && !p.root && family !== p.family) {
      this.audit.note(this.spec(p, 'access_denied', null, ''), 'access_denied');
      fail('access_denied', 'only a root token may list another family');
    }
    return this.run(async (step) => ({
      // Live embed tokens too (kind `embed`), so they can be seen and revoked; expired ones are swept.
      items: (await step.tx.listTokens(family ?? p.family))
        .filter((t) => t.revokedAt === null && (t.kind === 'api' || (t.expiresAt !== null && t.expiresAt > step.now)))
        .map(tokenInfo),
    }));
  }

  /**
   * Revoke a token and, in the same step, everything it minted (tokens and
   * embed tokens, transitively): a leaked token's offspring die with it.
   * Root tokens it minted are anchors of their own and stay (so the
   * bootstrap token can be retired once another root exists; see
   * docs/operations.md "Threat model"). Only a root token may revoke a root
   * token; the last live root cannot be revoked. Every instance drops the revoked
   * tokens from its cache and ends their streams as the step's events
   * arrive (at once on a shared store, through its notification channel).
   */
  async revokeToken(p: Caller, tokenId: string): Promise<Record<string, never>> {
    const revoked = await this.run(async (step) => {
      await assertLiveChain(step.tx, p, step.now);
      const lineage = await step.tx.tokenLineage(tokenId);
      const t = lineage.find((r) => r.id === tokenId);
      if (!t || t.revokedAt !== null || (t.family !== p.family && !p.root)) fail('not_found', 'no such token');
      const live = lineage.filter((r) => r.revokedAt === null && (r.expiresAt === null || r.expiresAt > step.now));
      const roots = live.filter((r) => r.root).length;
      if (roots > 0) {
        if (!p.root) fail('access_denied', 'only a root token may revoke a root token');
        if ((await step.tx.countLiveRootTokens(step.now)) <= roots) fail('invalid_request', 'cannot revoke the last root token');
      }
      step.facts.subjectTokenId = tokenId;
      const ids = lineage.filter((r) => r.revokedAt === null).map((r) => r.id);
      for (const id of ids) {
        await step.tx.revokeToken(id, step.now);
        step.events.push({ type: 'token_revoked', tokenId: id });
      }
      return ids;
    }, this.spec(p, 'token_revoke', null, 'token_revoked'));
    for (const id of revoked) this.tokens.forget(id);
    return {};
  }

  /** End a console login (unknown cookies are ignored) and the streams it opened. */
  async logout(cookieSecret: string): Promise<void> {
    await this.tokens.logout(cookieSecret);
    this.events.publish({ type: 'logged_out', loginHash: hashSecret(cookieSecret) });
  }

  // ---- live feed ------------------------------------------------------------

  /**
   * Open a live stream for the principal and register `selectors` on it (the
   * caller authorized each with `read`). `hello` carries the later of the
   * family's revision read here and the last one the feed published, so
   * every change with a greater revision reaches the stream.
   * With `since` (null: a value that is not a revision), the stream resumes:
   * the changes after it that match its registrations are replayed before
   * live events, or it is sent `resync` (docs/semantics.md §8).
   * `rate_limited` at a stream or registration cap, with nothing
   * retained; `backend_unavailable` if the store cannot answer.
   */
  async openStream(
    p: Principal,
    selectors: readonly ParsedSelector[],
    renewals: boolean,
    sink: FeedSink,
    loginCookie?: string,
    since?: number | null,
  ): Promise<{ streamId: string; subscriptions: Subscribed[] }> {
    const owner = {
      tokenId: p.tokenId,
      family: p.family,
      expiresAt: p.expiresAt,
      loginHash: loginCookie === undefined ? undefined : hashSecret(loginCookie),
      // An embed token's streams count against the token that minted it.
      quotaTokenId: p.kind === 'embed' ? (p.createdBy ?? p.tokenId) : p.tokenId,
    };
    if (since === undefined) {
      const revision = await this.run((step) => step.tx.revision(p.family), undefined, p.family);
      return this.feed.open(owner, selectors, renewals, sink, revision);
    }
    // Resuming: register first (holding back live events), then read the
    // log up to a revision fixed after registering, so every change is
    // either replayed or live, never both, never neither (docs/design.md, "Resuming").
    const opened = this.feed.open(owner, selectors, renewals, sink, 0, true);
    try {
      const plan = await planReplay((fn) => this.run((step) => fn(step.tx)), p.family, since, this.feed.replayFrames(opened.streamId), this.feed.limits.maxReplay);
      this.feed.resume(opened.streamId, plan);
    } catch (e) {
      this.feed.discard(opened.streamId);
      throw e;
    }
    return opened;
  }

  /**
   * Register a selector on an open stream of this token, on this instance
   * or (shared store) forwarded to the instance that holds it.
   */
  async register(tokenId: string, streamId: string, selector: ParsedSelector, renewals: boolean): Promise<Subscribed> {
    if (this.feed.has(streamId) || !this.cluster) return this.feed.register(tokenId, streamId, selector, renewals);
    return this.cluster.register(tokenId, streamId, selector.selector, renewals);
  }

  /** Remove one registration of an open stream of this token, wherever the stream is held. */
  async unregister(tokenId: string, streamId: string, subscriptionId: string): Promise<void> {
    if (this.feed.has(streamId) || !this.cluster) return this.feed.unregister(tokenId, streamId, subscriptionId);
    await this.cluster.unregister(tokenId, streamId, subscriptionId);
  }

  // ---- metrics --------------------------------------------------------------

  /**
   * Publish a `census` event: every family's held leases and live sessions,
   * read in one step and published in order with every other step's events
   * (a step's events follow its commit, steps commit in order), so a
   * subscriber that starts from these counts and applies every later change
   * and session event has exact figures. Throws `backend_unavailable` if the
   * store cannot answer.
   */
  async census(): Promise<void> {
    await this.run(async (step) => {
      step.events.push({ type: 'census', families: await step.tx.familyCounts() });
    });
  }

  /** Every family's change-log size and horizon (for metrics). Throws `backend_unavailable` if the store cannot answer. */
  changeLogStats(): Promise<ChangeLogStats[]> {
    return this.run((step) => step.tx.changes.stats());
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

  /** Families whose due work this instance's sweeper is more than 5 s behind (readiness says `degraded`, CONTRACT §19). */
  backlog(): Backlog[] {
    return this.sweeper.backlog(this.store.now());
  }

  uptimeMs(): number {
    return this.store.now() - this.startedAt;
  }

  /** The one binding of a paged query's cursor: kind, family, query text and store epoch. */
  private cursor<P>(family: string, kind: CursorBinding['kind'], query: string, cursor: string | undefined, isPosition: (x: unknown) => x is P): BoundCursor<P> {
    if (!this.cursors) throw new Error('engine not started');
    return bindCursor(this.cursors, { kind, family, query, epoch: this.store.epoch() }, cursor, isPosition);
  }
}

