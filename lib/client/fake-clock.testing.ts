/**
 * Test support (not in the SDK package: tsconfig.sdk.json leaves out *.testing.ts):
 * a clock for the SDK (`Clock`, runtime.ts) whose
 * timers fire only when the test moves time, so that no test sleeps.
 */

import type { Clock } from './runtime';

/** Timers that fire only when the test moves time. */
export class FakeClock implements Clock {
  t = 0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  now = (): number => this.t;
  setTimeout = (fn: () => void, ms: number): number => {
    const id = this.#next++;
    this.#timers.set(id, { at: this.t + ms, fn });
    return id;
  };
  clearTimeout = (h: unknown): void => {
    this.#timers.delete(h as number);
  };
  /** Move time forward, firing due timers in order. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, x]) => x.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.t = due[1].at;
      due[1].fn();
      await new Promise((r) => setImmediate(r)); // let the task's promise settle
    }
    this.t = end;
  }
  get pending(): number {
    return this.#timers.size;
  }
}
