/**
 * When an inventory observer relists to repair what events could not tell it
 * (docs/sdk.md): every clamp(shortest expected lease TTL / 2, 5 s, 60 s), jittered
 * by ±20 % so that a fleet of observers does not poll in lockstep.
 */

import { jitter, type Clock, type Random, type TimerHandle } from './runtime';

export const RECONCILE_MIN_MS = 5_000;
export const RECONCILE_MAX_MS = 60_000;
export const RECONCILE_JITTER = 0.2;

/**
 * The default reconciliation interval before jitter. Without a known TTL (an
 * empty view and no `expectedTtlMs`) nothing can go stale faster than the
 * longest interval, so it is the maximum.
 */
export function defaultReconcileIntervalMs(shortestTtlMs: number | undefined): number {
  if (shortestTtlMs === undefined || !Number.isFinite(shortestTtlMs)) return RECONCILE_MAX_MS;
  return Math.min(RECONCILE_MAX_MS, Math.max(RECONCILE_MIN_MS, shortestTtlMs / 2));
}

/**
 * Runs `task` repeatedly, each time after `interval()` ms jittered by ±20 %,
 * measured from the end of the previous run (runs never overlap).
 */
export class ReconcileScheduler {
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #interval: () => number;
  readonly #task: () => Promise<void>;
  #timer: TimerHandle | undefined;
  #running = false;

  constructor(clock: Clock, random: Random, interval: () => number, task: () => Promise<void>) {
    this.#clock = clock;
    this.#random = random;
    this.#interval = interval;
    this.#task = task;
  }

  /** Schedule the next run; returns its delay. Replaces any pending run. */
  start(): number {
    this.stop();
    this.#running = true;
    const delay = jitter(this.#interval(), RECONCILE_JITTER, this.#random);
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#task().then(
        () => {
          if (this.#running) this.start();
        },
        () => undefined,
      );
    }, delay);
    return delay;
  }

  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
