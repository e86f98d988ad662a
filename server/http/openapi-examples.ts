/**
 * Examples of the main calls for the OpenAPI document. `redocly lint`
 * (no-invalid-media-type-examples) checks each against its schema, so an
 * example cannot drift from the answer it shows.
 */

const route = 'lease://acme/renderers/doc-1';
const cid = 'c_8Jq2mZ0d1rY';
const heldLease = {
  route,
  owner_id: 'worker-7',
  holder_incarnation: 'hi_3kF9aQ2',
  fencing_token: 42,
  acquired_at: '2026-11-29T12:00:00.000Z',
  renewed_at: '2026-11-29T12:00:00.000Z',
  expires_at: '2026-11-29T12:00:30.000Z',
  max_expires_at: '2026-11-29T13:00:00.000Z',
  ttl_ms: 30000,
  remaining_ms: 30000,
  renewal_count: 0,
  revision: 1907,
  metadata: { shard: 3 },
  waiters: 0,
  release_request: null,
  lease_id: 'ls_Qm2v8Xk1',
};
const { lease_id: _leaseId, ...leaseView } = heldLease;
const proof = { session_id: 'ss_x8Kc0aYtVb1rQ2', lease_id: heldLease.lease_id, fencing_token: 42 };

interface Example {
  request?: unknown;
  response: unknown;
}

/** By operation: one request and its success answer. */
export const EXAMPLES: Record<string, Example> = {
  session_open: {
    request: { owner_id: 'worker-7', ttl_ms: 15000 },
    response: {
      status: 'success',
      code: 'session_opened',
      correlation_id: cid,
      session: {
        session_id: proof.session_id,
        holder_incarnation: 'hi_3kF9aQ2',
        owner_id: 'worker-7',
        ttl_ms: 15000,
        created_at: '2026-11-29T12:00:00.000Z',
        expires_at: '2026-11-29T12:00:15.000Z',
        lease_count: 0,
      },
    },
  },
  lease_acquire: {
    request: { session_id: proof.session_id, request_id: 'acq-doc-1-0001', ttl_ms: 30000, wait_ms: 5000, metadata: { shard: 3 } },
    response: { status: 'success', code: 'lease_acquired', correlation_id: cid, lease: heldLease, queued: false },
  },
  lease_renew: {
    request: { ...proof, request_id: 'renew-doc-1-0001' },
    response: {
      status: 'success',
      code: 'lease_renewed',
      correlation_id: cid,
      lease: { ...heldLease, renewed_at: '2026-11-29T12:00:10.000Z', expires_at: '2026-11-29T12:00:40.000Z', renewal_count: 1 },
      release_requests: [],
    },
  },
  session_renew: {
    request: {
      session_id: proof.session_id,
      request_id: 'renew-tick-0001',
      leases: [
        { route, lease_id: heldLease.lease_id, fencing_token: 42 },
        { route: 'lease://acme/renderers/doc-2', lease_id: 'ls_Vb7pQ0aZ', fencing_token: 43, ttl_ms: 60000 },
      ],
    },
    response: {
      status: 'success',
      code: 'session_renewed',
      correlation_id: cid,
      session: {
        holder_incarnation: 'hi_3kF9aQ2',
        owner_id: 'worker-7',
        ttl_ms: 15000,
        created_at: '2026-11-29T12:00:00.000Z',
        expires_at: '2026-11-29T12:00:25.000Z',
        lease_count: 1,
      },
      results: [
        { route, code: 'lease_renewed', lease: { ...heldLease, renewed_at: '2026-11-29T12:00:10.000Z', expires_at: '2026-11-29T12:00:40.000Z', renewal_count: 1 } },
        { route: 'lease://acme/renderers/doc-2', code: 'lease_lost' },
      ],
      release_requests: [],
    },
  },
  session_acquire: {
    request: {
      session_id: proof.session_id,
      request_id: 'acq-pair-0001',
      leases: [{ route, metadata: { shard: 3 } }, { route: 'lease://acme/renderers/doc-2' }],
    },
    response: {
      status: 'success',
      code: 'leases_acquired',
      correlation_id: cid,
      leases: [heldLease, { ...heldLease, route: 'lease://acme/renderers/doc-2', fencing_token: 43, revision: 43, metadata: null, lease_id: 'ls_Vb7pQ0aZ' }],
    },
  },
  lease_release_request: {
    request: { request_id: 'ask-doc-1-0001', reason: 'deploying a new renderer; please finish and let go', expected_fencing_token: 42 },
    response: {
      status: 'success',
      code: 'release_requested',
      correlation_id: cid,
      route,
      fencing_token: 42,
      release_request: { requested_at: '2026-11-29T12:00:20.000Z', reason: 'deploying a new renderer; please finish and let go', token_id: 'tk_7Yh2' },
    },
  },
  lease_release: {
    request: { ...proof, request_id: 'release-doc-1-0001' },
    response: { status: 'success', code: 'lease_released', correlation_id: cid, route, fencing_token: 42 },
  },
  checkpoint_write: {
    request: { ...proof, request_id: 'ckpt-doc-1-0001', value: { page: 12, done: false } },
    response: {
      status: 'success',
      code: 'checkpoint_written',
      correlation_id: cid,
      checkpoint: { route, fencing_token: 42, written_at: '2026-11-29T12:00:05.000Z', version: 3 },
    },
  },
  checkpoint_read: {
    response: {
      status: 'success',
      code: 'checkpoint_read',
      correlation_id: cid,
      checkpoint: { route, value: { page: 12, done: false }, fencing_token: 42, written_at: '2026-11-29T12:00:05.000Z', version: 3 },
    },
  },
  lease_inspect: {
    response: { status: 'success', code: 'lease_inspected', correlation_id: cid, lease: leaseView },
  },
  lease_list: {
    response: { status: 'success', code: 'lease_listed', correlation_id: cid, items: [leaseView], next_cursor: null, revision: 1907, epoch: 'ep_5Tn0' },
  },
  lease_summary: {
    response: {
      status: 'success',
      code: 'lease_summary',
      correlation_id: cid,
      total: 3,
      exact: true,
      examined: 3,
      owners: [
        { owner_id: 'worker-7', leases: 2 },
        { owner_id: 'worker-9', leases: 1 },
      ],
      others: 0,
      owner_count: 2,
    },
  },
  lock_delay_list: {
    response: {
      status: 'success',
      code: 'lock_delay_listed',
      correlation_id: cid,
      items: [{ route: 'lease://acme/renderers/doc-2', lock_delay_until: '2026-11-29T10:00:15.000Z', remaining_ms: 4200 }],
      next_cursor: null,
    },
  },
};

