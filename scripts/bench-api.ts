/**
 * The HTTP layer alone (docs/benchmarks.md "The HTTP layer, cut"): the real `/api/*` handler (routing,
 * credentials, bodies, validation, digests, envelopes, metrics, access log)
 * over a stub engine that answers acquire, release and the session calls at
 * once, with answers of the real shapes (recorded like the engine records
 * them). What it costs above lockbench's floor is the HTTP layer's own CPU,
 * without SQLite and its batching (which make whole-server figures swing on
 * a loaded machine).
 *
 *   npx esbuild scripts/bench-api.ts --bundle --platform=node --format=esm --packages=external --outfile=dist/bench-api.mjs
 *   PORT=4275 LEASEHOLD_BOOTSTRAP_TOKEN=lh_… node dist/bench-api.mjs
 *
 * then point lockbench's leasehold adapter at it (docs/benchmarks.md).
 */

import { createServer } from 'node:http';
import { parseGrant } from '@/lib/grants';
import { createApiHandler } from '../server/http/api';
import { AccessLog } from '../server/http/access-log';
import { MetricsCollector } from '../server/metrics/collector';
import { recordAnswer } from '../server/engine/core/idempotency';
import { heldLease } from '../server/engine/core/views';
import { hashSecret } from '../server/engine/core/ids';
import { silentLogger } from '../server/engine/core/logger';
import type { LeaseEngine } from '../server/engine/engine';
import type { Step } from '../server/engine/core/step';
import type { Principal } from '../server/engine/tokens/tokens';
import type { LeaseRow } from '../server/store/types';
import type { Millis } from '../server/store/millis';

const secret = process.env.LEASEHOLD_BOOTSTRAP_TOKEN ?? 'lh_bench_api_token';
const grant = parseGrant('lease://**#admin');
if (!grant.ok) throw new Error(grant.reason);
const principal: Principal = { tokenId: 'tk_bench', name: 'bench', family: 'bench', grants: [grant.value], root: true, kind: 'api', expiresAt: null };
const tokenHash = hashSecret(secret);
/** Where the engine writes its answer record (here: nowhere). */
const step = { tx: { putIdempotency: async () => undefined } } as unknown as Step;
const key = { family: 'bench', op: 'acquire' as const, route: '', requestId: '' };
let revision = 0;
const iso = (ms: number) => new Date(ms).toISOString();

const stub = {
  store: { now: () => Date.now(), kind: 'sqlite', epoch: () => 'bench' },
  tokens: {
    async authenticate(s: string): Promise<Principal> {
      if (hashSecret(s) !== tokenHash) throw new Error('unknown token');
      return principal;
    },
  },
  audit: { note() {}, count() {}, counts: { invalid_credential: 0, anonymous_refusal: 0, dropped: 0 } },
  waiters: { size: () => 0 },
  feed: { stats: () => ({ streams: 0, exact: 0, wildcard: 0, notifications: 0, dropped: 0, overflows: 0, resumes: 0, replayed: 0, resyncs: { horizon: 0, epoch: 0, too_many: 0 } }), familyStats: () => ({ notifications: 0, dropped: 0 }) },
  events: { subscribe: () => () => undefined },
  delayRefusals: 0,
  healthy: async () => true,
  uptimeMs: () => 0,
  census: async () => undefined,
  changeLogStats: async () => [],
  routesInDelay: async () => 0,
  async openSession(_p: Principal, ownerId: string, ttlMs: number) {
    const now = Date.now();
    return { session: { session_id: `ss_${++revision}`, holder_incarnation: `hi_${revision}`, owner_id: ownerId, ttl_ms: ttlMs, created_at: iso(now), expires_at: iso(now + ttlMs), lease_count: 0 } };
  },
  async keepAlive(_p: Principal, sessionId: string) {
    const now = Date.now();
    return { session: { holder_incarnation: sessionId, owner_id: 'o', ttl_ms: 30_000, created_at: iso(now), expires_at: iso(now + 30_000), lease_count: 1 }, release_requests: [] };
  },
  async closeSession() {
    return { released: 0 };
  },
  async acquire(_p: Principal, route: string, input: { sessionId: string; requestId: string; ttlMs?: number; digest: string }) {
    const now = Date.now() as Millis;
    const ttl = input.ttlMs ?? 30_000;
    const row: LeaseRow = {
      family: 'bench', route, leaseId: `ls_${++revision}`, fencingToken: revision, sessionHash: hashSecret(input.sessionId), ownerId: 'lockbench', incarnation: 'hi_bench',
      acquiredAt: now, renewedAt: now, expiresAt: (now + ttl) as Millis, maxExpiresAt: (now + 86_400_000) as Millis, ttlMs: ttl, renewalCount: 0, revision, metadata: null,
    };
    const answer = { lease: heldLease(row, now, 0), queued: false };
    await recordAnswer(step, { ...key, route, requestId: input.requestId }, input.digest, answer, now);
    return { answer, replayed: false };
  },
  async release(_p: Principal, route: string, input: { sessionId: string; requestId: string; fencingToken: number; digest: string }) {
    hashSecret(input.sessionId);
    const answer = { route, fencing_token: input.fencingToken };
    await recordAnswer(step, { ...key, op: 'release', route, requestId: input.requestId }, input.digest, answer, Date.now() as Millis);
    return { answer, replayed: false };
  },
};

const engine = stub as unknown as LeaseEngine;
const collector = new MetricsCollector(engine);
const api = createApiHandler(engine, { accessLog: new AccessLog({ logger: silentLogger }), metrics: { collector, public: false } });
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.once('close', () => undefined);
  api(req, res);
});
server.listen(Number(process.env.PORT ?? 4275), '127.0.0.1', () => console.log(`bench-api: listening, pid ${process.pid}`));
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(0));
