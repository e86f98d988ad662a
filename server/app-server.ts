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
import { isOriginForm, refuseRawRequest, refuseRequestTarget } from './http/request-target';
import { MetricsCollector, type CollectorOptions } from './metrics/collector';
import { PgStore } from './store/postgres/pg-store';
import { SqliteStore } from './store/sqlite/sqlite-store';
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
  clock?: Clock;
  engine?: EngineOptions;
  corsOrigins?: string[];
  publicOrigin?: string;
  version?: string;
  /** Serves everything outside /api/. */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void;
  log?: (line: string) => void;
  /**
   * Metrics (`LEASEHOLD_METRICS`, `LEASEHOLD_METRICS_PUBLIC`): on unless
   * `enabled` is false; off, nothing subscribes and nothing is measured.
   */
  metrics?: { enabled?: boolean; public?: boolean } & CollectorOptions;
  /** Tests only: decorate the real store (to delay or fail its steps). */
  wrapStore?: (store: Store) => Store;
}

export interface AppServer {
  server: Server;
  engine: LeaseEngine;
  store: Store;
  url: string;
  bootstrapToken: string | undefined;
  /** The metrics collector, when metrics are on. */
  metrics: MetricsCollector | undefined;
  /** Close the listener and every connection, then the engine and store. */
  close(): Promise<void>;
}

/** Open the store, start the engine (expiring what fell due while down), then listen. */
export async function startAppServer(opts: AppServerOptions): Promise<AppServer> {
  // The data directory holds the SQLite database, or on PostgreSQL the
  // instance's own files (the bootstrap token): created for either store.
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const base: Store = opts.databaseUrl
    ? await PgStore.open({ url: opts.databaseUrl, poolSize: opts.poolSize, clock: opts.clock })
    : new SqliteStore({ dataDir: opts.dataDir, synchronous: opts.synchronous, clock: opts.clock });
  const store = opts.wrapStore ? opts.wrapStore(base) : base;
  const engine = new LeaseEngine(store, opts.engine);
  let bootstrapToken: string | undefined;
  try {
    ({ bootstrapToken } = await engine.start());
  } catch (e) {
    await engine.stop().catch(() => undefined);
    throw e;
  }
  const metrics = opts.metrics?.enabled === false ? undefined : new MetricsCollector(engine, opts.metrics);
  await metrics?.start();
  const api = createApiHandler(engine, {
    corsOrigins: opts.corsOrigins,
    publicOrigin: opts.publicOrigin,
    version: opts.version,
    log: opts.log,
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
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    if (!isOriginForm(req.url)) refuseRequestTarget(req, res);
    else if (req.url === '/api' || req.url?.startsWith('/api/')) {
      inFlight++;
      res.once('close', () => {
        if (--inFlight === 0) idle?.();
      });
      api(req, res);
    } else fallback(req, res);
  });
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
    metrics,
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
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
