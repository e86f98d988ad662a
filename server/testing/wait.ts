/**
 * Waiting in tests: on a condition, never for a length of time
 * (docs/design.md "Testing on both stores").
 *
 * `waitFor` polls `probe` until `accept` holds for what it returned. When the
 * budget runs out the failure names what the test waited for and the last
 * value it saw, so a CI log alone is enough to tell why. Budgets are generous
 * on purpose (they only bound a test that would otherwise hang) and are
 * multiplied by `TIME_FACTOR` under `CI=true`, where two busy cores run a
 * server, PostgreSQL and the test runner at once.
 */

import assert from 'node:assert/strict';

/** Multiplier for every wait budget: LEASEHOLD_TEST_TIME_FACTOR, else 3 under CI=true, else 1. */
export const TIME_FACTOR = Number(process.env.LEASEHOLD_TEST_TIME_FACTOR ?? '') || (process.env.CI ? 3 : 1);

const POLL_MS = 10;

/** A value shown in a failure message, short enough for a log line. */
function shown(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'string' ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  return s === undefined ? 'undefined' : s.length > 500 ? `${s.slice(0, 500)}…` : s;
}

/**
 * Poll `probe` until `accept(value)` holds and return that value; fail with
 * `what` and the last value seen after `budgetMs` × TIME_FACTOR.
 */
export async function waitFor<T>(what: string, probe: () => T | Promise<T>, accept: (v: T) => boolean = Boolean, budgetMs = 10_000): Promise<T> {
  const deadline = Date.now() + budgetMs * TIME_FACTOR;
  let last: T | undefined;
  let error: unknown;
  for (;;) {
    try {
      last = await probe();
      error = undefined;
      if (accept(last)) return last;
    } catch (e) {
      error = e;
    }
    if (Date.now() > deadline) {
      const saw = error === undefined ? shown(last) : `an error: ${error instanceof Error ? error.message : shown(error)}`;
      assert.fail(`waited ${budgetMs * TIME_FACTOR} ms for ${what}; last saw ${saw}`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
