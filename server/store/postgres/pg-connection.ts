/**
 * The settings every connection of the PostgreSQL store uses, and how a
 * connection is cut at once when it stops answering.
 */

import pg from 'pg';

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

