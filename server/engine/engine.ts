/**
 * LeaseEngine: the lease service's public surface, free of HTTP and Next.js.
 * This file is the composition root (docs/design.md "Engine map"): it builds
 * the store-facing parts once and exposes them as services, each owning its
 * aggregate's rules: `leases`, `sessions`, `operators`, `tokens`,
 * `policies`, `audit`, `feed`, and `stats` / `health` for metrics and probes.
 * Every service call takes an authenticated principal and plain validated
 * inputs, runs one or more atomic store steps (runner.ts), publishes the
 * resulting change events after commit, and returns plain answers or throws
 * a LeaseholdError.
 *
 * Authorization by grant is the caller's job (the HTTP layer checks it before
 * reading the body, as the contract orders); the engine enforces family
 * isolation: it only ever reads and writes the principal's family.
 */

import { randomBytes } from 'node:crypto';
import type { Store, StoreNotice } from '../store/types';
import { AuditLog, type AuditOptions } from './audit/audit';
import { AuditService } from './audit/service';
import { LeaseholdError } from './core/errors';
import { EventHub } from './core/events';
import type { Logger } from './core/logger';
import { systemScheduler, type Scheduler } from './core/scheduler';
import { DEFAULT_LIMITS, type Limits } from './core/step';
import { readLoggedChanges } from './feed/change-log';
import { Cluster, type ClusterOptions } from './feed/cluster';
import { FeedHub, type FeedLimits } from './feed/feed';
import { FeedService } from './feed/service';
import type { EngineContext } from './leases/context';
import { OperatorService } from './leases/operator-service';
import { LeaseService } from './leases/service';
import { SessionService } from './leases/session-service';
import { ExpirySweeper } from './leases/sweeper';
import { PolicyCache } from './policies/policies';
import { PolicyService } from './policies/service';
import { Runner } from './runner';
import { HealthService, StatsService } from './stats';
import { TokenService } from './tokens/service';
import { bootstrapTokenRow, newSecret, TokenAuthority } from './tokens/tokens';
import { QueueTickets } from './waiters/queue-tickets';
import { Waiting } from './waiters/waiting';
import { waitQueueFor } from './waiters/queue-for';
import type { WaitQueue } from './waiters/waiters';

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

/** The engine's internal parts: for tests and the process wiring only, never for HTTP or metrics (eslint.config.mjs). */
export interface EngineParts {
  readonly store: Store;
  readonly events: EventHub;
  readonly waiters: WaitQueue;
  readonly feed: FeedHub;
  readonly audit: AuditLog;
  /** Present on a shared store: publication, stream calls and waiters across instances. */
  readonly cluster: Cluster | undefined;
}

export class LeaseEngine {
  readonly leases: LeaseService;
  readonly sessions: SessionService;
  readonly operators: OperatorService;
  readonly tokens: TokenService;
  readonly policies: PolicyService;
  readonly audit: AuditService;
  readonly feed: FeedService;
  readonly stats: StatsService;
  readonly health: HealthService;
  readonly parts: EngineParts;
  private readonly runner: Runner;
  private readonly authority: TokenAuthority;
  private readonly policyCache: PolicyCache;
  private readonly sweeper: ExpirySweeper;
  private readonly unsubscribeStore: (() => void) | undefined;

