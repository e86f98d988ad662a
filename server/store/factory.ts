/**
 * Opening a store from where it lives, keyed by the URL's scheme
 * (docs/operations.md): `postgres://` or `postgresql://` is PostgreSQL,
 * `sqlite:<dir>` or a plain path is SQLite in that data directory. Every
 * place that opens a store (the server, the test fixtures, the benchmarks)
 * comes through here, so a third SQL engine is its files under server/store/
 * plus one row in ENGINES (and its name in lib/wire's STORE_KINDS).
 */

import type { StoreKind } from '@/lib/wire';
import type { Clock } from './millis';
import { PgStore, type PgStoreOptions } from './postgres/pg-store';
import { SqliteStore, type SqliteStoreOptions } from './sqlite/sqlite-store';
import type { Store } from './types';

export interface OpenStoreOptions {
  /** Backend time; injected so tests move time instead of sleeping (PostgreSQL: tests only). */
  clock?: Clock | undefined;
  /** Options only SQLite reads. */
  sqlite?: Omit<SqliteStoreOptions, 'dataDir' | 'clock'> | undefined;
  /** Options only PostgreSQL reads. */
  postgres?: Omit<PgStoreOptions, 'url' | 'clock'> | undefined;
}

interface StoreEngine {
  readonly kind: StoreKind;
  /** How LEASEHOLD_DATABASE_URL names a store of this engine (`postgres://`); none for the embedded one, which lives in LEASEHOLD_DATA_DIR. */
  readonly urlForm?: string;
  /** True when `target` (a URL or a path) names a store of this engine. */
  accepts(target: string): boolean;
  open(target: string, opts: OpenStoreOptions): Promise<Store>;
}

/** A URL's scheme followed by `//` (`postgres://…`); a path, even `C:\…`, has none. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
const SQLITE_PREFIX = 'sqlite:';

const ENGINES: readonly StoreEngine[] = [
  {
    kind: 'sqlite',
    accepts: (t) => t.startsWith(SQLITE_PREFIX) || !SCHEME.test(t),
    open: async (t, o) => new SqliteStore({ ...o.sqlite, dataDir: sqliteDir(t), clock: o.clock }),
  },
  {
    kind: 'postgres',
    urlForm: 'postgres://',
    accepts: (t) => /^postgres(ql)?:\/\//.test(t),
    open: (t, o) => PgStore.open({ ...o.postgres, url: t, clock: o.clock }),
  },
];

/** `sqlite:<dir>` (or `sqlite://<dir>`) → `<dir>`; a plain path is the directory itself. */
function sqliteDir(target: string): string {
  if (!target.startsWith(SQLITE_PREFIX)) return target;
  const rest = target.slice(SQLITE_PREFIX.length);
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

function engineOf(target: string): StoreEngine {
  const engine = ENGINES.find((e) => e.accepts(target));
  // Name only the scheme: a database URL may carry a password.
  if (!engine) throw new Error(`no store for ${SCHEME.exec(target)?.[1] ?? 'this'}:// URLs (known: ${ENGINES.map((e) => e.kind).join(', ')})`);
  return engine;
}

/** The forms a database URL (LEASEHOLD_DATABASE_URL) may take, one per engine that has one. */
export const DATABASE_URL_FORMS: readonly string[] = ENGINES.flatMap((e) => (e.urlForm === undefined ? [] : [e.urlForm]));

/** True when `url` names a store of an engine reached by URL (not SQLite's data directory). */
export function isDatabaseUrl(url: string): boolean {
  return ENGINES.some((e) => e.urlForm !== undefined && e.accepts(url));
}

/** Open (creating or migrating as needed) the store `target` names. */
export async function openStore(target: string, opts: OpenStoreOptions = {}): Promise<Store> {
  return engineOf(target).open(target, opts);
}
