/**
 * Time, randomness and ids for the SDK, injectable so that tests move a fake
 * clock instead of sleeping. Browser-safe: only `globalThis` timers and Web
 * Crypto.
 */

export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on a monotonic-enough scale; only differences are used. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof globalThis.setTimeout>),
};

/** A uniform number in [0, 1). */
export type Random = () => number;

/** `ms` scaled by a uniform factor in [1 - spread, 1 + spread]. */
export function jitter(ms: number, spread: number, random: Random): number {
  return ms * (1 - spread + 2 * spread * random());
}

/**
 * Delay before retry number `attempt` (1-based): exponential from `baseMs`,
 * capped at `maxMs`, with "equal jitter" (half fixed, half random), so retries
 * of a fleet spread out but never come back instantly.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: Random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + (ceiling / 2) * random();
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, clock: Clock, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A fresh request_id: `rq_` and 128 random bits, for one logical call and all its retries. */
export function newRequestId(): string {
  const bytes = new Uint8Array(22);
  globalThis.crypto.getRandomValues(bytes);
  let s = 'rq_';
  for (const b of bytes) s += ALPHABET[b & 63];
  return s;
}

/** One pending timeout on a clock: setting it again replaces it. */
export class Timer {
  readonly #clock: Clock;
  #handle: TimerHandle | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  set(fn: () => void, ms: number): void {
    this.clear();
    this.#handle = this.#clock.setTimeout(() => {
      this.#handle = undefined;
      fn();
    }, Math.max(0, ms));
  }

  clear(): void {
    if (this.#handle !== undefined) this.#clock.clearTimeout(this.#handle);
    this.#handle = undefined;
  }
}
