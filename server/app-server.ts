/**
 * Assembles the service: store, engine, and the Node HTTP server that answers
 * `/api/*` itself and hands every other request to a fallback (Next's request
 * handler in production; nothing in API-only mode and in tests).
 */

import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LeaseEngine, type EngineOptions } from './engine/engine';
import { createApiHandler } from './http/api';
import { AccessLog } from './http/access-log';
import type { DrainState } from './http/health';
import { silentLogger, type Logger } from './engine/core/logger';
import { consoleTakes, isApiPath, isOriginForm, refuseConsoleMethod, refuseRawRequest, refuseRequestTarget } from './http/request-target';
import { ConnectionGuard } from './http/connection-guard';
import { MetricsCollector, type CollectorOptions } from './metrics/collector';
import { SqliteStore } from './store/sqlite/sqlite-store';
import { openStore } from './store/factory';
import type { Clock } from './store/millis';
import type { Store } from './store/types';

export interface AppServerOptions {
  dataDir: string;
  /** A postgres:// URL: the shared PostgreSQL store instead of SQLite in `dataDir`. */
  databaseUrl?: string;
  /** PostgreSQL: at most this many pooled connections. */
  poolSize?: number;
  host?: string;
  port?: number;
  synchronous?: 'normal' | 'full';
  /** SQLite: how long journaled batches may wait for their commit (server/store/sqlite/journal.ts). */
  sqliteCommitMs?: number;
  clock?: Clock;
  engine?: EngineOptions;
  corsOrigins?: string[];
  publicOrigin?: string;
  version?: string;
  /** Serves everything outside /api/ (GET and HEAD only: other methods are answered 405 before it sees them). */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The fallback is Next's development server: it also takes POST on its own `/__nextjs_…` endpoints. */
  devConsole?: boolean;
  /** Where the server's lines go (silent when absent). */
  logger?: Logger;
  /** Request lines: every request (`all`), else only server errors and those slower than `slowMs`. */
  accessLog?: { all?: boolean; slowMs?: number };
  /** PostgreSQL: this process's instance id (the one its log lines carry); else generated. */
  instanceId?: string;
  /**
   * Metrics (`LEASEHOLD_METRICS`, `LEASEHOLD_METRICS_PUBLIC`): on unless
   * `enabled` is false; off, nothing subscribes and nothing is measured.
   */
  metrics?: { enabled?: boolean; public?: boolean } & CollectorOptions;
  /** Connection limits and timeouts (docs/operations.md, "Threat model"). */
  http?: Partial<HttpLimits>;
  /** Tests only: decorate the real store (to delay or fail its steps). */
  wrapStore?: (store: Store) => Store;
}

/** What one client may hold of the server's sockets, and for how long. */
interface HttpLimits {
  /** Open connections at most (`LEASEHOLD_MAX_CONNECTIONS`); beyond it a new connection is closed at once. */
  maxConnections: number;
  /** The request head must arrive within this (`LEASEHOLD_HEADERS_TIMEOUT_MS`), else 408 and the socket is closed. */
  headersTimeoutMs: number;
  /** The whole request must arrive within this (`LEASEHOLD_REQUEST_TIMEOUT_MS`); responses (SSE streams) are not limited. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections are closed after this (`LEASEHOLD_KEEPALIVE_TIMEOUT_MS`). */
  keepAliveTimeoutMs: number;
  /**
   * A socket whose unsent answer bytes make no progress for this long is
   * destroyed (`LEASEHOLD_SEND_TIMEOUT_MS`): a client that never reads
   * cannot hold an answer, or its connection, forever. A live SSE stream
   * that its client reads is never cut.
   */
  sendTimeoutMs: number;
  /** How often the two request timeouts are checked (Node's default is 30 s; at most a quarter of the headers timeout here). */
  checkIntervalMs?: number;
}

const DEFAULT_HTTP_LIMITS: HttpLimits = { maxConnections: 10_000, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 65_000, sendTimeoutMs: 30_000 };

export interface AppServer {
  server: Server;
  engine: LeaseEngine;
  store: Store;
  url: string;
  /** The bootstrap admin token when this start generated it (never one given by LEASEHOLD_BOOTSTRAP_TOKEN). */
  bootstrapToken: string | undefined;
  /** This start created the bootstrap admin token (generated or given). */
  bootstrapCreated: boolean;
  /** The metrics collector, when metrics are on. */
  metrics: MetricsCollector | undefined;
  /**
   * The first half of a graceful shutdown: readiness answers 503 from now on
   * and answers carry `Connection: close`, while everything is still served.
   */
  beginDrain(): void;
  readonly draining: boolean;
  /** Close the listener and every connection, then the engine and store. */
  close(): Promise<void>;
}

