/**
 * The OpenAPI 3.1 document, generated from the route table and the zod
 * schemas the handlers validate with (requests, `schemas.ts`) and are typed by
 * (answers, `answers.ts`): the API is described once, where it is enforced.
 * Served at /api/v1/openapi.json and written to docs/openapi.json by the
 * build (scripts/openapi.ts). docs/api.md explains how to use it; openapi-30.ts
 * rewrites it as OpenAPI 3.0.3 for older generators.
 */

import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../engine/core/errors';
import { Answers, ErrorBody, FeedEvents, HealthLive, HealthNotReady, HealthOk, HealthReady, HealthUnavailable, JsonValue, type Operation } from './answers';
import { STATUS_OF } from './envelope';
import { BATCH_CONFLICT_EXAMPLE, CONFLICT_EXAMPLE, EXAMPLES, STREAM_EXAMPLE } from './openapi-examples';
import { ROUTES, type AnyRoute } from './routes';

type Json = Record<string, unknown>;

/**
 * Operation ids as generators turn them into method names (`acquireLease`,
 * `acquire_lease`): verb first. The route table's `operation` stays the
 * metrics label.
 */
const OPERATION_IDS: Record<Operation, string> = {
  session_open: 'openSession',
  session_keepalive: 'keepSessionAlive',
  session_close: 'closeSession',
  session_renew: 'renewSessionLeases',
  session_acquire: 'acquireLeases',
  session_list: 'listSessions',
  lease_list: 'listLeases',
  lease_summary: 'summarizeLeases',
  lock_delay_list: 'listLockDelays',
  lease_inspect: 'inspectLease',
  lease_acquire: 'acquireLease',
  lease_renew: 'renewLease',
  lease_release: 'releaseLease',
  checkpoint_write: 'writeCheckpoint',
  checkpoint_read: 'readCheckpoint',
  login: 'login',
  logout: 'logout',
  whoami: 'whoami',
  token_create: 'createToken',
  token_list: 'listTokens',
  token_revoke: 'revokeToken',
  lease_force_release: 'forceReleaseLease',
  lease_revoke: 'revokeLease',
  lease_release_request: 'requestLeaseRelease',
  embed_token_create: 'createEmbedToken',
  audit_list: 'listAuditEvents',
  feed_open: 'openInventoryStream',
  feed_subscribe: 'subscribe',
  feed_unsubscribe: 'unsubscribe',
  metrics_summary: 'getMetricsSummary',
  policy_set: 'setPolicy',
  policy_delete: 'deletePolicy',
  policy_list: 'listPolicies',
  policy_effective: 'explainPolicy',
};

const TAGS = [
  { name: 'sessions', description: 'A worker’s liveness: its leases end when its session does' },
  { name: 'leases', description: 'Acquire, renew and release fenced, time-bounded, exclusive leases' },
  { name: 'checkpoints', description: 'A small JSON value per route, written only by the current holder (fenced)' },
  { name: 'inventory', description: 'Reading the held set: inspect, list, and the live feed' },
  { name: 'operators', description: 'Operator actions on another holder’s lease, and the audit trail' },
  { name: 'tokens', description: 'Bearer tokens, their grants, and the console’s login' },
  { name: 'policies', description: 'Per-pattern TTL bounds, lifetime caps, lock-delay and waiter caps' },
  { name: 'service', description: 'Health, metrics and this document' },
] as const;
type Tag = (typeof TAGS)[number]['name'];

const TAG_OF: Record<Operation, Tag> = {
  session_open: 'sessions',
  session_keepalive: 'sessions',
  session_close: 'sessions',
  session_list: 'sessions',
  session_renew: 'sessions',
  session_acquire: 'leases',
  lease_acquire: 'leases',
  lease_renew: 'leases',
  lease_release: 'leases',
  checkpoint_write: 'checkpoints',
  checkpoint_read: 'checkpoints',
  lease_inspect: 'inventory',
  lease_list: 'inventory',
  lease_summary: 'inventory',
  lock_delay_list: 'inventory',
  feed_open: 'inventory',
  feed_subscribe: 'inventory',
  feed_unsubscribe: 'inventory',
  lease_force_release: 'operators',
  lease_revoke: 'operators',
  lease_release_request: 'leases',
  audit_list: 'operators',
  login: 'tokens',
  logout: 'tokens',
  whoami: 'tokens',
  token_create: 'tokens',
  token_list: 'tokens',
  token_revoke: 'tokens',
  embed_token_create: 'tokens',
  metrics_summary: 'service',
  policy_set: 'policies',
  policy_delete: 'policies',
  policy_list: 'policies',
  policy_effective: 'policies',
};

