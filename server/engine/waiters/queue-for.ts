/** Which wait queue a store takes (waiters.ts). */

import type { Store } from '../../store/types';
import { MemoryWaitQueue } from './memory-queue';
import { SharedWaitQueue } from './shared-queue';
import type { WaitQueue } from './waiters';

/** The queue for a store: shared when several instances share it (it has a bus), else in memory. */
export function waitQueueFor(store: Store): WaitQueue {
  return store.bus ? new SharedWaitQueue(store.bus.instanceId) : new MemoryWaitQueue();
}
