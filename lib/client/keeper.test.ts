/**
 * The keeper's local deadline (keeper.ts), on a fake clock: a later deadline
 * leaves the deadline timer where it is and the timer sets itself again for
 * the rest when it fires, so a lease renewed at a third of its TTL makes one
 * deadline timer a TTL, not one a renewal; and the object is still declared
 * lost exactly at the last deadline a refresh granted, never earlier or later.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from './fake-clock.testing';
import { Keeper } from './keeper';
import type { Transport } from './transport';

const TTL = 30_000;

/** A keeper whose refreshes answer at once with a deadline one TTL later, until `stopAnswering`; counts the timers the clock was asked for. */
function kept(clock: FakeClock, ttlOf: () => number = () => TTL) {
  let timers = 0;
  const counting = Object.assign(Object.create(clock) as FakeClock, {
    setTimeout: (fn: () => void, ms: number) => {
      timers++;
      return clock.setTimeout(fn, ms);
    },
  });
  const transport = { clock: counting, random: () => 0.5, retry: { baseDelayMs: 100 } } as unknown as Transport;
  const state = { answering: true, refreshes: 0, expiredAt: undefined as number | undefined, lastDeadline: TTL };
  const keeper: Keeper = new Keeper(
    {
      transport,
      ttlMs: () => TTL,
      refresh: () => {
        if (!state.answering) return new Promise(() => {});
        state.refreshes++;
        state.lastDeadline = clock.now() + ttlOf();
        keeper.extend(state.lastDeadline);
        return Promise.resolve();
      },
      expired: () => {
        state.expiredAt = clock.now();
      },
    },
    TTL,
  );
  return { keeper, state, timers: () => timers };
}

test('a keeper refreshed on time is never lost, and sets a deadline timer only when the armed one fires, not one a refresh', async () => {
  const clock = new FakeClock();
  const { keeper, state, timers } = kept(clock);
  await clock.advance(10 * TTL);
  assert.equal(state.expiredAt, undefined);
  assert.ok(state.refreshes >= 29, `refreshed every third of the TTL: ${state.refreshes} refreshes in 10 TTLs`);
  // One refresh timer per refresh; a deadline timer only when the armed one fires, which is
  // at least two thirds of a TTL after the last (at most 16 in 10 TTLs), not one per refresh (30).
  const deadlineTimers = timers() - state.refreshes - 1;
  assert.ok(deadlineTimers <= 16, `${deadlineTimers} deadline timers for ${state.refreshes} refreshes in 10 TTLs`);
  keeper.stop();
  assert.equal(clock.pending, 0, 'stop leaves no timer behind');
});

test('when refreshes stop answering, the keeper is lost exactly at the last deadline a refresh granted', async () => {
  const clock = new FakeClock();
  const { state } = kept(clock);
  await clock.advance(2.5 * TTL);
  state.answering = false;
  const last = state.lastDeadline;
  assert.ok(last > 2.5 * TTL, 'the last refresh moved the deadline past the first one');
  await clock.advance(last - clock.now() - 1);
  assert.equal(state.expiredAt, undefined, 'not lost before the deadline');
  await clock.advance(1);
  assert.equal(state.expiredAt, last);
});

test('a refresh that grants an earlier deadline (a shorter TTL) moves the timer earlier', async () => {
  const clock = new FakeClock();
  let ttl = TTL;
  const { state } = kept(clock, () => ttl);
  await clock.advance(TTL / 2);
  ttl = 3_000;
  state.answering = true;
  // The next refresh (at most 12 s after the last) grants 3 s; then nothing answers.
  const before = state.refreshes;
  while (state.refreshes === before) await clock.advance(100);
  state.answering = false;
  const last = state.lastDeadline;
  assert.ok(last < TTL, `the granted deadline ${last} is earlier than the first (${TTL})`);
  await clock.advance(TTL);
  assert.equal(state.expiredAt, last);
});
