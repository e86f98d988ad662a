/**
 * What keeps a session or a lease alive on the client: a refresh (keepalive
 * or renew) at a third of the TTL (±20 % jitter), retried with backoff after
 * a failure, and a local deadline that declares the object lost when no
 * refresh succeeded in time. Sessions and lease handles differ only in the
 * call and in what losing means.
 */

import { backoffMs, jitter, Timer } from './runtime';
import type { Transport } from './transport';

/** Refreshes start at ttl/3, spread by ±20 % so that a fleet does not refresh in lockstep. */
export const REFRESH_FRACTION = 1 / 3;
export const REFRESH_JITTER = 0.2;

/** A refresh attempt gives up after a third of the TTL (at least 500 ms): a hung connection must not outlast the lease. */
export function attemptTimeoutMs(ttlMs: number, clientTimeoutMs: number): number {
  return Math.min(clientTimeoutMs, Math.max(500, ttlMs * REFRESH_FRACTION));
}

export interface KeeperOptions {
  transport: Transport;
  /** The current TTL (a renewal may change it). */
  ttlMs(): number;
  /** The keepalive or renewal; a rejection is retried until the deadline. */
  refresh(): Promise<unknown>;
  /** No refresh succeeded before the deadline. */
  expired(): void;
  /**
   * The random draw (0 ≤ x < 1) that places the next refresh in its jitter
   * window, when the refresh just made supplies one; else the transport's
   * own. Handles renewed by one batch share the batch's draw, so the batch's
   * handles fall due together at a point drawn for the batch (session.ts
   * says why).
   */
  draw?(): number | undefined;
}

export class Keeper {
  readonly #opts: KeeperOptions;
  readonly #refreshTimer: Timer;
  readonly #deadlineTimer: Timer;
  #deadline = 0;
  /** The deadline the deadline timer was set for; Infinity while none is set. */
  #armedFor = Number.POSITIVE_INFINITY;
  #failures = 0;
  #stopped = false;
  /** When the next refresh is scheduled (local clock); Infinity while none is. */
  #dueAt = Number.POSITIVE_INFINITY;
  #refreshing = false;

  /** Starts keeping: the object is alive until `deadline` (local clock) unless a refresh extends it. */
  constructor(opts: KeeperOptions, deadline: number) {
    this.#opts = opts;
    this.#refreshTimer = new Timer(opts.transport.clock);
    this.#deadlineTimer = new Timer(opts.transport.clock);
    this.extend(deadline);
    this.resume(false);
  }

  /**
   * A refresh succeeded: the object now lives until `deadline`. A later
   * deadline leaves the timer where it is: when it fires, it sets itself
   * again for the rest, so a lease renewed at a third of its TTL sets one
   * every two thirds of a TTL or so instead of one a renewal (each timer
   * outlives the young generation, and a fleet renews thousands a second;
   * docs/sdk.md "Memory").
   */
  extend(deadline: number): void {
    if (this.#stopped) return;
    this.#deadline = deadline;
    if (deadline < this.#armedFor) this.#armDeadline();
  }

  #armDeadline(): void {
    this.#armedFor = this.#deadline;
    this.#deadlineTimer.set(() => {
      this.#armedFor = Number.POSITIVE_INFINITY;
      if (this.#opts.transport.clock.now() < this.#deadline) this.#armDeadline();
      else this.#opts.expired();
    }, this.#deadline - this.#opts.transport.clock.now());
  }

  /** Stop refreshing for now (the deadline still holds). */
  pause(): void {
    this.#refreshTimer.clear();
    this.#dueAt = Number.POSITIVE_INFINITY;
  }

  /** When the next refresh is due (local clock): Infinity while a refresh runs, or none is scheduled. */
  get dueAt(): number {
    return this.#dueAt;
  }

  /**
   * Refresh now instead of at the scheduled time (a batch is going out anyway):
   * the outcome counts as the scheduled refresh's would. No-op while one runs.
   */
  refreshNow(): void {
    if (this.#stopped || this.#refreshing) return;
    this.#refreshTimer.clear();
    this.#run();
  }

  /** Something else refreshed the object (a batch kept the session alive): start the interval again. */
  reschedule(): void {
    if (this.#stopped || this.#refreshing) return;
    this.resume(false);
  }

  /** Schedule the next refresh: a normal one, or a retry after a failure. */
  resume(afterFailure: boolean): void {
    if (this.#stopped) return;
    const { clock, random, retry } = this.#opts.transport;
    const room = Math.max(0, (this.#deadline - clock.now()) / 2);
    const delay = afterFailure
      ? Math.min(backoffMs(this.#failures, retry.baseDelayMs * 2, 1000, random), room)
      : Math.min(jitter(this.#opts.ttlMs() * REFRESH_FRACTION, REFRESH_JITTER, this.#drawn(random)), room);
    this.#dueAt = clock.now() + delay;
    this.#refreshTimer.set(() => this.#run(), delay);
  }

  /** The refresh's own draw if it supplied one, else `random`. */
  #drawn(random: () => number): () => number {
    const x = this.#opts.draw?.();
    return x === undefined ? random : () => x;
  }

  #run(): void {
    this.#dueAt = Number.POSITIVE_INFINITY;
    this.#refreshing = true;
    this.#opts.refresh().then(
      () => {
        this.#refreshing = false;
        this.#failures = 0;
        this.resume(false);
      },
      () => {
        // A refusal that ends the object stops the keeper; anything else is
        // transient until the deadline says otherwise.
        this.#refreshing = false;
        this.#failures++;
        this.resume(true);
      },
    );
  }

  /** Stop for good. */
  stop(): void {
    this.#stopped = true;
    this.#dueAt = Number.POSITIVE_INFINITY;
    this.#refreshTimer.clear();
    this.#deadlineTimer.clear();
    this.#armedFor = Number.POSITIVE_INFINITY;
  }
}
