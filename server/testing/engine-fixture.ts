/**
 * An engine over a real store, with a manual clock: engine tests move time
 * instead of sleeping. The store is SQLite in a temporary directory, or
 * (backend `postgres`) PostgreSQL in a fresh database dropped at close.
 */

import { rmSync } from 'node:fs';
import assert from 'node:assert/strict';
import { afterEach, beforeEach } from 'node:test';
import { performance } from 'node:perf_hooks';
import { LeaseEngine, type EngineOptions } from '../engine/engine';
import type { AcquireInput } from '../engine/leases/service';
import type { EngineEvent, LeaseChange } from '../engine/core/events';
import { requestDigest } from '../engine/core/ids';
import type { Principal } from '../engine/tokens/tokens';
import { openStore } from '../store/factory';
import type { Store } from '../store/types';
import { ManualClock, rid, tempDir } from './harness';
import { createTestDatabase, type Backend } from './pg';
import { TIME_FACTOR } from './wait';

const SECRET = 'lh_engine_test_bootstrap_secret_0123456789';

export interface EngineFixture {
  clock: ManualClock;
  engine: LeaseEngine;
  admin: Principal;
  dir: string;
  backend: Backend;
  /** Every event published since start (or the last restart). */
  events: EngineEvent[];
  changes(): LeaseChange[];
  open(ownerId?: string, ttlMs?: number): Promise<string>;
  acquire(route: string, sessionId: string, extra?: Partial<AcquireInput> & { body?: Record<string, unknown> }): ReturnType<LeaseEngine['leases']['acquire']>;
  /** Close and reopen the engine on the same directory (same clock). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A fresh fixture for every test of the enclosing `describe`, closed after
 * it: `const f = fixtureEachTest(backend)` in the describe, then `f` in each
 * test is that test's fixture (a view of the current one).
 */
export function fixtureEachTest(backend: Backend): EngineFixture {
  let current: EngineFixture | undefined;
  beforeEach(async () => {
    current = await engineFixture({ backend });
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return new Proxy({} as EngineFixture, {
    get(_target, key) {
      if (!current) throw new Error('fixtureEachTest: the fixture exists only while a test runs');
      return Reflect.get(current, key) as unknown;
    },
  });
}

/**
 * `wrap` may decorate the real store (to inject faults into it); the engine
 * still runs on the real database underneath.
 */
export async function engineFixture(fixtureOpts: EngineOptions & { backend?: Backend } = {}, wrap: (store: Store) => Store = (x) => x): Promise<EngineFixture> {
  const { backend = 'sqlite', ...opts } = fixtureOpts;
  const clock = new ManualClock();
  const dir = tempDir('leasehold-engine-');
  const db = backend === 'postgres' ? await createTestDatabase({ migrated: true }) : undefined;
  const events: EngineEvent[] = [];
  const open = (): Promise<Store> => openStore(db?.url ?? dir, { clock: clock.now, postgres: { poolSize: 4 } });
  const boot = async () => {
    const engine = new LeaseEngine(wrap(await open()), {
      // Timers run on the manual clock: tests advance time, never wait for it.
      // The periodic sweep never falls due on its own (tests call sweep()),
      // unless a test asks for an interval.
      scheduler: clock,
      sweepIntervalMs: 1e15,
      bootstrapSecret: SECRET,
      ...opts,
    });
    engine.stats.subscribe((e) => events.push(e));
    await engine.start();
    return engine;
  };
  const f: EngineFixture = {
    clock,
    engine: await boot(),
    admin: undefined as unknown as Principal,
    dir,
    backend,
    events,
    changes: () => events.filter((e): e is LeaseChange => e.type === 'change'),
    async open(ownerId = 'worker', ttlMs = 15_000) {
      return (await f.engine.sessions.open(f.admin, ownerId, ttlMs)).session.session_id;
    },
    acquire(route, sessionId, extra = {}) {
      const requestId = extra.requestId ?? rid();
      const body = extra.body ?? { session_id: sessionId, request_id: requestId };
      return f.engine.leases.acquire(f.admin, route, {
        sessionId,
        requestId,
        ttlMs: 30_000,
        maxLifetimeMs: 3_600_000,
        waitMs: 0,
        metadata: null,
        digest: requestDigest(body),
        ...extra,
      });
    },
    async restart() {
      await f.engine.stop();
      events.length = 0;
      f.engine = await boot();
      f.admin = await f.engine.tokens.authenticate(SECRET);
    },
    async close() {
      await f.engine.stop();
      rmSync(dir, { recursive: true, force: true });
      await db?.drop();
    },
  };
  f.admin = await f.engine.tokens.authenticate(SECRET);
  return f;
}

/** One empty store step: a real round trip (a batch commit on SQLite), so steps already started make progress. */
export function storeTurn(f: EngineFixture): Promise<void> {
  return f.engine.parts.store.atomic(async () => undefined);
}

/**
 * Wait, without sleeping, until `ready()` holds, checked after each store
 * turn. With `turns`, at most that many turns and no failure (a test that
 * lets steps already started finish). Without, as many as it takes, and a
 * failure naming `what` once 10 s × TIME_FACTOR have passed: on PostgreSQL
 * a change reaches the engine through the notification channel, which a
 * loaded machine may take many turns to deliver (server/testing/wait.ts).
 */
export async function until(f: EngineFixture, ready: () => boolean, turns?: number, what = 'the condition'): Promise<void> {
  if (turns !== undefined) {
    for (let i = 0; i < turns && !ready(); i++) await storeTurn(f);
    return;
  }
  const budgetMs = 10_000 * TIME_FACTOR;
  const deadline = performance.now() + budgetMs;
  let n = 0;
  while (!ready()) {
    if (performance.now() > deadline) assert.fail(`waited ${budgetMs} ms (${n} store turns) for ${what}`);
    await storeTurn(f);
    n++;
  }
}

/**
 * Settle promises that wait on engine timers (waiter deadlines): advance the
 * manual clock in `stepMs` steps, with a store turn between, until they all
 * settle. Time is simulated; nothing waits for it. For a test that needs
 * the clock to stop at a deadline, `endWait`.
 */
export async function settleWithTime(f: EngineFixture, ps: readonly Promise<unknown>[], stepMs = 50): Promise<void> {
  let done = false;
  const all = Promise.allSettled(ps).then(() => {
    done = true;
  });
  while (!done) {
    f.clock.advance(stepMs);
    await Promise.race([all, storeTurn(f)]);
  }
  await all;
}

/**
 * End a wait at its deadline exactly: wait (store turns) until a wait of
 * `waitMs` has been armed since `mark` (`f.clock.mark()`, taken before the
 * acquire), move the clock to its deadline, which runs it, then let the
 * store settle `p` without moving time. The step the deadline starts sees
 * the deadline as its `now` however many turns it takes on a loaded
 * machine, so what the test does next (a parked place's 5 s, the sessions'
 * expiry) counts from there; and a wait armed late, after its step's
 * commit, is still reached, never left pending with the clock stopped.
 */
export async function endWait(f: EngineFixture, p: Promise<unknown>, waitMs: number, mark: number): Promise<void> {
  let due: number | undefined;
  await until(f, () => (due = f.clock.armedSince(mark, waitMs)) !== undefined, undefined, `a wait of ${waitMs} ms armed`);
  f.clock.advance(due! - f.clock.now());
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await until(f, () => settled, undefined, `the wait of ${waitMs} ms answered at its deadline`);
}

/** A renew/release/checkpoint proof from an acquire answer. */
export function proofOf(sessionId: string, lease: { lease_id: string; fencing_token: number }, requestId = rid()) {
  return {
    sessionId,
    requestId,
    leaseId: lease.lease_id,
    fencingToken: lease.fencing_token,
    digest: requestDigest({ session_id: sessionId, request_id: requestId, lease_id: lease.lease_id, fencing_token: lease.fencing_token }),
  };
}

/** Await a promise expected to reject with a LeaseholdError of this code; returns the error. */
export async function rejectsWith(p: Promise<unknown>, code: string): Promise<{ code: string; message: string; retryable: boolean; retryAfterMs?: number }> {
  try {
    await p;
  } catch (e) {
    const err = e as { code?: string; message: string; retryable: boolean; retryAfterMs?: number };
    if (err.code !== code) throw new Error(`expected ${code}, got ${err.code ?? String(e)}`);
    return err as { code: string; message: string; retryable: boolean; retryAfterMs?: number };
  }
  throw new Error(`expected ${code}, but it succeeded`);
}
