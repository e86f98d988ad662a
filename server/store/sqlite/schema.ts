import { CHANGE_LOG_MIGRATION } from './change-log';
import { POLICY_MIGRATION } from './policies';

/**
 * SQLite schema, versioned by `PRAGMA user_version`. Each entry migrates from
 * the previous version; they run in one transaction at open.
 *
 * Only active leases live in `leases`: a terminal lease is deleted, and what
 * must outlive it (its idempotent answer, its checkpoint, the family's
 * counter that fences successors) lives in its own table.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE families (family TEXT PRIMARY KEY, revision INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    family TEXT NOT NULL,
    incarnation TEXT NOT NULL UNIQUE,
    owner_id TEXT NOT NULL,
    ttl_ms INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX sessions_expiry ON sessions (expires_at);
  CREATE INDEX sessions_listing ON sessions (family, created_at, incarnation);
  CREATE TABLE leases (
    family TEXT NOT NULL,
    route TEXT NOT NULL,
    realm TEXT NOT NULL,
    area TEXT NOT NULL,
    resource TEXT NOT NULL,
    lease_id TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    session_hash TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    renewed_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    max_expires_at INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    renewal_count INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    metadata TEXT,
    PRIMARY KEY (family, route)
  ) WITHOUT ROWID;
  CREATE INDEX leases_expiry ON leases (expires_at);
  CREATE INDEX leases_session ON leases (session_hash);
  CREATE INDEX leases_by_resource ON leases (family, resource, route);
  CREATE INDEX leases_by_area ON leases (family, area, route);
  CREATE TABLE checkpoints (
    family TEXT NOT NULL,
    route TEXT NOT NULL,
    value TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    lease_id TEXT NOT NULL,
    written_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (family, route)
  ) WITHOUT ROWID;
  -- A rowid table: records are appended (their answers are a few hundred
  -- bytes, too large to cluster by key without constant page splits); the
  -- key lookup goes through a small unique index.
  CREATE TABLE idempotency (
    id INTEGER PRIMARY KEY,
    family TEXT NOT NULL,
    op TEXT NOT NULL,
    route TEXT NOT NULL,
    request_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    status INTEGER NOT NULL,
    answer TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX idempotency_key ON idempotency (family, op, route, request_id);
  CREATE INDEX idempotency_expiry ON idempotency (expires_at);
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    family TEXT NOT NULL,
    grants TEXT NOT NULL,
    root INTEGER NOT NULL,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER,
    created_by TEXT
  ) WITHOUT ROWID;
  CREATE INDEX tokens_family ON tokens (family, created_at);
  `,
  `
  CREATE TABLE logins (
    id_hash TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX logins_expiry ON logins (expires_at);
  `,
  `
  -- The audit trail. seq is the rowid; pruning deletes from the low end only
  -- and always keeps the newest row, so seqs are never reused and the kept
  -- rows are one contiguous range: max(seq) - min(seq) + 1 counts them
  -- without a scan. Three indexes, chosen for write cost: the family's time
  -- order (append-only), one route's history (rows with a route), and the
  -- rare types (operator actions, tokens, denials; a partial index, so the
  -- high-volume lease events never touch it).
  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY,
    time INTEGER NOT NULL,
    family TEXT NOT NULL,
    event_type TEXT NOT NULL,
    route TEXT,
    token_id TEXT,
    subject_token_id TEXT,
    owner_id TEXT,
    incarnation TEXT,
    result TEXT NOT NULL,
    fencing_token INTEGER,
    reason TEXT,
    correlation_id TEXT NOT NULL,
    latency_ms INTEGER NOT NULL,
    rare INTEGER
  );
  CREATE INDEX audit_by_time ON audit (family, time, seq);
  CREATE INDEX audit_by_route ON audit (family, route, time, seq) WHERE route IS NOT NULL;
  CREATE INDEX audit_rare ON audit (family, event_type, time, seq) WHERE rare = 1;
  -- Embed tokens are minted per page load; expired ones are deleted by the sweep.
  CREATE INDEX tokens_embed_expiry ON tokens (expires_at) WHERE kind = 'embed';
  `,
  `
  -- Audit rows per family, kept with every insert and delete, so the
  -- per-family quota and the global ceiling are checked without a scan.
  CREATE TABLE audit_counts (family TEXT PRIMARY KEY, rows INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO audit_counts (family, rows) SELECT family, count(*) FROM audit GROUP BY family;
  -- Token lineage: what a token minted, for revoking it with its creator.
  CREATE INDEX tokens_created_by ON tokens (created_by) WHERE created_by IS NOT NULL;
  `,
  POLICY_MIGRATION,
  `
  -- A lease's pending release request (docs/release-requests.md), JSON text;
  -- it lives in the lease's row, so it ends with the lease however it ends.
  ALTER TABLE leases ADD COLUMN release_request TEXT;
  `,
  CHANGE_LOG_MIGRATION,
  `
  -- Idempotency records appended without an index, moved into the keyed
  -- table in sorted runs (recent-idempotency.ts): the keyed index's pages are
  -- written once per run instead of once per batch.
  CREATE TABLE idempotency_recent (
    id INTEGER PRIMARY KEY,
    family TEXT NOT NULL,
    op TEXT NOT NULL,
    route TEXT NOT NULL,
    request_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    status INTEGER NOT NULL,
    answer TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  );
  `,
  `
  -- What an audit event recorded besides its reason, JSON text (a policy's
  -- values for policy_set and policy_delete); null for other events.
  ALTER TABLE audit ADD COLUMN details TEXT;
  `,
  `
  -- A closed or expired session whose leases later steps still end
  -- (docs/design.md "Bounded steps"), JSON text; null while it lives.
  ALTER TABLE sessions ADD COLUMN ending TEXT;
  -- Those steps take a session's leases a page at a time, in route order.
  DROP INDEX leases_session;
  CREATE INDEX leases_session ON leases (session_hash, route);
  `,
  `
  -- A session's pending release requests, which every renew and keepalive
  -- answer lists (docs/release-requests.md), without reading its other leases.
  CREATE INDEX leases_release_requests ON leases (session_hash, route) WHERE release_request IS NOT NULL;
  `,
  `
  -- A session's last batched calls (CONTRACT §20: the last batched renewal
  -- and the last all-or-nothing acquire, when and how many), JSON text; null
  -- before the first. The sessions list shows them.
  ALTER TABLE sessions ADD COLUMN batches TEXT;
  `,
  `
  -- How many leases each session holds, kept as leases come and go, so a
  -- renew or keepalive answers it without counting the session's rows
  -- (docs/design.md "Batched calls").
  ALTER TABLE sessions ADD COLUMN lease_count INTEGER NOT NULL DEFAULT 0;
  UPDATE sessions SET lease_count = (SELECT count(*) FROM leases WHERE leases.session_hash = sessions.id_hash);
  `,
  `
  -- The sweep horizon (docs/design.md "The sweep horizon"): due leases are
  -- found through sweep_at, a lower bound of expires_at that a renewal
  -- leaves alone, so a renewal no longer moves an index entry. 0 (a row
  -- written without it, by a journal line of an older build) is a valid
  -- lower bound: the sweep finds that row and moves its horizon on.
  ALTER TABLE leases ADD COLUMN sweep_at INTEGER NOT NULL DEFAULT 0;
  UPDATE leases SET sweep_at = expires_at;
  CREATE INDEX leases_sweep ON leases (sweep_at);
  DROP INDEX leases_expiry;
  `,
];
