/**
 * The names every instance shares (channel, advisory locks), the settings
 * every connection of the PostgreSQL store uses, and how a
 * connection is cut at once when it stops answering.
 */

import pg from 'pg';

/** The channel every instance listens on. */
export const CHANNEL = 'leasehold';
/** Advisory lock keys (one namespace, arbitrary constants). */
export const LOCK_MIGRATE = 0x1ea5e01;
export const LOCK_TOKENS = 0x1ea5e02;
/** Each instance's listening connection is named this plus its instance id (so liveness is a pg_stat_activity lookup). */
export const BUS_APP_PREFIX = 'leasehold-bus:';

const NEEDS_ESCAPE = /['\\]/;

/**
 * A string as an SQL literal, the same text as node-postgres's
 * `escapeLiteral` (quotes doubled; with a backslash, doubled too and an
 * ` E` prefix), without its per-character loop for the usual string with
 * neither: a batch's flush quotes every row's values, answers, change-log
 * data and notification payloads (docs/design.md, "PostgreSQL: row locks,
 * one batch per family").
 */
export function quoteLiteral(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return `'${s}'`;
  const doubled = s.replace(/'/g, "''");
  return s.includes('\\') ? ` E'${doubled.replace(/\\/g, '\\\\')}'` : `'${doubled}'`;
}

/** int8 comes back as a number: every stored integer is an epoch ms, a token, a revision or a count, all below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

type Destroyable = pg.ClientBase & { connection?: { stream?: { destroy(): void } } };

export function destroy(client: pg.ClientBase): void {
  try {
    (client as Destroyable).connection?.stream?.destroy();
  } catch {
    // Already gone.
  }
}

const guarded = new WeakSet<pg.ClientBase>();

/**
 * A connection that dies while checked out emits 'error' (its pending query
 * fails with it as well): listen once, so the process never crashes on it.
 */
export function guard(client: pg.ClientBase): void {
  if (guarded.has(client)) return;
  guarded.add(client);
  client.on('error', () => undefined);
}

/** Connection settings every connection of the store uses. */
export function connectionConfig(url: string, connectTimeoutMs: number, applicationName: string): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 1_000,
    application_name: applicationName,
    types: TYPES,
    // Server-side bounds, so a connection that vanishes never holds locks long.
    statement_timeout: 10_000,
    lock_timeout: 10_000,
    idle_in_transaction_session_timeout: 5_000,
  };
}