/** What each error code means, for the per-operation answer descriptions. */
const MEANING: Record<ErrorCode, string> = {
  invalid_request: 'a malformed body, field, route, query parameter or limit; unknown fields are refused',
  invalid_selector: 'a selector fails the grammar',
  cursor_invalid: 'the cursor was altered, or comes from another query or epoch',
  invalid_credential: 'no, unknown, expired or revoked token',
  access_denied: 'no single grant of the token contains the request',
  lease_not_found: 'no lease is held on the route',
  checkpoint_not_found: 'the route never had a checkpoint',
  session_not_found: 'the session is unknown, closed or expired',
  not_found: 'no such object for this caller',
  method_not_allowed: 'the path does not take this method (see Allow)',
  lease_conflict: 'another lease holds the route (retryable, with retry_after_ms) or the wait timed out (then with queue_ticket, which keeps the place 5 s)',
  lease_lost: 'the lease presented is not the route’s active lease: stop writing',
  lease_mismatch: 'expected_fencing_token is not the current one',
  idempotency_conflict: 'request_id reused with different inputs',
  payload_too_large: 'the body is over 128 KiB',
  unsupported_media_type: 'the body is not application/json',
  rate_limited: 'a queue, cap or admission limit is full (retryable)',
  backend_unavailable: 'the store cannot answer safely (retryable)',
  outcome_unknown: 'the store may have committed: retry with the same request_id',
  internal_error: 'an unexpected fault (never a client’s mistake)',
};

/** One named error schema per status, its `code` limited to that status's codes. */
const ERROR_SCHEMA_OF: Record<number, string> = {
  400: 'BadRequestError',
  401: 'UnauthorizedError',
  403: 'ForbiddenError',
  404: 'NotFoundError',
  405: 'MethodNotAllowedError',
  409: 'ConflictError',
  413: 'PayloadTooLargeError',
  415: 'UnsupportedMediaTypeError',
  429: 'RateLimitedError',
  500: 'InternalError',
  503: 'UnavailableError',
};

const REF = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const HEADER = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** Statuses whose errors may say when to retry (`Retry-After`, seconds, with `retry_after_ms` in the body). */
const RETRYABLE_STATUS = new Set([409, 429, 503]);

const HEADERS = {
  CorrelationId: { description: 'The answer’s correlation id (also `correlation_id` in the body): quote it when reporting a problem', schema: { type: 'string' } },
  IdempotentReplay: { description: 'Present (`true`) when this answer replays an earlier success with the same request_id', schema: { type: 'string', enum: ['true'] } },
  RetryAfter: { description: 'Seconds to wait before retrying, when the server knows (`retry_after_ms` in the body is exact)', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods the path takes', schema: { type: 'string' } },
};

const INT32_MAX = 2 ** 31 - 1;

/**
 * Integers that may pass 2^31 (fencing tokens and revisions never wrap, counts
 * and durations are bounded only by 2^53) say `int64`, and numbers `double`:
 * without a format, typed generators choose int32 and float32 (Swagger
 * Codegen's Go client then fails to decode fencing token 2147483648).
 */
function widthOf(s: Json): void {
  const type = Array.isArray(s.type) && s.type.length === 2 && s.type[1] === 'null' ? s.type[0] : s.type;
  if (s.format !== undefined) return;
  if (type === 'integer') {
    const max = typeof s.maximum === 'number' ? s.maximum : Infinity;
    const min = typeof s.minimum === 'number' ? s.minimum : -Infinity;
    if (max > INT32_MAX || min < -INT32_MAX - 1) s.format = 'int64';
  } else if (type === 'number') s.format = 'double';
}

class Components {
  readonly schemas: Record<string, Json> = {};

  /** Add a converted schema under `name`; a name given twice must mean the same schema. */
  put(name: string, schema: Json): void {
    const old = this.schemas[name];
    if (old && JSON.stringify(old) !== JSON.stringify(schema)) throw new Error(`OpenAPI component ${name} is defined twice, differently`);
    this.schemas[name] = schema;
  }

  /**
   * A zod schema as JSON Schema whose named parts (schemas with a meta `id`)
   * become components: zod's `#/$defs/X` references are rewritten to
   * `#/components/schemas/X`, so every reference resolves, recursive ones too.
   */
  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const json = z.toJSONSchema(schema, {
      io,
      unrepresentable: 'any',
      target: 'draft-2020-12',
      // Answers may gain fields; request bodies are strict (unknown fields are refused).
      override: (ctx) => {
        if (io === 'output' && ctx.jsonSchema.additionalProperties === false) delete ctx.jsonSchema.additionalProperties;
        // Any JSON value is the empty schema: the recursive union says the same, but
        // some generators cannot type a union that contains itself (openapi-typescript).
        if ((ctx.zodSchema as unknown) === JsonValue) {
          for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as Json)[k];
          Object.assign(ctx.jsonSchema, { description: 'Any JSON value' });
        }
      },
    }) as Json;
    const defs = (json.$defs ?? {}) as Record<string, Json>;
    delete json.$defs;
    delete json.$schema;
    delete json.id;
    for (const [name, def] of Object.entries(defs)) {
      if (name.startsWith('__schema')) throw new Error(`an unnamed shared schema (${name}): give it a meta id`);
      delete def.id;
      this.put(name, relink(def) as Json);
    }
    return relink(json) as Json;
  }

  /** Convert and name: a `$ref` to the new component. */
  named(name: string, schema: z.ZodType, io: 'input' | 'output'): Json {
    const json = this.convert(schema, io);
    // A schema with its own id converts to a reference to itself, already added.
    if (json.$ref !== REF(name).$ref) this.put(name, json);
    return REF(name);
  }
}

