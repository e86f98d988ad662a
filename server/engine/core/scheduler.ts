/**
 * The engine's timers, injected: production uses the process's timers
 * (`systemScheduler`); tests pass a manual clock that fires what is due as
 * they advance it, so no engine test waits for real time.
 */

export interface TimerHandle {
  cancel(): void;
}

export interface Scheduler {
  /** Run `fn` once, `ms` from now. */
  after(ms: number, fn: () => void): TimerHandle;
  /** Run `fn` every `ms`; never keeps the process alive on its own. */
  every(ms: number, fn: () => void): TimerHandle;
}

export const systemScheduler: Scheduler = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
  every(ms, fn) {
    const t = setInterval(fn, ms);
    t.unref?.();
    return { cancel: () => clearInterval(t) };
  },
};
