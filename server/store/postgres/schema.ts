import { PG_POLICY_MIGRATION } from './pg-policies';
import { PG_CHANGE_LOG_MIGRATION } from './pg-change-log';

/**
 * PostgreSQL schema, versioned in `leasehold_schema`. Each entry migrates
 * from the previous version; they run at start, in one transaction, under
 * an advisory lock, so instances starting together migrate once.
 *
 * Fidelity with the embedded store: every text column compares in byte
 * order (`COLLATE "C"`, like SQLite's BINARY), JSON values are stored as
 * text (so they round-trip exactly), and times, tokens and revisions are
 * 64-bit integers (epoch milliseconds), parsed back to numbers.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
  CREATE TABLE families (family text COLLATE "C" PRIMARY KEY, revision bigint NOT NULL);
  CREATE TABLE sessions (
    id_hash text COLLATE "C" PRIMARY KEY,
    family text COLLATE "C" NOT NULL,
    incarnation text COLLATE "C" NOT NULL UNIQUE,
    owner_id text COLLATE "C" NOT NULL,
    ttl_ms bigint NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX sessions_expiry ON sessions (expires_at);
  CREATE INDEX sessions_listing ON sessions (family, created_at, incarnation);
  CREATE TABLE leases (
    family text COLLATE "C" NOT NULL,
    route text COLLATE "C" NOT NULL,
    realm text COLLATE "C" NOT NULL,
    area text COLLATE "C" NOT NULL,
    resource text COLLATE "C" NOT NULL,
    lease_id text COLLATE "C" NOT NULL,
    fencing_token bigint NOT NULL,
    session_hash text COLLATE "C" NOT NULL,
    owner_id text COLLATE "C" NOT NULL,
    incarnation text COLLATE "C" NOT NULL,
    acquired_at bigint NOT NULL,
    renewed_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    max_expires_at bigint NOT NULL,
    ttl_ms bigint NOT NULL,
    renewal_count bigint NOT NULL,
    revision bigint NOT NULL,
    metadata text,
    PRIMARY KEY (family, route)
  );
  CREATE INDEX leases_expiry ON leases (expires_at);
  CREATE INDEX leases_session ON leases (session_hash);
  CREATE INDEX leases_by_resource ON leases (family, resource, route);
  CREATE INDEX leases_by_area ON leases (family, area, route);
  CREATE TABLE checkpoints (
    family text COLLATE "C" NOT NULL,
    route text COLLATE "C" NOT NULL,
    value text NOT NULL,
    fencing_token bigint NOT NULL,
    lease_id text COLLATE "C" NOT NULL,
    written_at bigint NOT NULL,
    version bigint NOT NULL,
    PRIMARY KEY (family, route)
  );
  CREATE TABLE idempotency (
    family text COLLATE "C" NOT NULL,
    op text COLLATE "C" NOT NULL,
    route text COLLATE "C" NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    digest text NOT NULL,
    status integer NOT NULL,
    answer text NOT NULL,
    expires_at bigint NOT NULL,
    PRIMARY KEY (family, op, route, request_id)
  );
  CREATE INDEX idempotency_expiry ON idempotency (expires_at);
  CREATE TABLE tokens (
    id text COLLATE "C" PRIMARY KEY,
    secret_hash text COLLATE "C" NOT NULL UNIQUE,
    name text NOT NULL,
    family text COLLATE "C" NOT NULL,
    grants text NOT NULL,
    root boolean NOT NULL,
    kind text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint,
    revoked_at bigint,
    created_by text
  );
  CREATE INDEX tokens_family ON tokens (family, created_at);
  CREATE INDEX tokens_embed_expiry ON tokens (expires_at) WHERE kind = 'embed';
  CREATE TABLE logins (
    id_hash text COLLATE "C" PRIMARY KEY,
    token_id text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE INDEX logins_expiry ON logins (expires_at);
  -- The audit trail: seq from a sequence (never reused; a rolled-back
  -- insert leaves a hole, which pruning and paging do not mind).
  CREATE TABLE audit (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time bigint NOT NULL,
    family text COLLATE "C" NOT NULL,
    event_type text COLLATE "C" NOT NULL,
    route text COLLATE "C",
    token_id text,
    subject_token_id text,
    owner_id text,
    incarnation text,
    result text NOT NULL,
    fencing_token bigint,
    reason text,
    correlation_id text NOT NULL,
    latency_ms bigint NOT NULL,
    rare boolean
  );
  CREATE INDEX audit_by_time ON audit (family, time, seq);
  CREATE INDEX audit_by_route ON audit (family, route, time, seq) WHERE route IS NOT NULL;
  CREATE INDEX audit_rare ON audit (family, event_type, time, seq) WHERE rare;
  `,
  `
  -- FIFO queues shared by every instance: seq orders a route's queue (rows
  -- are inserted by steps holding the family's lock, so in that order).
  CREATE TABLE waiters (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    family text COLLATE "C" NOT NULL,
    route text COLLATE "C" NOT NULL,
    request_id text COLLATE "C" NOT NULL,
    instance text COLLATE "C" NOT NULL,
    session_hash text COLLATE "C" NOT NULL,
    digest text NOT NULL,
    ttl_ms bigint NOT NULL,
    max_lifetime_ms bigint NOT NULL,
    metadata text,
    deadline bigint NOT NULL,
    UNIQUE (family, route, request_id)
  );
  CREATE INDEX waiters_queue ON waiters (family, route, seq);
  CREATE INDEX waiters_session ON waiters (session_hash);
  CREATE INDEX waiters_instance ON waiters (instance);
  `,
  `
  -- Audit rows per family, kept with every insert and delete, so the
  -- per-family quota and the global ceiling are checked without a scan.
  CREATE TABLE audit_counts (family text COLLATE "C" PRIMARY KEY, rows bigint NOT NULL);
  INSERT INTO audit_counts (family, rows) SELECT family, count(*) FROM audit GROUP BY family;
  -- Token lineage: what a token minted, for revoking it with its creator.
  CREATE INDEX tokens_created_by ON tokens (created_by) WHERE created_by IS NOT NULL;
  `,
  PG_POLICY_MIGRATION,
  `
  -- A lease's pending release request (docs/release-requests.md), JSON text;
  -- it lives in the lease's row, so it ends with the lease however it ends.
  ALTER TABLE leases ADD COLUMN release_request text;
  `,
  PG_CHANGE_LOG_MIGRATION,
  `
  -- What an audit event recorded besides its reason, JSON text (a policy's
  -- values for policy_set and policy_delete); null for other events.
  ALTER TABLE audit ADD COLUMN details text;
  `,
  `
  -- A closed or expired session whose leases later steps still end
  -- (docs/design.md "Bounded steps"), JSON text; null while it lives.
  ALTER TABLE sessions ADD COLUMN ending text;
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
  ALTER TABLE sessions ADD COLUMN batches text;
  `,
  `
  -- Queue tickets (CONTRACT §20, docs/design.md "Queue tickets"): a place in
  -- a queue has an id, kept by every request that continues it (its
  -- tickets name it); a parked place (its wait ended without a grant) keeps
  -- its seq, with no client waiting, until its deadline.
  ALTER TABLE waiters ADD COLUMN place text COLLATE "C";
  ALTER TABLE waiters ADD COLUMN parked boolean NOT NULL DEFAULT false;
  CREATE INDEX waiters_place ON waiters (family, route, place);
  CREATE INDEX waiters_parked ON waiters (deadline) WHERE parked;
  `,
  `
  -- How many leases each session holds, kept as leases come and go, so a
  -- renew or keepalive answers it without counting the session's rows
  -- (docs/design.md "Batched calls").
  ALTER TABLE sessions ADD COLUMN lease_count integer NOT NULL DEFAULT 0;
  UPDATE sessions SET lease_count = (SELECT count(*) FROM leases WHERE leases.session_hash = sessions.id_hash);
  `,
  `
  -- The sweep horizon (docs/design.md "The sweep horizon"): due
  -- leases are found through sweep_at, a lower bound of expires_at, kept
  -- by every write (a renewal moves it only to lower it) and moved up by
  -- the sweeper's re-arm. A renewal then changes no indexed column, and
  -- with room left on its page (fillfactor) its update is HOT: no new
  -- index entries, no dead tuples for vacuum to find.
  ALTER TABLE leases ADD COLUMN sweep_at bigint;
  UPDATE leases SET sweep_at = expires_at;
  ALTER TABLE leases ALTER COLUMN sweep_at SET NOT NULL;
  CREATE INDEX leases_sweep ON leases (sweep_at);
  DROP INDEX leases_expiry;
  ALTER TABLE leases SET (fillfactor = 70);
  `,
];
