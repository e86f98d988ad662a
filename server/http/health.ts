/**
 * The load balancer's and the supervisor's probes (docs/operations.md,
 * "Health checks"):
 * - `GET /api/v1/health/live`: the process runs and its event loop answers.
 *   Restart the process when this fails; never for a store outage.
 * - `GET /api/v1/health/ready`: send this instance traffic. 503 while the
 *   store is unreachable or its disk fails (refusing writes for another
 *   reason than space), when its schema is not the one this build migrates
 *   to, and from the first moment of a graceful shutdown (draining); 200
 *   `degraded` with its reasons while serving with a CONTRACT §19
 *   degradation (a family's sweep more than 5 s behind, a full disk).
 * Plain bodies (not the envelope), like `GET /api/v1/health`.
 */

import type { z } from 'zod';
import type { LeaseEngine } from '../engine';
import type { DegradedReason, HealthLive, HealthNotReady, HealthReady } from './answers';

export const LIVE_PATH = '/api/v1/health/live';
export const READY_PATH = '/api/v1/health/ready';

/** Whether the server is draining: set once by a graceful shutdown, never cleared. */
export interface DrainState {
  draining: boolean;
}

type ProbeAnswer =
  | { status: 200; body: z.output<typeof HealthLive> | z.output<typeof HealthReady> }
  | { status: 503; body: z.output<typeof HealthNotReady> };

/** Answer a liveness or readiness probe. Never throws. */
export async function probe(path: typeof LIVE_PATH | typeof READY_PATH, engine: LeaseEngine, drain: DrainState): Promise<ProbeAnswer> {
  const store = engine.health.storeKind;
  if (path === LIVE_PATH) return { status: 200, body: { status: 'ok', uptime_ms: engine.health.uptimeMs() } };
  let reachable = true;
  let schema = false;
  try {
    schema = await engine.health.schemaCurrent();
  } catch {
    reachable = false;
  }
  // A failing disk (not merely a full one) takes no writes until it is mended: send no traffic.
  if (engine.health.writeFault() === 'io_error') reachable = false;
  const draining = drain.draining;
  const checks = { store: reachable ? ('ok' as const) : ('unavailable' as const), schema: reachable ? (schema ? ('ok' as const) : ('mismatch' as const)) : ('unknown' as const), draining };
  if (draining) return { status: 503, body: { status: 'draining', store, checks } };
  if (!reachable || !schema) return { status: 503, body: { status: 'unavailable', store, checks } };
  const reasons = degradations(engine);
  if (reasons.length > 0) return { status: 200, body: { status: 'degraded', store, checks, reasons } };
  return { status: 200, body: { status: 'ready', store, checks } };
}

/** What degrades this serving instance (CONTRACT §19): each a reason of its own. */
function degradations(engine: LeaseEngine): Array<z.output<typeof DegradedReason>> {
  // A full disk: reads served, writes refused (`backend_unavailable`) until there is room.
  const out: Array<z.output<typeof DegradedReason>> = engine.health.writeFault() === 'no_space' ? [{ reason: 'no_space' }] : [];
  for (const b of engine.health.backlog()) out.push({ reason: 'backlog', family: b.family, due: b.due, behind_ms: Math.round(b.behind_ms) });
  return out;
}
