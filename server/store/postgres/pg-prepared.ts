/**
 * The batch's rows as parameters of prepared statements (docs/design.md,
 * "PostgreSQL: row locks, one batch per family").
 *
 * A batch's flush goes in one simple-protocol query with its COMMIT (one
 * round trip), so it cannot bind parameters the extended protocol's way.
 * Written as multi-row statements of literals, about a third of the
 * database's CPU per step went to lexing, analysing and planning those
 * literals, every batch anew. Instead each connection prepares, once, one
 * statement per kind of write (a table's upserts, its deletes, the audit
 * rows, the change log, the notifications, the first round trip's reads),
 * each taking its rows as one `jsonb` array of arrays, and a batch sends
 * `EXECUTE name('[…]')`: one literal per statement, a plan made once.
 */

import type { PoolClient } from 'pg';
import { AUDIT_COLS, CHANGE_COLS, CHECKPOINTS, IDEMPOTENCY, LEASES, SESSIONS, type TableSpec } from '../unit-of-work';
import { CHANNEL, quoteLiteral } from './pg-connection';
import { LEASE_COLS, SESSION_COLS } from './pg-tx';

/** The columns that are not `text` (server/store/postgres/schema.ts), by name: one type per name in every table. */
const NOT_TEXT: Readonly<Record<string, string>> = {
  ttl_ms: 'bigint',
  created_at: 'bigint',
  expires_at: 'bigint',
  fencing_token: 'bigint',
  acquired_at: 'bigint',
  renewed_at: 'bigint',
  max_expires_at: 'bigint',
  renewal_count: 'bigint',
  revision: 'bigint',
  written_at: 'bigint',
  version: 'bigint',
  status: 'integer',
  time: 'bigint',
  latency_ms: 'bigint',
  rare: 'boolean',
  lease_count: 'integer',
};

/** Element `i` of the row `r` (a jsonb array) as column `c`'s type. */
const column = (c: string, i: number) => (NOT_TEXT[c] ? `(r->>${i})::${NOT_TEXT[c]}` : `r->>${i}`);

const selectList = (cols: readonly string[]) => cols.map(column).join(', ');

/**
 * A lease's `sweep_at` (schema.ts, the sweep horizon) is no field of the
 * row: an insert sets it to `expires_at`, an update only lowers it to
 * that, so a renewal leaves it (and every index) alone.
 */
const upsert = (t: TableSpec<unknown>) => {
  const set = t.cols.filter((c) => !t.keyCols.includes(c)).map((c) => `${c} = EXCLUDED.${c}`);
  let cols = t.cols.join(', ');
  let values = selectList(t.cols);
  if (t.name === 'leases') {
    cols += ', sweep_at';
    values += `, ${column('expires_at', t.cols.indexOf('expires_at'))}`;
    set.push('sweep_at = LEAST(leases.sweep_at, EXCLUDED.sweep_at)');
  }
  return `INSERT INTO ${t.name} (${cols}) SELECT ${values} FROM jsonb_array_elements($1) r ON CONFLICT (${t.keyCols.join(', ')}) DO UPDATE SET ${set.join(', ')}`;
};

/**
 * One index probe per key, whatever the table's size when the plan was made:
 * a plan cached while a table was small must never scan or hash the whole
 * table once it is large. A join of the keys with the table may be planned
 * that way (and a subquery without a LIMIT is flattened into such a join);
 * a lateral subquery with a LIMIT is a parameterized index probe per key.
 * `key(c, i)` is the SQL of key column `c` of the element `r`.
 */
const probe = (elements: string, t: string, keyCols: readonly string[], what: string, key: (c: string, i: number) => string, lock = '') =>
  `FROM ${elements} r CROSS JOIN LATERAL (SELECT ${what} FROM ${t} WHERE ${keyCols.map((c, i) => `${c} = ${key(c, i)}`).join(' AND ')} LIMIT 1${lock}) x`;

/**
 * A batch's deletes: `lh_lock_<table>` and then `lh_del_<table>`, the same rows.
 * The delete finds each row by key and removes it by its TID. A statement
 * that holds no family lock (the sweep's re-arm, expiry.ts `REARM_SQL`) may
 * update a row while the delete waits for it; PostgreSQL then rechecks the
 * delete's condition against the row's new version, whose TID differs, and
 * skips the row without a word: an answered release would leave its lease.
 * So the rows are locked first, by key (`FOR UPDATE` waits for a writer and
 * locks the newest version); the delete, a statement of its own with a
 * newer snapshot, finds that version, which nothing else can move now.
 */
const lockForDelete = (t: TableSpec<unknown>) =>
  `SELECT count(*) ${probe('jsonb_array_elements($1)', t.name, t.keyCols, '1', column, ' FOR UPDATE')}`;

const remove = (t: TableSpec<unknown>) =>
  `DELETE FROM ${t.name} WHERE ctid = ANY (ARRAY(SELECT x.ctid ${probe('jsonb_array_elements($1)', t.name, t.keyCols, 'ctid', column)}))`;

