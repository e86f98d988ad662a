/**
 * Malformed requests through a real server: every row names one fault and
 * the exact status and code the contract gives it (docs/semantics.md "The wire", docs/semantics.md §3,
 * §13), including the order of checks for requests with several faults.
 * Around the table, the held state is compared so that no bad request ever
 * changes anything.
 */

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, rid, startTestServer, type CallOptions, type Reply, type TestServer } from '../testing/harness';

/** The error envelope, with its correlation header, and never a 5xx. */
function assertError(r: Reply, status: number, code: string): void {
  assert.ok(r.status < 500, `a 5xx is never acceptable: ${r.status} ${r.text}`);
  assert.equal(r.status, status, `status: ${r.text}`);
  assert.equal(typeof r.body, 'object', `JSON error body: ${r.text}`);
  assert.equal(r.body.status, 'error');
  assert.equal(r.body.code, code, r.text);
  assert.equal(typeof r.body.message, 'string');
  assert.ok(r.body.message.length > 0);
  assert.equal(r.body.retryable, false);
  assert.match(r.body.correlation_id, /^c_/);
  assert.equal(r.headers['x-correlation-id'], r.body.correlation_id);
  for (const k of Object.keys(r.body)) {
    assert.ok(['status', 'code', 'message', 'correlation_id', 'retryable', 'retry_after_ms'].includes(k), `unexpected field ${k}`);
  }
}

/** Characters that make a name read as another (bidi override, isolates, zero-width, BOM, a lone surrogate). */
const SPOOFS: Array<[string, string]> = [
  ['a right-to-left override (U+202E)', '\u202E'],
  ['a left-to-right isolate (U+2066)', '\u2066'],
  ['a right-to-left mark (U+200F)', '\u200F'],
  ['a zero-width space (U+200B)', '\u200B'],
  ['a zero-width joiner (U+200D)', '\u200D'],
  ['a byte-order mark (U+FEFF)', '\uFEFF'],
  ['an unpaired high surrogate', '\uD800'],
  ['an unpaired low surrogate', '\uDC00'],
];

