/**
 * The benchmark's floor: a bare Node `http` server that answers the requests
 * `npm run bench` sends to Leasehold (same paths, same methods, the body read
 * in full) with constant JSON bodies of about the same size and the same
 * headers, and does nothing else. What Leasehold costs above this is the cost
 * of the service itself (routing, auth, validation, the engine, SQLite).
 *
 * Started by scripts/bench.ts as its own process: `PORT=0 node --import tsx
 * scripts/bench-floor.ts` prints `floor: listening on http://…`.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const T = '2026-01-01T00:00:00.000Z';
const lease = {
  route: 'lease://bench/w-00/r-00',
  owner_id: 'bench-00',
  holder_incarnation: 'hi_0000000000000000',
  fencing_token: 1,
  acquired_at: T,
  renewed_at: T,
  expires_at: T,
  max_expires_at: T,
  ttl_ms: 30000,
  remaining_ms: 30000,
  renewal_count: 0,
  revision: 1,
  metadata: null,
  waiters: 0,
  lease_id: 'ls_0000000000000000000000',
};
const envelope = (code: string, rest: object): Buffer =>
  Buffer.from(JSON.stringify({ status: 'success', code, correlation_id: 'c_0000000000', ...rest }));

const keptAlive = { holder_incarnation: lease.holder_incarnation, owner_id: 'bench-00', ttl_ms: 300000, created_at: T, expires_at: T, lease_count: 0 };

const BODIES = {
  session: envelope('session_opened', {
    session: { holder_incarnation: lease.holder_incarnation, owner_id: 'bench-00', ttl_ms: 300000, created_at: T, expires_at: T, lease_count: 0, session_id: 'ss_00000000000000000000000000000000' },
  }),
  keepalive: envelope('session_kept_alive', { session: keptAlive }),
  acquire: envelope('lease_acquired', { lease, queued: false }),
  release: envelope('lease_released', { route: lease.route, fencing_token: 1 }),
  other: envelope('ok', {}),
};

/**
 * A batched renewal (`POST /api/v1/sessions/renew`, npm run bench:fleet's
 * floor): the body parsed, and each item answered with a lease of the
 * usual size carrying its own route, lease_id and token, as Leasehold's
 * answer does. The least one renewed item costs on the wire.
 */
function renewed(request: Buffer): Buffer {
  const { leases } = JSON.parse(request.toString('utf8')) as { leases: Array<{ route: string; lease_id: string; fencing_token: number }> };
  return envelope('session_renewed', {
    session: keptAlive,
    results: leases.map((i) => ({ route: i.route, code: 'lease_renewed', lease: { ...lease, route: i.route, lease_id: i.lease_id, fencing_token: i.fencing_token } })),
    release_requests: [],
  });
}

function answer(req: IncomingMessage, res: ServerResponse, request: Buffer): void {
  const url = req.url ?? '/';
  let status = 200;
  let body = BODIES.other;
  if (req.method === 'POST' && url === '/api/v1/sessions/renew') body = renewed(request);
  else if (req.method === 'POST' && url === '/api/v1/sessions') {
    status = 201;
    body = BODIES.session;
  } else if (req.method === 'POST' && url === '/api/v1/sessions/keepalive') body = BODIES.keepalive;
  else if (req.method === 'POST' && url.endsWith('/acquire')) body = BODIES.acquire;
  else if (req.method === 'POST' && url.endsWith('/release')) body = BODIES.release;
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': body.length,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Correlation-Id': 'c_0000000000',
  });
  res.end(body);
}

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  // Read the whole body, as a real handler must, then answer.
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    answer(req, res, Buffer.concat(chunks));
  });
});

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const a = server.address() as AddressInfo;
  console.log(`floor: listening on http://${a.address}:${a.port}`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