/** Rows in array order (the audit's identity and the notifications follow it). */
const ordered = `jsonb_array_elements($1) WITH ORDINALITY AS e(r, i)`;

const TABLES = [LEASES, SESSIONS, IDEMPOTENCY, CHECKPOINTS] as unknown as ReadonlyArray<TableSpec<unknown>>;

/** Every prepared statement, by name. */
const STATEMENTS: ReadonlyArray<readonly [string, string, string]> = [
  ...TABLES.flatMap((t) => [
    [`lh_put_${t.name}`, 'jsonb', upsert(t)] as const,
    [`lh_lock_${t.name}`, 'jsonb', lockForDelete(t)] as const,
    [`lh_del_${t.name}`, 'jsonb', remove(t)] as const,
  ]),
  // The per-family counts first, families in order (their row locks order two instances' audit writes).
  [
    'lh_audit_counts',
    'jsonb',
    `INSERT INTO audit_counts (family, rows) SELECT r->>0, (r->>1)::bigint FROM jsonb_array_elements($1) r ON CONFLICT (family) DO UPDATE SET rows = audit_counts.rows + EXCLUDED.rows`,
  ],
  ['lh_audit', 'jsonb', `INSERT INTO audit (${AUDIT_COLS.join(', ')}) SELECT ${selectList(AUDIT_COLS)} FROM ${ordered} ORDER BY i`],
  ['lh_changes', 'jsonb', `INSERT INTO change_log (${CHANGE_COLS.join(', ')}) SELECT ${selectList(CHANGE_COLS)} FROM ${ordered} ORDER BY i`],
  // One result for all of a batch's notifications, sent in order.
  ['lh_notify', 'jsonb', `SELECT count(*) FROM (SELECT pg_notify('${CHANNEL}', m) FROM jsonb_array_elements_text($1) WITH ORDINALITY AS n(m, i) ORDER BY i) x`],
  // The first round trip's reads of the steps' hinted rows ($1: the family; keys are [op, route, request_id], id hashes, routes).
  [
    'lh_pf_idempotency',
    'text, jsonb',
    `SELECT x.* ${probe('jsonb_array_elements($2)', 'idempotency', ['family', 'op', 'route', 'request_id'], `family, op, route, request_id AS "requestId", digest, status, answer, expires_at AS "expiresAt"`, (c, i) => (i === 0 ? '$1' : `r->>${i - 1}`))}`,
  ],
  ['lh_pf_sessions', 'jsonb', `SELECT x.* ${probe('jsonb_array_elements_text($1)', 'sessions', ['id_hash'], SESSION_COLS, () => 'r')}`],
  ['lh_pf_leases', 'text, jsonb', `SELECT x.* ${probe('jsonb_array_elements_text($2)', 'leases', ['family', 'route'], LEASE_COLS, (_c, i) => (i === 0 ? '$1' : 'r'))}`],
  ['lh_pf_delays', 'text, jsonb', `SELECT x.* ${probe('jsonb_array_elements_text($2)', 'lock_delays', ['family', 'route'], 'route, until', (_c, i) => (i === 0 ? '$1' : 'r'))}`],
];

const PREPARE_ALL = STATEMENTS.map(([name, types, sql]) => `PREPARE ${name}(${types}) AS ${sql}; `).join('');

/** Connections known to hold the statements. */
const prepared = new WeakSet<PoolClient>();

/**
 * The statements to send first on this connection if it may not hold them
 * yet (`preparedOn` marks it once they ran), else ''. A connection whose
 * PREPAREs may or may not have run (the query carrying them failed) must be
 * discarded, never reused: a second PREPARE of a name fails.
 */
export function prepareSql(client: PoolClient): string {
  return prepared.has(client) ? '' : PREPARE_ALL;
}

/** How many results `prepareSql`'s text yields. */
export const PREPARE_RESULTS = STATEMENTS.length;

export function preparedOn(client: PoolClient): void {
  prepared.add(client);
}

/** A dollar-quote tag no value contains in practice; a text that does contain it is quoted the ordinary way. */
const TAG = '$lh_rows$';

/**
 * `rows` as one SQL literal of a jsonb array. Strings with unpaired
 * surrogates become well-formed first (jsonb refuses their escapes; sent
 * as text they would have become U+FFFD all the same).
 */
function jsonRows(rows: readonly unknown[]): string {
  let text = JSON.stringify(rows);
  // JSON.stringify escapes only unpaired surrogates, as \ud800–\udfff (lower case); a backslash of
  // the data followed by "ud" matches too, and only costs the second pass.
  if (text.includes('\\ud')) text = JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'string' ? (v as string & { toWellFormed(): string }).toWellFormed() : v));
  return text.includes(TAG) ? quoteLiteral(text) : `${TAG}${text}${TAG}`;
}

/** `EXECUTE name(args…)` with its rows, or '' when there are none. */
export function execute(name: string, rows: readonly unknown[], ...before: string[]): string {
  if (rows.length === 0) return '';
  return `EXECUTE ${name}(${[...before, jsonRows(rows)].join(', ')}); `;
}