/** The answer to an acquire whose wait ended while another session still held the route: its place is kept 5 s for the ticket. */
export const CONFLICT_EXAMPLE = {
  status: 'error',
  code: 'lease_conflict',
  message: 'waited and timed out: the lease is still held; the queue place is kept for its queue_ticket',
  correlation_id: cid,
  retryable: true,
  retry_after_ms: 1200,
  queue_ticket: 'qt_Yk3pQ0aZ8vLm2RtB.Hq7Xc2mN9sPv4TfW1kLd0e',
};

/** The answer to an all-or-nothing acquire when one of its routes is held: nothing was acquired. */
export const BATCH_CONFLICT_EXAMPLE = {
  status: 'error',
  code: 'lease_conflict',
  message: 'a route is held or in lock-delay; nothing was acquired',
  correlation_id: cid,
  retryable: true,
  retry_after_ms: 1200,
  held: ['lease://acme/renderers/doc-2'],
};

/** A stream's first events, as they arrive. */
export const STREAM_EXAMPLE = [
  'event: hello',
  'data: {"stream_id":"st_4kQ","epoch":"ep_5Tn0","revision":1907,"heartbeat_ms":15000}',
  '',
  'event: subscribed',
  'data: {"subscription_id":"sb_9xW","selector":"lease://acme/renderers/*","created":true}',
  '',
  'event: change',
  'id: 1908',
  `data: {"subscription_id":"sb_9xW","route":"${route}","change":"acquired","queued":false,"revision":1908,"lease":${JSON.stringify({ ...leaseView, revision: 1908 })}}`,
  '',
  ': hb',
  '',
  '',
].join('\n');
