/**
 * The environment, read and validated once at start (docs/semantics.md §14). An
 * invalid value stops the server with a message naming the variable.
 */

import { z } from 'zod';
import { DATABASE_URL_FORMS, isDatabaseUrl } from './store/factory';

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const bool = z.enum(['true', 'false']).transform((v) => v === 'true');

const Env = z.object({
  PORT: int(0, 65_535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  NODE_ENV: z.string().optional(),
  LEASEHOLD_DATA_DIR: z.string().min(1).default('.data'),
  LEASEHOLD_DATABASE_URL: z.string().refine(isDatabaseUrl, `must be a ${DATABASE_URL_FORMS.join(' or ')} URL`).optional(),
  /** PostgreSQL connections per instance for steps (one more listens for other instances' changes). */
  LEASEHOLD_DATABASE_POOL_SIZE: int(1, 1_000).default(10),
  LEASEHOLD_PUBLIC_ORIGIN: z.url().transform((u) => new URL(u).origin).optional(),
  LEASEHOLD_CORS_ORIGINS: z.string().optional(),
  LEASEHOLD_METRICS: z.enum(['on', 'off']).default('on'),
  LEASEHOLD_METRICS_PUBLIC: bool.default(false),
  LEASEHOLD_AUDIT_RETENTION_DAYS: int(1, 36_500).default(30),
  /** The audit trail's global ceiling (all families together). */
  LEASEHOLD_AUDIT_MAX_ROWS: int(1_000, 1_000_000_000).default(10_000_000),
  /** Each family's audit quota: its own events beyond this are pruned, oldest first; never another family's. */
  LEASEHOLD_AUDIT_MAX_ROWS_PER_FAMILY: int(100, 1_000_000_000).default(1_000_000),
  LEASEHOLD_IDEMPOTENCY_TTL_S: int(3_600, 31_536_000).default(3_600),
  /** Live streams per instance, all families together. */
  LEASEHOLD_MAX_STREAMS: int(1, 1_000_000).default(10_000),
  /** Live streams per instance of one family (its quota). */
  LEASEHOLD_MAX_STREAMS_PER_FAMILY: int(1, 1_000_000).default(2_000),
  /** Live streams per instance of one token, the embed tokens it minted included. */
  LEASEHOLD_MAX_STREAMS_PER_TOKEN: int(1, 1_000_000).default(64),
  /** Live embed tokens one token may have minted at once. */
  LEASEHOLD_MAX_EMBED_TOKENS_PER_CREATOR: int(1, 1_000_000).default(1_000),
  /** How often a stream gets a keepalive comment and its token is re-checked (ms). */
  LEASEHOLD_FEED_HEARTBEAT_MS: int(1_000, 300_000).default(15_000),
  /** Each family's change log keeps at least its newest changes this many (a resuming stream replays from it)... */
  LEASEHOLD_CHANGE_LOG_CHANGES: int(1, 1_000_000_000).default(100_000),
  /** ...or those of the last this many seconds, whichever holds more (0: by count alone). */
  LEASEHOLD_CHANGE_LOG_SECONDS: int(0, 31_536_000).default(600),
  LEASEHOLD_BOOTSTRAP_TOKEN: z.string().regex(/^[!-~]{16,512}$/, 'must be 16 to 512 visible ASCII characters').optional(),
  LEASEHOLD_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /** Leases one atomic step may end: a larger session end or sweep runs as several steps (CONTRACT §19, docs/design.md "Bounded steps"). */
  LEASEHOLD_STEP_MAX_LEASES: int(1, 1_000_000).default(1_000),
  /** The longest one acquire waits in a queue (ms): a longer wait_ms ends here with a queue ticket (docs/design.md "Queue tickets"). */
  LEASEHOLD_MAX_WAIT_MS: int(1, 30_000).default(30_000),
  /** New acquisitions are refused (`rate_limited`) while a family's oldest unanswered step was submitted this long ago (ms; 0: never): docs/design.md "Admission". */
  LEASEHOLD_ADMIT_QUEUE_MS: int(0, 60_000).default(1_000),
  /** `full` fsyncs every commit: survives power loss, costs throughput (docs/benchmarks.md). */
  LEASEHOLD_SYNC: z.enum(['normal', 'full']).default('normal'),
  /** SQLite: batches made durable by the batch journal commit to the database within this many ms (docs/operations.md "Durability"). */
  LEASEHOLD_SQLITE_COMMIT_MS: int(0, 3_600_000).default(200),
  /** At most this many open client connections (SSE streams included); more are closed at once (docs/operations.md). */
  LEASEHOLD_MAX_CONNECTIONS: int(1, 1_000_000).default(10_000),
  /** A client must send its whole request head within this many ms (slow-header clients are cut off with 408). */
  LEASEHOLD_HEADERS_TIMEOUT_MS: int(1_000, 600_000).default(10_000),
  /** A client must send its whole request (head and body) within this many ms; never applies to a response such as an SSE stream. */
  LEASEHOLD_REQUEST_TIMEOUT_MS: int(1_000, 600_000).default(30_000),
  /** An idle keep-alive connection is closed after this many ms. */
  LEASEHOLD_KEEPALIVE_TIMEOUT_MS: int(1_000, 600_000).default(65_000),
  /** A connection whose unsent answer bytes make no progress for this many ms is closed (a client that never reads); a stream its client reads is never cut. */
  LEASEHOLD_SEND_TIMEOUT_MS: int(1_000, 600_000).default(30_000),
  /** `off` serves only /api/* (no console): for benchmarks and headless deployments. */
  LEASEHOLD_CONSOLE: z.enum(['on', 'off']).default('on'),
  /** `json` lines or `pretty` (readable) lines; unset: pretty on a terminal, JSON otherwise. */
  LEASEHOLD_LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  LEASEHOLD_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** `on` logs every API request; errors (5xx) and slow requests are logged either way. */
  LEASEHOLD_ACCESS_LOG: z.enum(['on', 'off']).default('off'),
  /** A request answered slower than this is logged as slow (waiting acquires excepted). */
  LEASEHOLD_SLOW_REQUEST_MS: int(1, 3_600_000).default(1_000),
  /** After SIGTERM, how long readiness answers 503 while everything is still served (ms). */
  LEASEHOLD_DRAIN_MS: int(0, 600_000).default(5_000),
});

export type Config = z.infer<typeof Env> & { corsOrigins: string[] };

export class ConfigError extends Error {}

/** Read and validate the environment; throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const relevant: Record<string, string> = {};
  for (const key of Object.keys(Env.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') relevant[key] = v;
  }
  const r = Env.safeParse(relevant);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new ConfigError(`invalid ${String(issue.path[0])}: ${issue.message}`);
  }
  if (r.data.LEASEHOLD_HEADERS_TIMEOUT_MS > r.data.LEASEHOLD_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid LEASEHOLD_HEADERS_TIMEOUT_MS: must not exceed LEASEHOLD_REQUEST_TIMEOUT_MS');
  }
  const corsOrigins = (r.data.LEASEHOLD_CORS_ORIGINS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return { ...r.data, corsOrigins };
}
