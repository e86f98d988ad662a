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

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`leasehold: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
  const fallback = await nextHandler(config);
  const app = await startAppServer({
    dataDir: config.LEASEHOLD_DATA_DIR,
    databaseUrl: config.LEASEHOLD_DATABASE_URL,
    poolSize: config.LEASEHOLD_DATABASE_POOL_SIZE,
    host: config.HOST,
    port: config.PORT,
    synchronous: config.LEASEHOLD_SYNC,
    corsOrigins: config.corsOrigins,
    publicOrigin: config.LEASEHOLD_PUBLIC_ORIGIN,
    version: VERSION,
    http: {
      maxConnections: config.LEASEHOLD_MAX_CONNECTIONS,
      headersTimeoutMs: config.LEASEHOLD_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: config.LEASEHOLD_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: config.LEASEHOLD_KEEPALIVE_TIMEOUT_MS,
    },
    metrics: { enabled: config.LEASEHOLD_METRICS === 'on', public: config.LEASEHOLD_METRICS_PUBLIC },
    engine: {
      limits: { idempotencyTtlMs: config.LEASEHOLD_IDEMPOTENCY_TTL_S * 1000 },
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
        log: (line) => console.warn(`leasehold: ${line}`),
      },
    },
    fallback,
  });
  if (app.bootstrapToken) {
    const file = join(config.LEASEHOLD_DATA_DIR, 'admin-token');
    writeFileSync(file, `${app.bootstrapToken}\n`, { mode: 0o600 });
    console.log(`leasehold: bootstrap admin token (shown once, also in ${file}):\n\n  ${app.bootstrapToken}\n`);
  } else if (app.bootstrapCreated) {
    console.log('leasehold: bootstrap admin token created from LEASEHOLD_BOOTSTRAP_TOKEN (not shown)');
  }
  const where = config.LEASEHOLD_DATABASE_URL ? `postgres, instance ${app.engine.cluster?.instanceId}` : `sqlite in ${config.LEASEHOLD_DATA_DIR}`;
  const metrics = config.LEASEHOLD_METRICS === 'on' ? (config.LEASEHOLD_METRICS_PUBLIC ? 'on (public)' : 'on') : 'off';
  console.log(`leasehold: listening on ${app.url} (store: ${where}${fallback ? ', console on' : ', API only'}, metrics ${metrics})`);

  const shutdown = (signal: string) => {
    console.log(`leasehold: ${signal}, shutting down`);
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error('leasehold: shutdown failed', e);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e: unknown) => {
  console.error(`leasehold: failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
