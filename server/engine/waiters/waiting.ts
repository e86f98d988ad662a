/**
 * Waiting (docs/design.md "Waiters"): what happens to a queued acquire
 * outside the step that queued it. It is armed with its deadline (on the
 * injected scheduler) and its client's abort signal; answered when a step
 * grants it, here or on another instance; rolled back when its client has
 * gone by then (`rolled_back`, which grants the next waiter); refused when
 * its session ended. A step that fails has its effects on the queues undone
 * here too.
 */

import type { LeaseRow } from '../../store/types';
import { LeaseholdError } from '../core/errors';
import { findReplay, forgetAnswer } from '../core/idempotency';
import { endLease, sessionGone, settleRoute, type AcquireResult } from '../leases/leases';
import type { Scheduler } from '../core/scheduler';
import type { QueuedGrant, Step, WaiterNotice } from '../core/step';
import type { EngineContext } from '../leases/context';
import { transitionWaiter, type Waiter } from './waiters';

/** Run one atomic step of a family (the engine's `run`, without audit). */
export type RunStep = <T>(fn: (step: Step) => Promise<T>, family: string) => Promise<T>;

/** Answer a waiter that was taken off its queue without a grant. */
export function refuse(r: { waiter: Waiter; error: LeaseholdError }): void {
  r.waiter.timer?.cancel();
  transitionWaiter(r.waiter, 'done');
  r.waiter.reject(r.error);
}

/** The answer to a wait that ended without a grant: its place is kept for the ticket. */
function timedOut(retryAfterMs: number, queueTicket: string): LeaseholdError {
  return new LeaseholdError('lease_conflict', 'waited and timed out: the lease is still held; the queue place is kept for its queue_ticket', { retryAfterMs, queueTicket });
}

export class Waiting {
  constructor(
    private readonly ctx: EngineContext,
    private readonly scheduler: Scheduler,
    private readonly run: RunStep,
  ) {}

  /** After a step commits: refuse the waiters it dropped, answer the ones it granted. */
  settle(step: Step): void {
    step.refused.forEach(refuse);
    for (const g of step.grants) this.deliver(g);
  }

  /** After a step fails: take back what it queued and claimed; the waiters it had already taken off are refused all the same. */
  undo(step: Step): void {
    for (const w of step.enqueued) this.ctx.waiters.remove(w);
    for (const g of step.grants.slice().reverse()) this.ctx.waiters.unclaim(g.waiter);
    step.refused.forEach(refuse);
  }

  /**
   * Arm a waiter its step left queued: at its deadline it is refused with
   * `lease_conflict` (and a retry hint); if its client goes away it leaves
   * the queue at once (also when the client had gone before this runs).
   */
  arm(w: Waiter, waitMs: number, signal: AbortSignal | undefined): void {
    w.timer = this.scheduler.after(waitMs, () => void this.timeOut(w));
    const left = () => {
      if (this.ctx.waiters.remove(w)) {
        w.timer?.cancel();
        w.reject(new LeaseholdError('lease_conflict', 'the client went away while waiting'));
        if (this.ctx.waiters.inStore) void this.run((step) => this.forget(step, w), w.family).catch(() => undefined);
      }
    };
    // The client may have gone while the step that queued it committed:
    // then it leaves now, not at its deadline.
    if (signal?.aborted) left();
    else signal?.addEventListener('abort', left, { once: true });
  }

  /** Answer a granted waiter, or roll the grant back if its client already left. */
  deliver(g: QueuedGrant): void {
    const w = g.waiter;
    w.timer?.cancel();
    transitionWaiter(w, 'done');
    if (!w.signal?.aborted) {
      w.resolve(g.answer);
      return;
    }
    this.rollBack(g.lease, w.requestId);
  }

  /** Another instance granted this instance's waiter (shared store): answer it, or roll the grant back if it has gone. */
  remoteGrant(n: Extract<WaiterNotice, { kind: 'grant' }>): void {
    const w = this.ctx.waiters.claimRequest(n.family, n.route, n.requestId);
    if (w && !w.signal?.aborted) {
      this.deliver({ waiter: w, lease: n.lease, answer: n.answer });
      return;
    }
    if (w) transitionWaiter(w, 'done');
    this.rollBack(n.lease, n.requestId);
  }

  /** Another instance dropped this instance's waiter (its session ended). */
  remoteRefusal(n: Extract<WaiterNotice, { kind: 'refuse' }>): void {
    const w = this.ctx.waiters.claimRequest(n.family, n.route, n.requestId);
    if (w) refuse({ waiter: w, error: sessionGone() });
  }

