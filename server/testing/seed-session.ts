/**
 * Test support: one session holding thousands of leases, written straight
 * into a stopped server's store through the store's own write path (steps
 * of 5,000 leases), so a test of what a huge session does to its family (CONTRACT §19)
 * does not spend its time acquiring them one by one. The leases are what
 * acquires would have left: fencing tokens (and the family's revision) 1…n
 * after `revision`, in route order.
 *
 * Start and close a server on the data directory first (it migrates the
 * schema, and on PostgreSQL binds the directory to its database), seed, then
 * start the server again on the same directory.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashSecret, randomId } from '../engine/core/ids';
import { newSessionId } from '../engine/leases/sessions';
import { millis, systemClock } from '../store/millis';
import { openStore as openStoreAt } from '../store/factory';
import type { Store } from '../store/types';
import type { Backend } from './pg';

export interface SeededSession {
  sessionId: string;
  incarnation: string;
  ownerId: string;
  routes: string[];
  /** The family's revision after the seed (the last lease's fencing token). */
  revision: number;
}

export interface SeedOptions {
  family?: string;
  /** Routes `${prefix}${i}`, i = 0…count-1, zero-padded so route order is index order. */
  prefix: string;
  count: number;
  sessionTtlMs: number;
  /** The session's deadline, ms from now (default: its TTL). */
  sessionExpiresInMs?: number;
  leaseTtlMs: number;
}

/** Where to seed: a SQLite data directory, or a PostgreSQL database (its URL, or the one a test data directory is bound to). */
export type SeedTarget = { backend: Backend; dataDir: string } | { backend: 'postgres'; databaseUrl: string };

async function openStore(t: SeedTarget): Promise<Store> {
  if (t.backend === 'sqlite') return openStoreAt(t.dataDir);
  const url = 'databaseUrl' in t ? t.databaseUrl : readFileSync(join(t.dataDir, 'test-database'), 'utf8');
  // A step writes 5,000 leases: more than a request's step may take.
  return openStoreAt(url, { postgres: { stepTimeoutMs: 600_000 } });
}

/** Leases written by one step of the seed. */
const SEED_STEP = 5_000;

export async function seedSession(target: SeedTarget, o: SeedOptions): Promise<SeededSession> {
  const family = o.family ?? 'default';
  const store = await openStore(target);
  const sessionId = newSessionId();
  const incarnation = randomId('in_', 8);
  const ownerId = 'big-worker';
  const width = String(o.count - 1).length;
  const routes = Array.from({ length: o.count }, (_, i) => `${o.prefix}${String(i).padStart(width, '0')}`);
  const now = systemClock();
  const sessionHash = hashSecret(sessionId);
  try {
    // Steps of SEED_STEP leases: one step of 100,000 would outlast the
    // database's statement and idle-in-transaction bounds on a loaded machine.
    let revision = 0;
    for (let from = 0; from < routes.length || from === 0; from += SEED_STEP) {
      revision = await store.atomic(async (tx) => {
        if (from === 0) {
          await tx.insertSession({
            family,
            idHash: sessionHash,
            incarnation,
            ownerId,
            ttlMs: o.sessionTtlMs,
            createdAt: now,
            expiresAt: millis(now + (o.sessionExpiresInMs ?? o.sessionTtlMs)),
          });
        }
        let last = revision;
        for (const route of routes.slice(from, from + SEED_STEP)) {
          last = await tx.bumpRevision(family);
          await tx.insertLease({
            family,
            route,
            leaseId: randomId('ls_'),
            fencingToken: last,
            sessionHash,
            ownerId,
            incarnation,
            acquiredAt: now,
            renewedAt: now,
            expiresAt: millis(now + o.leaseTtlMs),
            maxExpiresAt: millis(now + 86_400_000),
            ttlMs: o.leaseTtlMs,
            renewalCount: 0,
            revision: last,
            metadata: null,
            releaseRequest: null,
          });
        }
        return last;
      }, { family });
    }
    return { sessionId, incarnation, ownerId, routes, revision };
  } finally {
    await store.close();
  }
}