/** JSON text of a string with every non-ASCII code unit escaped (so lone surrogates reach the server as JSON escapes). */
function jsonText(text: string): string {
  return JSON.stringify(text).replace(/[\u0080-\uFFFF]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

interface Ctx {
  s: TestServer;
  sessionId: string;
  /** A lease held for the whole table. */
  held: { route: string; leaseId: string; fencingToken: number };
  /** A free route that bad acquires aim at (a good one would take it). */
  free: string;
  /** `lease://acme/renderers/*#read` only. */
  readToken: string;
}

interface Req {
  method: string;
  path: string;
  body?: unknown;
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** Default: the root token; `null`: no Authorization header. */
  token?: string | null;
}

interface Row {
  name: string;
  req: (c: Ctx) => Req;
  status: number;
  code: string;
  /** For 405: the methods the Allow header must list. */
  allow?: string[];
  /** Extra check on the message, where the row is about which fault wins. */
  message?: RegExp;
}

const JSON_CT = { 'Content-Type': 'application/json' };
const list = (selector: string, extra = '') => `/api/v1/leases?selector=${encodeURIComponent(selector)}${extra}`;

/** A valid acquire body for the free route, with `patch` applied (undefined deletes a field). */
function acquire(c: Ctx, patch: Record<string, unknown> = {}): Req {
  const body: Record<string, unknown> = { session_id: c.sessionId, request_id: rid(), ...patch };
  for (const k of Object.keys(patch)) if (patch[k] === undefined) delete body[k];
  return { method: 'POST', path: leasePath(c.free, 'acquire'), body };
}

/** A valid renew (or other holder call) of the held lease, with `patch` applied. */
function holder(c: Ctx, action: 'renew' | 'release' | 'checkpoint', patch: Record<string, unknown> = {}): Req {
  const body: Record<string, unknown> = {
    session_id: c.sessionId,
    request_id: rid(),
    lease_id: c.held.leaseId,
    fencing_token: c.held.fencingToken,
    ...(action === 'checkpoint' ? { value: { step: 1 } } : {}),
    ...patch,
  };
  for (const k of Object.keys(patch)) if (patch[k] === undefined) delete body[k];
  return { method: action === 'checkpoint' ? 'PUT' : 'POST', path: leasePath(c.held.route, action), body };
}

/** A valid force-release / revoke of the held lease, with `patch` applied. */
function force(c: Ctx, action: 'force-release' | 'revoke', patch: Record<string, unknown> = {}): Req {
  const body: Record<string, unknown> = { request_id: rid(), reason: 'a valid operator reason', expected_fencing_token: c.held.fencingToken, ...patch };
  for (const k of Object.keys(patch)) if (patch[k] === undefined) delete body[k];
  return { method: 'POST', path: leasePath(c.held.route, action), body };
}

function nested(depth: number): unknown {
  let v: unknown = 0;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

const ROWS: Row[] = [
  // ---- bodies and media types -------------------------------------------
  { name: 'invalid JSON', req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: '{"session_id":', headers: JSON_CT }), status: 400, code: 'invalid_request' },
  { name: 'a JSON array body', req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), body: [{ session_id: c.sessionId, request_id: rid() }] }), status: 400, code: 'invalid_request' },
  { name: 'a JSON number body', req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: '42', headers: JSON_CT }), status: 400, code: 'invalid_request' },
  { name: 'a JSON null body', req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: 'null', headers: JSON_CT }), status: 400, code: 'invalid_request' },
  // The body object is level 1, so a value of 32 nested arrays makes 33 levels.
  { name: 'a body nested 33 levels deep', req: (c) => holder(c, 'checkpoint', { value: nested(32) }), status: 400, code: 'invalid_request', message: /nested/ },
  {
    name: 'invalid UTF-8 bytes in the body',
    req: (c) => ({
      method: 'POST',
      path: leasePath(c.free, 'acquire'),
      raw: Buffer.concat([Buffer.from(`{"session_id":"${c.sessionId}","request_id":"`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
      headers: JSON_CT,
    }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a body over 128 KiB',
    req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: JSON.stringify({ session_id: c.sessionId, request_id: rid(), pad: 'x'.repeat(128 * 1024) }), headers: JSON_CT }),
    status: 413,
    code: 'payload_too_large',
  },
  {
    name: 'Content-Type text/plain with a JSON body',
    req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: JSON.stringify({ session_id: c.sessionId, request_id: rid() }), headers: { 'Content-Type': 'text/plain' } }),
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'Content-Type application/json; charset=latin1',
    req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: JSON.stringify({ session_id: c.sessionId, request_id: rid() }), headers: { 'Content-Type': 'application/json; charset=latin1' } }),
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'a body without a Content-Type',
    req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: JSON.stringify({ session_id: c.sessionId, request_id: rid() }) }),
    status: 415,
    code: 'unsupported_media_type',
  },
  { name: 'an unknown body field', req: (c) => acquire(c, { ttl: 5000 }), status: 400, code: 'invalid_request', message: /ttl/ },
  { name: 'a body on a call that takes none', req: (c) => ({ method: 'GET', path: leasePath(c.held.route), body: { verbose: true } }), status: 400, code: 'invalid_request' },
  { name: 'a missing required field (session_id)', req: (c) => acquire(c, { session_id: undefined }), status: 400, code: 'invalid_request' },

  // ---- types and ranges --------------------------------------------------
  { name: 'ttl_ms as a string', req: (c) => acquire(c, { ttl_ms: '30000' }), status: 400, code: 'invalid_request' },
  { name: 'ttl_ms as a float', req: (c) => acquire(c, { ttl_ms: 30000.5 }), status: 400, code: 'invalid_request' },
  { name: 'ttl_ms negative', req: (c) => acquire(c, { ttl_ms: -1000 }), status: 400, code: 'invalid_request' },
  { name: 'ttl_ms null', req: (c) => acquire(c, { ttl_ms: null }), status: 400, code: 'invalid_request' },
  { name: 'ttl_ms 999 (below 1 s)', req: (c) => acquire(c, { ttl_ms: 999 }), status: 400, code: 'invalid_request' },
  { name: 'ttl_ms 600001 (above 600 s)', req: (c) => acquire(c, { ttl_ms: 600_001 }), status: 400, code: 'invalid_request' },
  { name: 'renew ttl_ms 600001', req: (c) => holder(c, 'renew', { ttl_ms: 600_001 }), status: 400, code: 'invalid_request' },
  { name: 'session ttl_ms 1999', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: { owner_id: 'w', ttl_ms: 1_999 } }), status: 400, code: 'invalid_request' },
  { name: 'session ttl_ms 300001', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: { owner_id: 'w', ttl_ms: 300_001 } }), status: 400, code: 'invalid_request' },
  { name: 'wait_ms 30001', req: (c) => acquire(c, { wait_ms: 30_001 }), status: 400, code: 'invalid_request' },
  { name: 'wait_ms negative', req: (c) => acquire(c, { wait_ms: -1 }), status: 400, code: 'invalid_request' },
  { name: 'max_lifetime_ms 86400001', req: (c) => acquire(c, { max_lifetime_ms: 86_400_001 }), status: 400, code: 'invalid_request' },
  { name: 'max_lifetime_ms 999', req: (c) => acquire(c, { max_lifetime_ms: 999 }), status: 400, code: 'invalid_request' },

  // ---- metadata ----------------------------------------------------------
  { name: 'metadata with 17 keys', req: (c) => acquire(c, { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i])) }), status: 400, code: 'invalid_request' },
  { name: 'metadata with a nested object', req: (c) => acquire(c, { metadata: { shard: { n: 3 } } }), status: 400, code: 'invalid_request' },
  { name: 'metadata with an array value', req: (c) => acquire(c, { metadata: { shards: [1, 2] } }), status: 400, code: 'invalid_request' },
  { name: 'metadata with a null value', req: (c) => acquire(c, { metadata: { shard: null } }), status: 400, code: 'invalid_request' },
  { name: 'metadata key with a space', req: (c) => acquire(c, { metadata: { 'bad key': 1 } }), status: 400, code: 'invalid_request' },
  { name: 'metadata key with a slash', req: (c) => acquire(c, { metadata: { 'a/b': 1 } }), status: 400, code: 'invalid_request' },
  { name: 'metadata key of 65 characters', req: (c) => acquire(c, { metadata: { ['k'.repeat(65)]: 1 } }), status: 400, code: 'invalid_request' },
  { name: 'metadata over 1 KiB encoded', req: (c) => acquire(c, { metadata: { a: 'x'.repeat(600), b: 'y'.repeat(600) } }), status: 400, code: 'invalid_request' },
  { name: 'metadata not an object', req: (c) => acquire(c, { metadata: 'shard=3' }), status: 400, code: 'invalid_request' },

  // ---- request_id, owner_id, fencing_token, checkpoint -------------------
  { name: 'request_id empty', req: (c) => acquire(c, { request_id: '' }), status: 400, code: 'invalid_request' },
  { name: 'request_id of 129 characters', req: (c) => acquire(c, { request_id: 'r'.repeat(129) }), status: 400, code: 'invalid_request' },
  { name: 'request_id with a space', req: (c) => acquire(c, { request_id: 'req 1' }), status: 400, code: 'invalid_request' },
  { name: 'request_id non-ASCII', req: (c) => acquire(c, { request_id: 'req-é' }), status: 400, code: 'invalid_request' },
  { name: 'request_id missing', req: (c) => acquire(c, { request_id: undefined }), status: 400, code: 'invalid_request' },
  { name: 'request_id a number', req: (c) => acquire(c, { request_id: 7 }), status: 400, code: 'invalid_request' },
  { name: 'owner_id empty', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: { owner_id: '' } }), status: 400, code: 'invalid_request' },
  // 129 code points, each two UTF-16 units: a length check in units would be wrong either way.
  { name: 'owner_id of 129 code points', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: { owner_id: '😀'.repeat(129) } }), status: 400, code: 'invalid_request' },
  { name: 'owner_id with a control character', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: { owner_id: 'worker\u0007' } }), status: 400, code: 'invalid_request' },
  // Unicode spoofing (lib/identifiers.ts, docs/semantics.md §13): names that read as another name are refused, naming the field.
  ...SPOOFS.map(([what, text]): Row => ({
    name: `owner_id with ${what}`,
    req: () => ({ method: 'POST', path: '/api/v1/sessions', raw: `{"owner_id":${jsonText(`worker${text}1`)}}`, headers: { 'Content-Type': 'application/json' } }),
    status: 400,
    code: 'invalid_request',
    message: /^owner_id: /,
  })),
  ...SPOOFS.map(([what, text]): Row => ({
    name: `token name with ${what}`,
    req: () => ({ method: 'POST', path: '/api/v1/tokens', raw: `{"name":${jsonText(`ci${text}bot`)},"grants":["lease://acme/**#read"]}`, headers: { 'Content-Type': 'application/json' } }),
    status: 400,
    code: 'invalid_request',
    message: /^name: /,
  })),
  ...SPOOFS.map(([what, text]): Row => ({
    name: `metadata key with ${what}`,
    req: (c) => ({ ...acquire(c, {}), raw: `{"session_id":${JSON.stringify(c.sessionId)},"request_id":"${rid()}","metadata":{${jsonText(`shard${text}`)}:1}}`, headers: { 'Content-Type': 'application/json' } }),
    status: 400,
    code: 'invalid_request',
    message: /^metadata: /,
  })),
  { name: 'owner_id missing', req: () => ({ method: 'POST', path: '/api/v1/sessions', body: {} }), status: 400, code: 'invalid_request' },
  { name: 'fencing_token 0', req: (c) => holder(c, 'renew', { fencing_token: 0 }), status: 400, code: 'invalid_request' },
  { name: 'fencing_token as a string', req: (c) => holder(c, 'renew', { fencing_token: String(c.held.fencingToken) }), status: 400, code: 'invalid_request' },
  { name: 'fencing_token a float', req: (c) => holder(c, 'release', { fencing_token: c.held.fencingToken + 0.5 }), status: 400, code: 'invalid_request' },
  { name: 'lease_id empty', req: (c) => holder(c, 'release', { lease_id: '' }), status: 400, code: 'invalid_request' },
  { name: 'checkpoint value over 64 KiB', req: (c) => holder(c, 'checkpoint', { value: 'v'.repeat(64 * 1024) }), status: 400, code: 'invalid_request' },
  { name: 'checkpoint without value', req: (c) => holder(c, 'checkpoint', { value: undefined }), status: 400, code: 'invalid_request' },

  // ---- lease paths ---------------------------------------------------------
  { name: 'a wildcard segment in a lease path', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/*/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a ** segment in a lease path', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/**/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a percent-encoded wildcard (%2A)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/%2A/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a raw "." segment', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/./doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a raw ".." segment', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/../doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'an encoded ".." segment (%2E%2E)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/%2E%2E/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'an encoded "." segment (%2e)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/%2e/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'an empty segment (//)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme//doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a badly percent-encoded segment (%zz)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/%zz/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a percent-encoded invalid UTF-8 segment (%FF)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/%FF/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'an encoded "/" in a segment (never another route)', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/renderers/doc%2F1' }), status: 400, code: 'invalid_request' },
  { name: 'an encoded space in a segment', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/render%20ers/doc-1' }), status: 400, code: 'invalid_request' },
  { name: 'a 129-character segment', req: () => ({ method: 'GET', path: `/api/v1/leases/acme/${'s'.repeat(129)}/doc-1` }), status: 400, code: 'invalid_request' },
  // Boundary: 128 characters is a valid segment, so the answer is the route's (no lease), not a 400.
  { name: 'a 128-character segment is a valid route (free: lease_not_found)', req: () => ({ method: 'GET', path: `/api/v1/leases/acme/${'s'.repeat(128)}/doc-1` }), status: 404, code: 'lease_not_found' },
  { name: 'a lease path with 2 segments', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/renderers' }), status: 404, code: 'not_found' },
  { name: 'a lease path with 5 segments', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/renderers/doc-1/extra/more' }), status: 404, code: 'not_found' },
  { name: 'an unknown action', req: (c) => ({ method: 'POST', path: leasePath(c.held.route, 'steal'), body: {} }), status: 404, code: 'not_found' },
  { name: 'a trailing slash after an action', req: (c) => ({ method: 'POST', path: `${leasePath(c.held.route, 'acquire')}/`, body: {} }), status: 404, code: 'not_found' },
  { name: 'an unknown API path', req: () => ({ method: 'GET', path: '/api/v1/nothing-here' }), status: 404, code: 'not_found' },
  { name: 'an unknown API version', req: () => ({ method: 'GET', path: '/api/v2/leases?selector=lease://**' }), status: 404, code: 'not_found' },

  // ---- methods -------------------------------------------------------------
  { name: 'DELETE on acquire', req: (c) => ({ method: 'DELETE', path: leasePath(c.free, 'acquire') }), status: 405, code: 'method_not_allowed', allow: ['POST'] },
  { name: 'GET on release', req: (c) => ({ method: 'GET', path: leasePath(c.held.route, 'release') }), status: 405, code: 'method_not_allowed', allow: ['POST'] },
  { name: 'POST on inspect', req: (c) => ({ method: 'POST', path: leasePath(c.held.route), body: {} }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  { name: 'DELETE on checkpoint', req: (c) => ({ method: 'DELETE', path: leasePath(c.held.route, 'checkpoint') }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD', 'PUT'] },
  { name: 'PUT on sessions', req: () => ({ method: 'PUT', path: '/api/v1/sessions', body: {} }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD', 'POST'] },
  { name: 'PATCH on a token', req: () => ({ method: 'PATCH', path: '/api/v1/tokens/tk_x', body: {} }), status: 405, code: 'method_not_allowed', allow: ['DELETE'] },
  { name: 'POST on health', req: () => ({ method: 'POST', path: '/api/v1/health', token: null }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  { name: 'POST on the Prometheus exposition', req: () => ({ method: 'POST', path: '/api/metrics', token: null }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  { name: 'POST on the metrics summary', req: () => ({ method: 'POST', path: '/api/v1/metrics/summary', body: {} }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  { name: 'summary window_s 0', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=0' }), status: 400, code: 'invalid_request' },
  { name: 'summary window_s 901 (past the history)', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=901' }), status: 400, code: 'invalid_request' },
  { name: 'summary window_s not a number', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=15m' }), status: 400, code: 'invalid_request' },
  { name: 'summary window_s a float', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=1.5' }), status: 400, code: 'invalid_request' },
  { name: 'summary window_s repeated', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=60&window_s=60' }), status: 400, code: 'invalid_request' },
  { name: 'summary with an unknown parameter', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary?family=beta' }), status: 400, code: 'invalid_request' },
  { name: 'summary with a body', req: () => ({ method: 'GET', path: '/api/v1/metrics/summary', body: { window_s: 60 } }), status: 400, code: 'invalid_request' },
  { name: 'summary denied before its query is judged', req: (c) => ({ method: 'GET', path: '/api/v1/metrics/summary?window_s=0', token: c.readToken }), status: 403, code: 'access_denied' },
  { name: 'the exposition with a bad token', req: () => ({ method: 'GET', path: '/api/metrics', token: 'lh_bogus' }), status: 401, code: 'invalid_credential' },

  // ---- selectors and list queries -----------------------------------------
  { name: 'selector with two segments', req: () => ({ method: 'GET', path: list('lease://acme/renderers') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with four segments', req: () => ({ method: 'GET', path: list('lease://acme/renderers/doc-1/extra') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with a partial wildcard (doc*)', req: () => ({ method: 'GET', path: list('lease://acme/renderers/doc*') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with *x', req: () => ({ method: 'GET', path: list('lease://acme/*x/doc-1') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with ***', req: () => ({ method: 'GET', path: list('lease://acme/***') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with two ** (lease://**/**)', req: () => ({ method: 'GET', path: list('lease://**/**') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with ** after three segments', req: () => ({ method: 'GET', path: list('lease://a/b/c/**') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with an empty segment', req: () => ({ method: 'GET', path: list('lease://acme//doc-1') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with the wrong scheme', req: () => ({ method: 'GET', path: list('notice://acme/renderers/*') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with a trailing /', req: () => ({ method: 'GET', path: list('lease://acme/renderers/') }), status: 400, code: 'invalid_selector' },
  { name: 'selector with a .. segment', req: () => ({ method: 'GET', path: list('lease://acme/../*') }), status: 400, code: 'invalid_selector' },
  { name: 'selector over 400 bytes', req: () => ({ method: 'GET', path: list(`lease://${'a'.repeat(140)}/${'b'.repeat(140)}/${'c'.repeat(140)}`) }), status: 400, code: 'invalid_selector', message: /400 bytes/ },
  { name: 'selector with a 129-character segment', req: () => ({ method: 'GET', path: list(`lease://acme/${'s'.repeat(129)}/*`) }), status: 400, code: 'invalid_selector' },
  { name: 'selector empty', req: () => ({ method: 'GET', path: '/api/v1/leases?selector=' }), status: 400, code: 'invalid_selector' },
  { name: 'list without selector', req: () => ({ method: 'GET', path: '/api/v1/leases' }), status: 400, code: 'invalid_selector' },
  { name: 'list limit 0', req: () => ({ method: 'GET', path: list('lease://**', '&limit=0') }), status: 400, code: 'invalid_request' },
  { name: 'list limit 1001', req: () => ({ method: 'GET', path: list('lease://**', '&limit=1001') }), status: 400, code: 'invalid_request' },
  { name: 'list limit abc', req: () => ({ method: 'GET', path: list('lease://**', '&limit=abc') }), status: 400, code: 'invalid_request' },
  { name: 'list limit -1', req: () => ({ method: 'GET', path: list('lease://**', '&limit=-1') }), status: 400, code: 'invalid_request' },
  { name: 'session list limit 1001', req: () => ({ method: 'GET', path: '/api/v1/sessions?limit=1001' }), status: 400, code: 'invalid_request' },
  { name: 'list with a garbage cursor', req: () => ({ method: 'GET', path: list('lease://**', '&cursor=garbage.garbage') }), status: 400, code: 'cursor_invalid' },
  { name: 'session list with a garbage cursor', req: () => ({ method: 'GET', path: '/api/v1/sessions?cursor=xyz.abc' }), status: 400, code: 'cursor_invalid' },
  { name: 'an unknown query parameter on list', req: () => ({ method: 'GET', path: list('lease://**', '&selectr=x') }), status: 400, code: 'invalid_request', message: /selectr/ },
  { name: 'an unknown query parameter on inspect', req: (c) => ({ method: 'GET', path: `${leasePath(c.held.route)}?verbose=1` }), status: 400, code: 'invalid_request' },
  { name: 'a query parameter on acquire', req: (c) => ({ ...acquire(c), path: `${leasePath(c.free, 'acquire')}?wait_ms=0` }), status: 400, code: 'invalid_request' },
  { name: 'a repeated query parameter (selector)', req: () => ({ method: 'GET', path: `${list('lease://**')}&selector=${encodeURIComponent('lease://acme/**')}` }), status: 400, code: 'invalid_request', message: /repeated/ },
  { name: 'a repeated query parameter (limit)', req: () => ({ method: 'GET', path: list('lease://**', '&limit=1&limit=1') }), status: 400, code: 'invalid_request', message: /repeated/ },
  { name: 'a badly encoded query string', req: () => ({ method: 'GET', path: '/api/v1/leases?selector=lease%zz' }), status: 400, code: 'invalid_request' },

  // ---- credentials ---------------------------------------------------------
  { name: 'no Authorization header', req: (c) => ({ ...acquire(c), token: null }), status: 401, code: 'invalid_credential' },
  { name: 'Authorization: Basic', req: (c) => ({ ...acquire(c), token: null, headers: { Authorization: 'Basic dXNlcjpwYXNz' } }), status: 401, code: 'invalid_credential' },
  { name: 'an unknown bearer token', req: (c) => ({ ...acquire(c), token: 'lh_not_a_real_token_at_all' }), status: 401, code: 'invalid_credential' },
  { name: 'an empty bearer token', req: (c) => ({ ...acquire(c), token: null, headers: { Authorization: 'Bearer ' } }), status: 401, code: 'invalid_credential' },
  { name: 'a bearer token with a space inside', req: () => ({ method: 'GET', path: list('lease://**'), token: null, headers: { Authorization: 'Bearer two words' } }), status: 401, code: 'invalid_credential' },

  // ---- order of checks with several faults ---------------------------------
  { name: 'bad token + bad route → 401', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/*/doc-1', token: 'lh_bogus' }), status: 401, code: 'invalid_credential' },
  { name: 'no token + bad selector → 401', req: () => ({ method: 'GET', path: list('lease://**/**'), token: null }), status: 401, code: 'invalid_credential' },
  { name: 'bad token + bad body + bad media type → 401', req: (c) => ({ method: 'POST', path: leasePath(c.free, 'acquire'), raw: '{', headers: { 'Content-Type': 'text/plain' }, token: 'lh_bogus' }), status: 401, code: 'invalid_credential' },
  {
    name: 'good token + wildcard route + bad body → 400 for the route',
    req: () => ({ method: 'POST', path: '/api/v1/leases/acme/renderers/*/acquire', raw: '{"session_id":', headers: JSON_CT }),
    status: 400,
    code: 'invalid_request',
    message: /route|wildcard/,
  },
  {
    name: 'good token + wildcard route + wrong media type → 400 for the route',
    req: () => ({ method: 'POST', path: '/api/v1/leases/acme/renderers/*/acquire', raw: '{}', headers: { 'Content-Type': 'text/plain' } }),
    status: 400,
    code: 'invalid_request',
    message: /route|wildcard/,
  },
  { name: 'read-only token + bad body → 403', req: (c) => ({ method: 'POST', path: leasePath('lease://acme/renderers/doc-9', 'acquire'), raw: '{"session_id":', headers: JSON_CT, token: c.readToken }), status: 403, code: 'access_denied' },
  {
    name: 'read-only token + wrong media type → 403',
    req: (c) => ({ method: 'POST', path: leasePath('lease://acme/renderers/doc-9', 'acquire'), raw: '{}', headers: { 'Content-Type': 'text/plain' }, token: c.readToken }),
    status: 403,
    code: 'access_denied',
  },
  {
    name: 'read-only token + body over 128 KiB → 403',
    req: (c) => ({ method: 'POST', path: leasePath('lease://acme/renderers/doc-9', 'acquire'), raw: JSON.stringify({ pad: 'x'.repeat(130 * 1024) }), headers: JSON_CT, token: c.readToken }),
    status: 403,
    code: 'access_denied',
  },
  { name: 'read-only token + route outside its grant + bad route → 400 before 403', req: (c) => ({ method: 'GET', path: '/api/v1/leases/other/%2E%2E/x', token: c.readToken }), status: 400, code: 'invalid_request' },
  { name: 'read-only token + bad selector → 400 before 403', req: (c) => ({ method: 'GET', path: list('lease://**/**'), token: c.readToken }), status: 400, code: 'invalid_selector' },
  { name: 'read-only token + valid selector outside its grant → 403', req: (c) => ({ method: 'GET', path: list('lease://acme/**'), token: c.readToken }), status: 403, code: 'access_denied' },
  { name: 'unknown path + bad token → 404', req: () => ({ method: 'GET', path: '/api/v1/leases/acme/renderers/doc-1/extra/more', token: 'lh_bogus' }), status: 404, code: 'not_found' },
  { name: 'unknown path + no token → 404', req: () => ({ method: 'POST', path: '/api/v1/nothing-here', token: null, raw: '{', headers: { 'Content-Type': 'text/plain' } }), status: 404, code: 'not_found' },
  { name: 'wrong method + bad token → 405', req: (c) => ({ method: 'DELETE', path: leasePath(c.held.route, 'acquire'), token: 'lh_bogus' }), status: 405, code: 'method_not_allowed', allow: ['POST'] },
  { name: 'wrong method + no token + bad route → 405', req: () => ({ method: 'PUT', path: '/api/v1/leases/acme/*/doc-1', token: null }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  // Operator actions, embed tokens and audit reads (docs/semantics.md §9, §10 and §11).
  { name: 'force-release without a reason', req: (c) => force(c, 'force-release', { reason: undefined }), status: 400, code: 'invalid_request', message: /reason/ },
  { name: 'force-release with a 9-character reason', req: (c) => force(c, 'force-release', { reason: 'too short' }), status: 400, code: 'invalid_request', message: /reason/ },
  { name: 'revoke with a 501-character reason', req: (c) => force(c, 'revoke', { reason: 'r'.repeat(501) }), status: 400, code: 'invalid_request', message: /reason/ },
  { name: 'force-release with a reason holding a NUL', req: (c) => force(c, 'force-release', { reason: 'stuck lease\u0000x' }), status: 400, code: 'invalid_request' },
  { name: 'force-release without expected_fencing_token', req: (c) => force(c, 'force-release', { expected_fencing_token: undefined }), status: 400, code: 'invalid_request' },
  { name: 'revoke with expected_fencing_token 0', req: (c) => force(c, 'revoke', { expected_fencing_token: 0 }), status: 400, code: 'invalid_request' },
  { name: 'revoke with close_session as a string', req: (c) => force(c, 'revoke', { close_session: 'true' }), status: 400, code: 'invalid_request' },
  { name: 'force-release with close_session (revoke only)', req: (c) => force(c, 'force-release', { close_session: true }), status: 400, code: 'invalid_request', message: /close_session/ },
  { name: 'force-release without request_id', req: (c) => force(c, 'force-release', { request_id: undefined }), status: 400, code: 'invalid_request' },
  {
    name: 'force-release by a read token with a bad body: permission first',
    req: (c) => ({ ...force(c, 'force-release', { reason: 'x' }), token: c.readToken }),
    status: 403,
    code: 'access_denied',
  },
  {
    name: 'force-release on a wildcard path segment',
    req: (c) => ({ ...force(c, 'force-release'), path: '/api/v1/leases/acme/renderers/*/force-release' }),
    status: 400,
    code: 'invalid_request',
  },
  { name: 'GET on force-release', req: (c) => ({ method: 'GET', path: leasePath(c.held.route, 'force-release') }), status: 405, code: 'method_not_allowed', allow: ['POST'] },
  { name: 'embed token with a partial wildcard', req: () => ({ method: 'POST', path: '/api/v1/embed-tokens', body: { selector: 'lease://acme/rend*' } }), status: 400, code: 'invalid_selector' },
  { name: 'embed token without a selector', req: () => ({ method: 'POST', path: '/api/v1/embed-tokens', body: {} }), status: 400, code: 'invalid_request' },
  { name: 'embed token living 24 h + 1 ms', req: () => ({ method: 'POST', path: '/api/v1/embed-tokens', body: { selector: 'lease://acme/**', ttl_ms: 86_400_001 } }), status: 400, code: 'invalid_request' },
  {
    name: 'embed token beyond the creator’s read grant',
    req: (c) => ({ method: 'POST', path: '/api/v1/embed-tokens', body: { selector: 'lease://acme/**' }, token: c.readToken }),
    status: 403,
    code: 'access_denied',
  },
  { name: 'audit with a bad route selector', req: () => ({ method: 'GET', path: '/api/v1/audit?route=lease://acme' }), status: 400, code: 'invalid_selector' },
  { name: 'audit with an unknown event_type', req: () => ({ method: 'GET', path: '/api/v1/audit?event_type=lease_steal' }), status: 400, code: 'invalid_request' },
  { name: 'audit with since not a time', req: () => ({ method: 'GET', path: '/api/v1/audit?since=1700000000' }), status: 400, code: 'invalid_request' },
  { name: 'audit with a repeated parameter', req: () => ({ method: 'GET', path: '/api/v1/audit?limit=5&limit=6' }), status: 400, code: 'invalid_request' },
  { name: 'audit by a read token', req: (c) => ({ method: 'GET', path: '/api/v1/audit?route=lease://acme/renderers/*', token: c.readToken }), status: 403, code: 'access_denied' },
  // The live feed (docs/semantics.md §8): a refused stream is a JSON error, never a stream.
  { name: 'stream with a malformed selector', req: () => ({ method: 'GET', path: '/api/v1/inventory/stream?selector=lease://acme/**/x/**' }), status: 400, code: 'invalid_selector' },
  {
    name: 'stream: a bad selector wins over a denied one',
    req: (c) => ({ method: 'GET', path: '/api/v1/inventory/stream?selector=lease://other/**&selector=lease://a/b', token: c.readToken }),
    status: 400,
    code: 'invalid_selector',
  },
  { name: 'stream with a selector outside the grant', req: (c) => ({ method: 'GET', path: '/api/v1/inventory/stream?selector=lease://acme/renderers/*&selector=lease://acme/**', token: c.readToken }), status: 403, code: 'access_denied' },
  { name: 'stream with renewals=yes', req: () => ({ method: 'GET', path: '/api/v1/inventory/stream?selector=lease://acme/**&renewals=yes' }), status: 400, code: 'invalid_request' },
  { name: 'stream with an unknown parameter', req: () => ({ method: 'GET', path: '/api/v1/inventory/stream?selectors=lease://acme/**' }), status: 400, code: 'invalid_request' },
  { name: 'stream with a repeated renewals', req: () => ({ method: 'GET', path: '/api/v1/inventory/stream?renewals=1&renewals=1' }), status: 400, code: 'invalid_request' },
  { name: 'stream without credentials', req: () => ({ method: 'GET', path: '/api/v1/inventory/stream', token: null }), status: 401, code: 'invalid_credential' },
  { name: 'stream by POST', req: () => ({ method: 'POST', path: '/api/v1/inventory/stream', body: {} }), status: 405, code: 'method_not_allowed', allow: ['GET', 'HEAD'] },
  { name: 'register on an unknown stream', req: () => ({ method: 'POST', path: '/api/v1/inventory/streams/st_none/subscriptions', body: { selector: 'lease://acme/**' } }), status: 404, code: 'not_found' },
  { name: 'register with a malformed selector', req: () => ({ method: 'POST', path: '/api/v1/inventory/streams/st_none/subscriptions', body: { selector: 'acme/**' } }), status: 400, code: 'invalid_selector' },
  { name: 'register with renewals not a boolean', req: () => ({ method: 'POST', path: '/api/v1/inventory/streams/st_none/subscriptions', body: { selector: 'lease://acme/**', renewals: 1 } }), status: 400, code: 'invalid_request' },
  { name: 'register with an unknown field', req: () => ({ method: 'POST', path: '/api/v1/inventory/streams/st_none/subscriptions', body: { selector: 'lease://acme/**', replay: true } }), status: 400, code: 'invalid_request' },
  {
    name: 'register outside the grant (denied before the stream is looked up)',
    req: (c) => ({ method: 'POST', path: '/api/v1/inventory/streams/st_none/subscriptions', body: { selector: 'lease://acme/**' }, token: c.readToken }),
    status: 403,
    code: 'access_denied',
  },
  // ---- names a plain object would swallow, and paths a router would normalize ----
  { name: 'a __proto__ query parameter on list', req: () => ({ method: 'GET', path: list('lease://**', '&__proto__=1') }), status: 400, code: 'invalid_request', message: /__proto__/ },
  { name: 'a __proto__ query parameter on acquire', req: (c) => ({ ...acquire(c), path: `${leasePath(c.free, 'acquire')}?__proto__=1` }), status: 400, code: 'invalid_request' },
  { name: 'an encoded, repeated __proto__ query parameter on session open', req: () => ({ method: 'POST', path: '/api/v1/sessions?%5F%5Fproto%5F%5F=1&__proto__=2', body: { owner_id: 'proto-probe' } }), status: 400, code: 'invalid_request' },
  { name: 'an API path with a doubled leading slash', req: () => ({ method: 'POST', path: '//api/v1/sessions', body: { owner_id: 'slash-probe' } }), status: 404, code: 'not_found' },
  { name: 'an API path with a backslash', req: () => ({ method: 'POST', path: '/api\\v1/sessions', body: { owner_id: 'slash-probe' } }), status: 404, code: 'not_found' },
  // ---- bodies judged before a permission that depends on them ---------------
  {
    name: 'a policy whose ttl_min_ms is below the global floor, from a token without admin',
    req: (c) => ({ method: 'PUT', path: '/api/v1/policies', body: { selector: 'lease://acme/renderers/*', reason: 'a valid operator reason', ttl_min_ms: 5 }, token: c.readToken }),
    status: 400,
    code: 'invalid_request',
    message: /ttl_min_ms/,
  },
  {
    name: 'a policy whose ttl_min_ms is above its ttl_max_ms, from a token without admin',
    req: (c) => ({ method: 'PUT', path: '/api/v1/policies', body: { selector: 'lease://acme/renderers/*', reason: 'a valid operator reason', ttl_min_ms: 20_000, ttl_max_ms: 10_000 }, token: c.readToken }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a token that expires in the past, from a token without admin',
    req: (c) => ({ method: 'POST', path: '/api/v1/tokens', body: { name: 'past', grants: ['lease://acme/renderers/*#read'], expires_at: '2001-01-01T00:00:00.000Z' }, token: c.readToken }),
    status: 400,
    code: 'invalid_request',
    message: /future/,
  },
  { name: 'a token list for a family that is not a family name', req: () => ({ method: 'GET', path: '/api/v1/tokens?family=BAD!!' }), status: 400, code: 'invalid_request' },
  { name: 'a token list for a 64-character family', req: () => ({ method: 'GET', path: `/api/v1/tokens?family=${'f'.repeat(64)}` }), status: 400, code: 'invalid_request' },
  { name: 'unregister on an unknown stream', req: () => ({ method: 'DELETE', path: '/api/v1/inventory/streams/st_none/subscriptions/sb_none' }), status: 404, code: 'not_found' },
];

describe('malformed requests', () => {
  const c = {} as Ctx;
  let before_: { revision: number; items: unknown[]; sessions: unknown[] };

  async function snapshot() {
    const l = await c.s.call('GET', list('lease://**'));
    assert.equal(l.status, 200, l.text);
    const ss = await c.s.call('GET', '/api/v1/sessions');
    assert.equal(ss.status, 200, ss.text);
    return {
      revision: l.body.revision as number,
      // remaining_ms moves with the clock; everything else must not.
      items: (l.body.items as Array<Record<string, unknown>>).map(({ remaining_ms: _r, ...rest }) => rest),
      sessions: (ss.body.items as Array<Record<string, unknown>>).map((s) => ({ incarnation: s.holder_incarnation, lease_count: s.lease_count, owner_id: s.owner_id, expires_at: s.expires_at })),
    };
  }

  before(async () => {
    c.s = await startTestServer();
    c.sessionId = (await c.s.openSession('table-holder', 300_000)).sessionId;
    c.free = 'lease://acme/renderers/free-1';
    for (const route of ['lease://acme/renderers/held-0', 'lease://acme/renderers/held-1']) {
      const r = await c.s.call('POST', leasePath(route, 'acquire'), { session_id: c.sessionId, request_id: rid(), ttl_ms: 600_000 });
      assert.equal(r.status, 200, r.text);
      c.held = { route, leaseId: r.body.lease.lease_id, fencingToken: r.body.lease.fencing_token };
    }
    c.readToken = await c.s.createToken(['lease://acme/renderers/*#read']);
    before_ = await snapshot();
  });
  after(() => c.s.close());

  test(`the table has at least 45 rows (${ROWS.length})`, () => {
    assert.ok(ROWS.length >= 45);
    assert.equal(new Set(ROWS.map((r) => r.name)).size, ROWS.length, 'row names are unique');
  });

  for (const row of ROWS) {
    test(`${row.name} → ${row.status} ${row.code}`, async () => {
      const q = row.req(c);
      const opts: CallOptions = { headers: q.headers, raw: q.raw, token: q.token === undefined ? c.s.token : q.token };
      const r = await c.s.call(q.method, q.path, q.body, opts);
      assertError(r, row.status, row.code);
      if (row.message) assert.match(r.body.message, row.message);
      if (row.allow) {
        const allow = String(r.headers.allow ?? '')
          .split(',')
          .map((m) => m.trim())
          .filter(Boolean);
        assert.deepEqual(new Set(allow.filter((m) => m !== 'OPTIONS')), new Set(row.allow), `Allow: ${r.headers.allow}`);
      }
      // The server still answers on the same keep-alive pool.
      const ok = await c.s.call('GET', '/api/v1/health', undefined, { token: null });
      assert.equal(ok.status, 200);
    });
  }

  test('after the table nothing changed: same leases, fencing tokens, revision and sessions', async () => {
    const now = await snapshot();
    assert.equal(now.revision, before_.revision);
    assert.deepEqual(now.items, before_.items);
    assert.deepEqual(now.sessions, before_.sessions);
    const inspect = await c.s.call('GET', leasePath(c.free));
    assert.equal(inspect.body.code, 'lease_not_found', 'no bad acquire took the free route');
    const cp = await c.s.call('GET', leasePath(c.held.route, 'checkpoint'));
    assert.equal(cp.body.code, 'checkpoint_not_found', 'no bad checkpoint was written');
  });

  test('after the table the held lease still renews with its proof', async () => {
    const r = await c.s.call('POST', leasePath(c.held.route, 'renew'), {
      session_id: c.sessionId,
      request_id: rid(),
      lease_id: c.held.leaseId,
      fencing_token: c.held.fencingToken,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.lease.fencing_token, c.held.fencingToken);
    assert.equal(r.body.lease.renewal_count, 1);
  });

  test('a body nested exactly 32 levels deep is accepted', async () => {
    const r = await c.s.call('PUT', leasePath(c.held.route, 'checkpoint'), {
      session_id: c.sessionId,
      request_id: rid(),
      lease_id: c.held.leaseId,
      fencing_token: c.held.fencingToken,
      value: nested(31),
    });
    assert.equal(r.status, 200, r.text);
    const read = await c.s.call('GET', leasePath(c.held.route, 'checkpoint'));
    assert.deepEqual(read.body.checkpoint.value, nested(31));
  });

  test('boundary values are accepted: 128-code-point owner_id, 128-character request_id, 16 metadata keys, a 64 KiB checkpoint', async () => {
    const open = await c.s.call('POST', '/api/v1/sessions', { owner_id: '😀'.repeat(128), ttl_ms: 300_000 });
    assert.equal(open.status, 201, open.text);
    const sid = open.body.session.session_id as string;
    const route = 'lease://acme/renderers/bounds';
    const acq = await c.s.call('POST', leasePath(route, 'acquire'), {
      session_id: sid,
      request_id: '~'.repeat(128),
      ttl_ms: 600_000,
      max_lifetime_ms: 86_400_000,
      wait_ms: 30_000,
      metadata: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, i])),
    });
    assert.equal(acq.status, 200, acq.text);
    // A JSON string of 65,534 characters plus its two quotes is exactly 64 KiB.
    const cp = await c.s.call('PUT', leasePath(route, 'checkpoint'), {
      session_id: sid,
      request_id: rid(),
      lease_id: acq.body.lease.lease_id,
      fencing_token: acq.body.lease.fencing_token,
      value: 'v'.repeat(64 * 1024 - 2),
    });
    assert.equal(cp.status, 200, cp.text);
  });

  test('a chunked body over 128 KiB (no Content-Length) is 413', async () => {
    const { request } = await import('node:http');
    const url = new URL(c.s.url);
    const r = await new Promise<{ status: number; body: { code?: string; correlation_id?: string }; cid: unknown }>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, method: 'POST', path: leasePath(c.free, 'acquire'), headers: { Authorization: `Bearer ${c.s.token}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), cid: res.headers['x-correlation-id'] }));
        },
      );
      req.on('error', reject);
      req.write(`{"session_id":"${c.sessionId}","request_id":"${rid()}","pad":"`);
      for (let i = 0; i < 5; i++) req.write('x'.repeat(32 * 1024));
      req.end('"}');
    });
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
    assert.equal(r.cid, r.body.correlation_id);
    const inspect = await c.s.call('GET', leasePath(c.free));
    assert.equal(inspect.body.code, 'lease_not_found');
  });

  test('an empty body and {} are both accepted by calls without a body', async () => {
    const a = await c.s.call('GET', '/api/v1/auth/whoami');
    assert.equal(a.status, 200, a.text);
    const b = await c.s.call('GET', '/api/v1/auth/whoami', {});
    assert.equal(b.status, 200, b.text);
  });
});