  constructor(
    store: Store,
    private readonly opts: EngineOptions = {},
  ) {
    const events = new EventHub();
    const waiters = waitQueueFor(store);
    this.policyCache = new PolicyCache(store.bus ? 1_000 : Infinity, () => store.now());
    const ctx: EngineContext = {
      store,
      waiters,
      limits: { ...DEFAULT_LIMITS, ...opts.limits },
      instanceId: store.bus?.instanceId,
      policies: this.policyCache,
      onDelayRefusal: () => this.stats.delayRefusals++,
      tickets: new QueueTickets(),
    };
    const scheduler = opts.scheduler ?? systemScheduler;
    const audit = new AuditLog(store, { logger: opts.logger, ...opts.audit });
    const r = (this.runner = new Runner(store, ctx, events, audit));
    // A sweep step may end up to LEASEHOLD_STEP_MAX_LEASES leases: it runs alone, not in the batch of the requests beside it.
    this.sweeper = r.sweeper = new ExpirySweeper(ctx, (fn, family) => r.run(fn, undefined, family, undefined, { alone: family !== undefined }), scheduler);
    const waiting = (r.waiting = new Waiting(ctx, scheduler, (fn, family) => r.run(fn, undefined, family)));
    this.authority = new TokenAuthority(store);
    const startedAt = store.now();
    const feed = new FeedHub(events, {
      limits: opts.feed,
      now: () => store.now(),
      epoch: () => store.epoch(),
      checkOwners: (owners) => this.authority.invalidOwners(owners),
      streamIdPrefix: store.bus?.instanceId,
    });
    const cluster = (r.cluster = store.bus
      ? new Cluster(store.bus, events, feed, {
          scheduler,
          logger: opts.logger,
          ...opts.cluster,
          granted: (n) => waiting.remoteGrant(n),
          refused: (n) => waiting.remoteRefusal(n),
          // A revision gap is filled from the change log, the shared store's record of every change.
          fill: (family, after, before) => store.atomic((tx) => readLoggedChanges(tx, family, after, before)),
        })
      : undefined);
    this.parts = { store, events, waiters, feed, audit, cluster };
    this.leases = new LeaseService(r);
    this.sessions = new SessionService(r);
    this.operators = new OperatorService(r);
    this.tokens = new TokenService(r, this.authority, events, opts.embedTokensPerCreator);
    this.policies = new PolicyService(r, this.policyCache);
    this.audit = new AuditService(r, audit);
    this.feed = new FeedService(r, feed, cluster);
    this.stats = new StatsService(r, events, waiters, feed, audit);
    this.health = new HealthService(store, this.sweeper, startedAt);
    this.unsubscribeStore = store.subscribe?.((n) => this.storeNotice(n));
    // A store may open refusing writes already (a server started on a full disk).
    const fault = store.writeFault?.();
    if (fault !== undefined) this.storeNotice({ type: 'writes_refused', fault, message: 'refused since the store opened' });
    events.subscribe((e) => {
      // A policy change (here or on another instance) applies from the next step.
      if (e.type === 'policy_changed') this.policyCache.invalidate(e.family);
      // Another instance's revoke: stop accepting the token here as soon as its commit's notice arrives.
      if (e.type === 'token_revoked' && e.remote) this.authority.forget(e.tokenId);
      // Expiry and a session's end, audited by the instance that made them (audit/service.ts).
      this.audit.onEvent(e);
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
      this.parts.feed.resyncAll();
      this.policyCache.invalidate();
      log?.warn('the store applied changes no step published: streams resynced');
    } else if (n.type === 'writes_refused') {
      log?.error(n.fault === 'no_space' ? 'the disk is full: writes refused, reads served' : 'the disk fails: writes refused, reads served', { fault: n.fault, error: n.message });
    } else log?.info('writes taken again');
  }

  get limits(): Limits {
    return this.runner.limits;
  }

  /**
   * Prepare the store (secret, bootstrap token on an empty store), expire
   * everything whose deadline passed while the server was down, and start the
   * periodic sweep. Must complete before the first request is answered.
   */
  async start(): Promise<StartResult> {
    await this.parts.cluster?.start();
    const result = await this.runner.run(async (step) => {
      const secret = this.opts.secret ?? (await step.tx.initMeta('secret', randomBytes(32).toString('base64url')));
      let bootstrapToken: string | undefined;
      if ((await step.tx.countTokens()) === 0) {
        bootstrapToken = this.opts.bootstrapSecret ?? newSecret();
        await step.tx.insertToken(bootstrapTokenRow(bootstrapToken, step.now));
      }
      return { secret, bootstrapToken, generated: this.opts.bootstrapSecret === undefined };
    });
    this.runner.setCursorSecret(Buffer.from(result.secret));
    this.runner.ctx.tickets.setSecret(Buffer.from(result.secret));
    await this.sweeper.start(this.opts.sweepIntervalMs ?? 100);
    this.parts.audit.start();
    this.parts.feed.start();
    // A token the operator gave (LEASEHOLD_BOOTSTRAP_TOKEN) is never handed back to be shown or written anywhere.
    if (result.bootstrapToken !== undefined) return result.generated ? { bootstrapToken: result.bootstrapToken, bootstrapCreated: true } : { bootstrapCreated: true };
    return { bootstrapCreated: false };
  }

  /** Stop the sweep, end every stream (`closed`: `shutdown`) and refuse every waiter (`backend_unavailable`): the first half of a shutdown. */
  drain(): void {
    const { feed, cluster, waiters } = this.parts;
    this.sweeper.stop();
    feed.shutdown();
    cluster?.stop();
    for (const w of waiters.all()) {
      if (waiters.remove(w)) {
        w.timer?.cancel();
        w.reject(new LeaseholdError('backend_unavailable', 'the server is shutting down'));
      }
    }
  }

  /** Drain, write the buffered audit events, then close the store (committing what is pending). */
  async stop(): Promise<void> {
    this.drain();
    await this.parts.waiters.leave(this.parts.store).catch(() => undefined);
    await this.parts.audit.stop();
    this.unsubscribeStore?.();
    await this.parts.store.close();
  }

  /** Process one batch of due expirations (see ExpirySweeper); returns the largest number due in one family. */
  sweep(): Promise<number> {
    return this.sweeper.sweep();
  }
}