/**
 * zod writes `X | null` as `anyOf: [X, {type: "null"}]`; for a plain X,
 * `type: [X's type, "null"]` says the same and every generator understands it.
 */
function nullableType(v: Json): Json | undefined {
  const any = v.anyOf;
  if (!Array.isArray(any) || any.length !== 2 || Object.keys(v).some((k) => k !== 'anyOf' && k !== 'description')) return undefined;
  const i = any.findIndex((s: Json) => s.type === 'null' && Object.keys(s).length === 1);
  const other = any[1 - i] as Json | undefined;
  if (i < 0 || !other || typeof other.type !== 'string' || 'enum' in other || 'const' in other) return undefined;
  return { ...other, type: [other.type, 'null'], ...(v.description === undefined ? {} : { description: v.description }) };
}

/** zod's `#/$defs/X` references as components, nullable types merged, integers and numbers given their width. */
function relink(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(relink);
  if (v === null || typeof v !== 'object') return v;
  const merged = nullableType(v as Json);
  if (merged) return relink(merged);
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = k === '$ref' && typeof x === 'string' ? x.replace(/^#\/\$defs\//, '#/components/schemas/') : relink(x);
  }
  widthOf(out);
  return out;
}

const pascal = (s: string) => s.replace(/(^|[_-])([a-z])/g, (_, __, c: string) => c.toUpperCase());

/** The error codes a call may answer: its own, plus those every call of its kind may. */
function errorCodesOf(r: AnyRoute, hasBody: boolean): ErrorCode[] {
  const codes = new Set<ErrorCode>(['invalid_request']);
  if (r.auth) codes.add('invalid_credential').add('access_denied').add('rate_limited');
  if (hasBody) codes.add('payload_too_large').add('unsupported_media_type');
  for (const c of r.errors ?? []) codes.add(c);
  codes.add('internal_error').add('backend_unavailable');
  return [...codes];
}

function errorResponses(codes: readonly ErrorCode[], conflictExample: object | false): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(STATUS_OF[c], [...(byStatus.get(STATUS_OF[c]) ?? []), c]);
  const out: Json = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const media: Json = { schema: REF(ERROR_SCHEMA_OF[status]!) };
    if (status === 409 && conflictExample) media.example = conflictExample;
    const headers: Json = { 'X-Correlation-Id': HEADER('CorrelationId') };
    if (list.some((c) => RETRYABLE_STATUS.has(STATUS_OF[c]))) headers['Retry-After'] = HEADER('RetryAfter');
    if (status === 405) headers.Allow = HEADER('Allow');
    out[String(status)] = {
      description: list.map((c) => `\`${c}\`: ${MEANING[c]}`).join('; '),
      headers,
      content: { 'application/json': media },
    };
  }
  return out;
}

