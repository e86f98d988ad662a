/**
 * The application's own Node server (Next's custom-server mode). It owns the
 * lease engine, serves /api/* through server/http, and hands every other
 * request to Next. The API does not run through Next's route
 * pipeline: that costs about half a millisecond of CPU per request, about
 * 30x slower here than answering /api/* in this server.
 */

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config';
import { startAppServer, type AppServerOptions } from './app-server';
import { createLog, defaultLogFormat, type ServerLog } from './log';
import { errorFields } from './engine/core/logger';
import { randomId } from './engine/core/ids';

const VERSION = process.env.npm_package_version ?? '0.1.0';

async function nextHandler(config: Config): Promise<AppServerOptions['fallback']> {
  if (config.LEASEHOLD_CONSOLE === 'off') return undefined;
  process.env.NEXT_TELEMETRY_DISABLED = '1';
  const { default: next } = await import('next');
  const app = next({ dev: config.NODE_ENV !== 'production', hostname: config.HOST, port: config.PORT });
  await app.prepare();
  const handle = app.getRequestHandler();
  return (req, res) => void handle(req, res);
}

/** Write the last line, flush, and exit. */
function exit(log: ServerLog, code: number): never {
  log.flush();
  process.exit(code);
}

async function main(instance: string): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      // The log's own settings may be what is invalid: the defaults say so.
      const log = createLog({ format: defaultLogFormat(), level: 'info', instance });
      log.fatal(e.message);
      exit(log, 2);
    }
    throw e;
  }
  const log = createLog({ format: config.LEASEHOLD_LOG_FORMAT ?? defaultLogFormat(), level: config.LEASEHOLD_LOG_LEVEL, instance });
  const { logger } = log;
  current = log;
  const fallback = await nextHandler(config);
  const app = await startAppServer({
    dataDir: config.LEASEHOLD_DATA_DIR,
    databaseUrl: config.LEASEHOLD_DATABASE_URL,
    poolSize: config.LEASEHOLD_DATABASE_POOL_SIZE,
    instanceId: instance,
    host: config.HOST,
    port: config.PORT,
    synchronous: config.LEASEHOLD_SYNC,
    sqliteCommitMs: config.LEASEHOLD_SQLITE_COMMIT_MS,
    corsOrigins: config.corsOrigins,
    publicOrigin: config.LEASEHOLD_PUBLIC_ORIGIN,
    version: VERSION,
    logger,
    accessLog: { all: config.LEASEHOLD_ACCESS_LOG === 'on', slowMs: config.LEASEHOLD_SLOW_REQUEST_MS },
    http: {
      maxConnections: config.LEASEHOLD_MAX_CONNECTIONS,
      headersTimeoutMs: config.LEASEHOLD_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: config.LEASEHOLD_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: config.LEASEHOLD_KEEPALIVE_TIMEOUT_MS,
      sendTimeoutMs: config.LEASEHOLD_SEND_TIMEOUT_MS,
    },
    metrics: { enabled: config.LEASEHOLD_METRICS === 'on', public: config.LEASEHOLD_METRICS_PUBLIC },
    engine: {
      limits: {
        idempotencyTtlMs: config.LEASEHOLD_IDEMPOTENCY_TTL_S * 1000,
        changeLogChanges: config.LEASEHOLD_CHANGE_LOG_CHANGES,
        changeLogMs: config.LEASEHOLD_CHANGE_LOG_SECONDS * 1000,
        stepMaxLeases: config.LEASEHOLD_STEP_MAX_LEASES,
        maxWaitMs: config.LEASEHOLD_MAX_WAIT_MS,
        admitQueueMs: config.LEASEHOLD_ADMIT_QUEUE_MS,
      },
      bootstrapSecret: config.LEASEHOLD_BOOTSTRAP_TOKEN,
      secret: config.LEASEHOLD_SECRET,
      feed: {
        maxStreams: config.LEASEHOLD_MAX_STREAMS,
        streamsPerFamily: config.LEASEHOLD_MAX_STREAMS_PER_FAMILY,
        streamsPerToken: config.LEASEHOLD_MAX_STREAMS_PER_TOKEN,
        heartbeatMs: config.LEASEHOLD_FEED_HEARTBEAT_MS,
      },
      embedTokensPerCreator: config.LEASEHOLD_MAX_EMBED_TOKENS_PER_CREATOR,
      audit: {
        retentionMs: config.LEASEHOLD_AUDIT_RETENTION_DAYS * 86_400_000,
        maxRows: config.LEASEHOLD_AUDIT_MAX_ROWS,
        maxRowsPerFamily: config.LEASEHOLD_AUDIT_MAX_ROWS_PER_FAMILY,
      },
    },
    fallback,
    devConsole: fallback !== undefined && config.NODE_ENV !== 'production',
  });
  // A generated bootstrap token is shown once, on this first start, whatever
  // stdout is (the README's first command promises it, and whoever started
  // the server needs it to sign in), and kept in its 0600 file; it is never a
  // log line's field. An operator who must keep secrets out of stdout sets
  // LEASEHOLD_BOOTSTRAP_TOKEN, which is never printed (docs/operations.md).
  if (app.bootstrapToken && config.LEASEHOLD_BOOTSTRAP_TOKEN === undefined) {
    const file = join(config.LEASEHOLD_DATA_DIR, 'admin-token');
    writeFileSync(file, `${app.bootstrapToken}\n`, { mode: 0o600 });
    logger.warn('bootstrap admin token created (shown once below, kept in its file)', { file });
    process.stdout.write(`\n  bootstrap admin token (shown once, also in ${file}):\n\n  ${app.bootstrapToken}\n\n`);
  } else if (app.bootstrapCreated) {
    logger.info('bootstrap admin token created from LEASEHOLD_BOOTSTRAP_TOKEN (not shown)');
  }
  const store = app.store.kind;
  const where = store === 'postgres' ? `postgres, instance ${instance}` : `sqlite in ${config.LEASEHOLD_DATA_DIR}`;
  const metrics = config.LEASEHOLD_METRICS === 'on' ? (config.LEASEHOLD_METRICS_PUBLIC ? 'on (public)' : 'on') : 'off';
  logger.info(`listening on ${app.url} (store: ${where}${fallback ? ', console on' : ', API only'}, metrics ${metrics})`, {
    url: app.url,
    store,
    console: fallback !== undefined,
    metrics,
    access_log: config.LEASEHOLD_ACCESS_LOG,
    version: VERSION,
  });

  // SIGTERM: readiness fails at once so the balancer stops sending work, but
  // everything is served for LEASEHOLD_DRAIN_MS; then streams get `closed`
  // (shutdown), in-flight requests are answered (waiting acquires
  // `backend_unavailable`), the audit buffer is written, and the process
  // exits 0. A second signal exits at once.
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      logger.warn('second signal: exiting at once', { signal });
      exit(log, 1);
    }
    stopping = true;
    app.beginDrain();
    logger.info('draining: readiness answers 503, still serving', { signal, drain_ms: config.LEASEHOLD_DRAIN_MS });
    setTimeout(() => {
      logger.info('shutting down: closing streams, answering in-flight requests');
      const force = setTimeout(() => {
        logger.error('shutdown took longer than 10 s: exiting');
        exit(log, 1);
      }, 10_000);
      force.unref();
      app.close().then(
        () => {
          logger.info('stopped');
          exit(log, 0);
        },
        (e: unknown) => {
          logger.error('shutdown failed', { error: errorFields(e) });
          exit(log, 1);
        },
      );
    }, config.LEASEHOLD_DRAIN_MS);
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

const instance = randomId('i_', 9);
/** The log once configured (before that, the defaults). */
let current: ServerLog | undefined;
const fallbackLog = () => (current ??= createLog({ format: defaultLogFormat(), level: 'info', instance }));

process.on('uncaughtException', (e) => {
  fallbackLog().fatal('uncaught exception', { error: errorFields(e) });
  exit(fallbackLog(), 1);
});

main(instance).catch((e: unknown) => {
  fallbackLog().fatal(`failed to start: ${e instanceof Error ? e.message : String(e)}`, { error: errorFields(e) });
  exit(fallbackLog(), 1);
});
