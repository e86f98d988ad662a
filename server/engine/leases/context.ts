/**
 * The engine-wide context the lease transitions share (sessions, leases,
 * waiters, inventory, the sweeper): the store, the wait queues, limits and
 * policies. Built once by engine.ts (docs/design.md "Engine map").
 */

import type { Store } from '../../store/types';
import type { Limits, Step } from '../core/step';
import type { PolicyCache } from '../policies/policies';
import type { QueueTickets } from '../waiters/queue-tickets';
import type { WaitQueue } from '../waiters/waiters';

export interface EngineContext {
  readonly store: Store;
  readonly waiters: WaitQueue;
  readonly limits: Limits;
  /**
   * Set on a shared store: this instance's id. The FIFO queues then live in
   * the store (`tx.waiters`), so the step that frees a route grants its
   * head waiter whichever instance holds it; `waiters` keeps this
   * instance's waiting clients.
   */
  readonly instanceId?: string;
  /** The family's policies (policies.ts); absent: global bounds only. */
  readonly policies?: PolicyCache;
  /** Counts an acquire refused by lock-delay (metrics). */
  readonly onDelayRefusal?: () => void;
  /** Issues and checks queue tickets (queue-tickets.ts). */
  readonly tickets: QueueTickets;
}

/** How many more leases this step may end (CONTRACT §19, docs/design.md "Bounded steps"). */
export function leaseRoom(ctx: EngineContext, step: Step): number {
  return Math.max(0, (step.maxLeases ?? ctx.limits.stepMaxLeases) - step.endedLeases);
}