  /** Roll back a grant nobody will receive (change `rolled_back`, its answer forgotten), granting the next waiter. */
  private rollBack(lease: LeaseRow, requestId: string): void {
    void this.run(async (step) => {
      if (await endLease(this.ctx, step, lease, 'rolled_back')) {
        await forgetAnswer(step, { family: lease.family, op: 'acquire', route: lease.route, requestId });
      }
    }, lease.family).catch(() => {
      // The lease stays until it expires; its holder is gone, so nobody renews it.
    });
  }

  /**
   * A waiter reached its deadline: its place is parked (kept for `parkMs`,
   * docs/design.md "Queue tickets") and it is refused `lease_conflict` with
   * the ticket that continues it. On a shared store another instance may
   * have granted it already, with the notice still on its way (or lost with
   * a notification channel): so the store decides, not the local queue. Its
   * row still queued: it is parked. Its row claimed and its grant recorded:
   * the grant is delivered (or rolled back if the client left), never
   * refused while the lease stays taken. The store unreachable:
   * `outcome_unknown`, and a retry with the same request_id learns which
   * (docs/design.md "Waiters"). In memory a waiter no longer queued was
   * granted or refused by the step that took it, which answers it.
   */
  private async timeOut(w: Waiter): Promise<void> {
    const { family, route, requestId, sessionHash, place } = w;
    const shared = this.ctx.waiters.inStore;
    type Fate = { parked: true; retryAfterMs: number; ticket: string } | { parked: false; grant?: { answer: AcquireResult; lease?: LeaseRow } };
    let fate: Fate;
    const ticket = (): string => this.ctx.tickets.issue(family, route, sessionHash, place);
    let parkedInMemory = false;
    try {
      fate = await this.run(async (step): Promise<Fate> => {
        if (await this.ctx.waiters.park(step, w, step.now + this.ctx.limits.parkMs)) {
          parkedInMemory = !shared;
          const l = await settleRoute(this.ctx, step, family, route);
          return { parked: true, retryAfterMs: Math.max(50, l ? l.expiresAt - step.now : 50), ticket: ticket() };
        }
        if (!shared) return { parked: false };
        const answer = await findReplay<AcquireResult>(step, { family, op: 'acquire', route, requestId }, w.digest);
        if (!answer) return { parked: false };
        const lease = await step.tx.getLease(family, route);
        return { parked: false, grant: { answer, lease: lease?.leaseId === answer.lease.lease_id ? lease : undefined } };
      }, family);
    } catch {
      // In memory the place is parked whatever became of the step: its ticket is good.
      if (parkedInMemory) {
        w.reject(timedOut(50, ticket()));
        return;
      }
      if (this.ctx.waiters.remove(w)) w.reject(new LeaseholdError('outcome_unknown', 'the wait ended while the store was unreachable: retry with the same request_id to learn whether it was granted'));
      return;
    }
    if (fate.parked) {
      // In memory `park` answered for the waiter already (state done); shared, it leaves its local queue now.
      if (!shared || this.ctx.waiters.remove(w)) w.reject(timedOut(fate.retryAfterMs, fate.ticket));
      return;
    }
    if (!shared) {
      // Parked by an earlier run of the step (a step run again finds it parked already).
      if (parkedInMemory) w.reject(timedOut(50, ticket()));
      return;
    }
    if (!fate.grant) {
      // Refused by another instance (its session ended) if no grant was recorded: its notice may still come first.
      if (this.ctx.waiters.remove(w)) w.reject(new LeaseholdError('lease_conflict', 'waited and timed out: the lease is still held', { retryAfterMs: 50 }));
      return;
    }
    // Granted elsewhere: answer it here unless its notice got here first.
    const claimed = this.ctx.waiters.claimRequest(family, route, requestId);
    if (!claimed) return;
    if (fate.grant.lease) this.deliver({ waiter: claimed, lease: fate.grant.lease, answer: fate.grant.answer });
    else {
      // The lease has ended since (expired, released by its session): the answer still stands, as a replay's would.
      transitionWaiter(claimed, 'done');
      claimed.resolve(fate.grant.answer);
    }
  }

  /** Remove a waiter that left (deadline, disconnect) from the shared queue too. */
  private forget(step: Step, w: Waiter): Promise<boolean> {
    return this.ctx.waiters.forget(step, w);
  }
}