/**
 * One event of the stream as an object (`event`, `id` for changes, `data`),
 * the shape OpenAPI 3.2 gives sequential media types with `itemSchema`: the
 * union tells a generator every event type and its data.
 */
function feedEventSchema(): z.ZodType {
  const frames = Object.entries(FeedEvents).map(([name, data]) =>
    z.object({ event: z.literal(name), ...(name === 'change' ? { id: z.number().int().describe('The change’s revision') } : {}), data }),
  );
  return z.union(frames as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]).describe('One Server-Sent Event: its type, id (changes only) and JSON data');
}

function streamDescription(): string {
  const lines = Object.entries(FeedEvents).map(([name, s]) => `- \`${name}\`: ${(s.meta()?.description as string | undefined) ?? ''} (data: ${s.meta()?.id as string})`);
  return [
    'Server-Sent Events. Each event is `event: <type>`, `id: <revision>` for changes, and one `data:` line holding a JSON object;',
    'a comment line (`: hb`) comes every `heartbeat_ms`. Event types and the schema of their data:',
    '',
    ...lines,
    '',
    'Resuming: with `since` (or `Last-Event-ID`), `hello` carries `resumed: true` and the changes after that revision matching the',
    'registrations are replayed, in revision order, before live events, with no gap and no duplicate between them; when the server',
    'cannot replay, `hello` carries `resumed: false` and `resync` follows the `subscribed` events. Renewal hints and release requests',
    'are never replayed.',
    '',
    'A stream refused (bad selector, missing grant, a cap) answers a JSON error, not a stream. The start of a stream:',
    '',
    '```',
    STREAM_EXAMPLE.trimEnd(),
    '```',
  ].join('\n');
}

const cache = new Map<string, Json>();