/** Open the store, start the engine (expiring what fell due while down), then listen. */
export async function startAppServer(opts: AppServerOptions): Promise<AppServer> {
  // The data directory holds the SQLite database, or on PostgreSQL the
  // instance's own files (the bootstrap token): created for either store.
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const base: Store = await openStore(opts.databaseUrl ?? opts.dataDir, {
    clock: opts.clock,
    sqlite: { synchronous: opts.synchronous, commitEveryMs: opts.sqliteCommitMs },
    postgres: { poolSize: opts.poolSize, instanceId: opts.instanceId },
  });
  const store = opts.wrapStore ? opts.wrapStore(base) : base;
  const logger = opts.logger ?? silentLogger;
  if (base instanceof SqliteStore && base.replayed > 0) {
    logger.info(`applied ${base.replayed} journaled batches that had not committed before the last stop`, { journal_batches: base.replayed });
  }
  const engine = new LeaseEngine(store, { logger, ...opts.engine });
  let bootstrapToken: string | undefined;
  let bootstrapCreated = false;
  try {
    ({ bootstrapToken, bootstrapCreated } = await engine.start());
  } catch (e) {
    await engine.stop().catch(() => undefined);
    throw e;
  }
  const metrics = opts.metrics?.enabled === false ? undefined : new MetricsCollector(engine, opts.metrics);
  await metrics?.start();
  const accessLog = new AccessLog({ logger, all: opts.accessLog?.all, slowMs: opts.accessLog?.slowMs });
  const drain: DrainState = { draining: false };
  const api = createApiHandler(engine, {
    corsOrigins: opts.corsOrigins,
    publicOrigin: opts.publicOrigin,
    version: opts.version,
    accessLog,
    drain,
    metrics: metrics && { collector: metrics, public: opts.metrics?.public === true },
  });
  const fallback =
    opts.fallback ??
    ((_req: IncomingMessage, res: ServerResponse) => {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('Not found\n');
    });
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const limits = { ...DEFAULT_HTTP_LIMITS, ...opts.http };
  const hsts = opts.publicOrigin?.startsWith('https:') === true;
  const devConsole = opts.devConsole === true;
  // One request in flight per connection, a bounded queue behind it, and the send timeout (docs/operations.md).
  const guard = new ConnectionGuard((req, res) => {
    // Browsers on https keep to https for a year (on every answer: pages, assets, the API).
    if (hsts) res.setHeader('Strict-Transport-Security', 'max-age=31536000');
    // Draining: each answer asks its client to reconnect (to another instance, through the balancer).
    if (drain.draining) res.shouldKeepAlive = false;
    if (!isOriginForm(req.url)) refuseRequestTarget(req, res);
    else if (isApiPath(req.url)) {
      inFlight++;
      // 'close' is emitted once (a plain listener costs less than `once`'s wrapper).
      res.on('close', () => {
        if (--inFlight === 0) idle?.();
      });
      api(req, res);
    } else if (consoleTakes(req.method, req.url, devConsole)) fallback(req, res);
    else refuseConsoleMethod(req, res);
  }, limits.sendTimeoutMs);
  const server = createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs ?? Math.max(250, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
    },
    guard.handle,
  );
  server.maxConnections = limits.maxConnections;
  server.on('clientError', refuseRawRequest);
  server.on('connect', (_req: IncomingMessage, socket) => refuseRawRequest(undefined, socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | undefined;
  return {
    server,
    engine,
    store,
    url: `http://${host}:${addr.port}`,
    bootstrapToken,
    bootstrapCreated,
    metrics,
    beginDrain() {
      drain.draining = true;
    },
    get draining() {
      return drain.draining;
    },
    close() {
      // Stop accepting, answer waiting acquires, let in-flight answers finish
      // (for at most 3 s), then commit what is pending and close the store,
      // and only then cut the remaining connections.
      closing ??= (async () => {
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeIdleConnections();
        engine.drain();
        metrics?.stop();
        if (inFlight > 0) {
          await new Promise<void>((r) => {
            idle = r;
            setTimeout(r, 3_000).unref();
          });
        }
        await engine.stop();
        accessLog.close();
        guard.close();
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