/** The document for this server version (built once per version). */
export function openApiDocument(version: string): Json {
  const hit = cache.get(version);
  if (hit) return hit;
  const c = new Components();
  for (const [status, name] of Object.entries(ERROR_SCHEMA_OF)) {
    const codes = ERROR_CODES.filter((code) => STATUS_OF[code] === Number(status));
    c.put(name, c.convert(ErrorBody.extend({ code: z.enum(codes as [ErrorCode, ...ErrorCode[]]) }), 'output'));
  }

  const paths: Record<string, Json> = {};
  for (const r of ROUTES) {
    const operationId = OPERATION_IDS[r.operation];
    const params: Json[] = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      description: m[1] === 'realm' || m[1] === 'area' || m[1] === 'resource' ? `The route’s ${m[1]} segment (percent-encoded)` : `The ${m[1]!.replace('_', ' ')}`,
      schema: { type: 'string' },
    }));
    const query = c.convert(r.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      const p: Json = { name, in: 'query', required: (query.required ?? []).includes(name), schema };
      if (typeof schema.description === 'string') p.description = schema.description;
      if (r.repeatable?.includes(name)) {
        p.style = 'form';
        p.explode = true;
      }
      params.push(p);
    }
    if (r.stream) {
      params.push({
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        description: 'Sent by browsers on reconnection: resume after this revision, as `since` (which wins). One that is not a revision is answered with `resync` (`epoch`), never refused',
        schema: { type: 'string' },
      });
    }
    const bodyProps = (c.convert(r.body, 'input') as { properties?: object }).properties ?? {};
    const hasBody = Object.keys(bodyProps).length > 0;
    const example = EXAMPLES[r.operation];
    const successHeaders: Json = { 'X-Correlation-Id': HEADER('CorrelationId') };
    if ('request_id' in bodyProps) successHeaders['Idempotent-Replay'] = HEADER('IdempotentReplay');
    const success: Json = r.stream
      ? {
          description: `\`${r.success.code}\`: the stream`,
          headers: successHeaders,
          content: { 'text/event-stream': { schema: { ...c.named('FeedEvent', feedEventSchema(), 'output'), description: streamDescription() } } },
        }
      : {
          description: `\`${r.success.code}\``,
          headers: successHeaders,
          content: {
            'application/json': {
              schema: c.named(
                `${pascal(operationId)}Response`,
                z.object({ status: z.literal('success'), code: z.literal(r.success.code), correlation_id: z.string(), ...Answers[r.operation].shape }),
                'output',
              ),
              ...(example ? { example: example.response } : {}),
            },
          },
        };
    const op: Json = {
      operationId,
      summary: r.summary,
      tags: [TAG_OF[r.operation]],
      parameters: params,
      security: r.auth ? [{ bearer: [] }] : [],
      responses: { [String(r.success.status)]: success, ...errorResponses(errorCodesOf(r, hasBody), r.operation === 'lease_acquire' ? CONFLICT_EXAMPLE : r.operation === 'session_acquire' ? BATCH_CONFLICT_EXAMPLE : false) },
    };
    if (hasBody) {
      const body: Json = { schema: c.named(`${pascal(operationId)}Request`, r.body, 'input') };
      if (example?.request) body.example = example.request;
      op.requestBody = { required: true, content: { 'application/json': body } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }

  // The probes: plain bodies for load balancers and supervisors, not the envelope.
  const plain = (description: string, id: string, schema: z.ZodType): Json => ({ description, content: { 'application/json': { schema: c.named(id, schema, 'output') } } });
  const probe = (operationId: string, summary: string, responses: Json): Json => ({
    get: { operationId, summary, tags: ['service'], security: [], responses: { ...responses, ...errorResponses(['method_not_allowed'], false) } },
  });
  paths['/api/v1/health'] = probe('getHealth', 'Liveness and store status (a plain body for load balancers, not the envelope)', {
    200: plain('The store answers', 'Health', HealthOk),
    503: plain('The store is unavailable', 'HealthUnavailable', HealthUnavailable),
  });
  paths['/api/v1/health/live'] = probe('getHealthLive', 'Liveness probe: the process runs (restart it when this fails; never for a store outage)', {
    200: plain('The process runs', 'HealthLive', HealthLive),
  });
  paths['/api/v1/health/ready'] = probe('getHealthReady', 'Readiness probe: send this instance traffic (503 from the first moment of a graceful shutdown)', {
    200: plain('Ready', 'HealthReady', HealthReady),
    503: plain('Draining, or the store is unavailable', 'HealthNotReady', HealthNotReady),
  });
  paths['/api/metrics'] = {
    get: {
      operationId: 'getMetrics',
      summary: 'Prometheus text exposition for the whole instance',
      description: 'Needs a root token, or none when LEASEHOLD_METRICS_PUBLIC=true; 404 when LEASEHOLD_METRICS=off.',
      tags: ['service'],
      security: [{ bearer: [] }, {}],
      responses: {
        200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...errorResponses(['invalid_credential', 'access_denied', 'not_found', 'internal_error'], false),
      },
    },
  };
  paths['/api/v1/openapi.json'] = {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      tags: ['service'],
      security: [],
      responses: {
        200: { description: 'The OpenAPI 3.1 document of this API', content: { 'application/json': { schema: { type: 'object' } } } },
        ...errorResponses(['method_not_allowed'], false),
      },
    },
  };
  paths['/api/v1/openapi-3.0.json'] = {
    get: {
      operationId: 'getOpenApi30Document',
      summary: 'This document as OpenAPI 3.0.3, for generators that read nothing newer (Swagger Codegen)',
      tags: ['service'],
      security: [],
      responses: {
        200: { description: 'The OpenAPI 3.0.3 document of this API: the same API, said without 3.1’s keywords', content: { 'application/json': { schema: { type: 'object' } } } },
        ...errorResponses(['method_not_allowed'], false),
      },
    },
  };

  const doc: Json = {
    openapi: '3.1.0',
    info: {
      title: 'Leasehold API',
      version,
      summary: 'Fenced, time-bounded, exclusive leases on lease://realm/area/resource',
      description:
        'Every answer is an envelope: `status` (`success` or `error`), `code`, `correlation_id` (also the `X-Correlation-Id` header), then the call’s fields. ' +
        'Errors add `message`, `retryable` and, when known, `retry_after_ms`. Answers may gain fields: clients ignore unknown ones. ' +
        'Times are RFC 3339 UTC with milliseconds; durations are integer milliseconds.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      {
        url: '{origin}',
        description: 'A Leasehold server, by its origin (the API lives under /api/v1)',
        variables: { origin: { default: 'http://localhost:3000', description: 'Scheme, host and port: the default is a local server on the default PORT' } },
      },
    ],
    tags: TAGS,
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A Leasehold token: `Authorization: Bearer <token>`' } },
      headers: HEADERS,
      schemas: c.schemas,
    },
  };
  cache.set(version, doc);
  return doc;
}
