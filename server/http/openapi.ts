/**
 * The OpenAPI 3.1 document, generated from the route table and its zod
 * schemas: the API is described once, where it is validated.
 */

import { z } from 'zod';
import { ERROR_CODES } from '../engine/errors';
import { STATUS_OF } from './envelope';
import { ROUTES } from './routes';

function schemaOf(s: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

let cached: object | undefined;

export function openApiDocument(version: string): object {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const query = schemaOf(r.query) as { properties?: Record<string, object>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      params.push({ name, in: 'query', required: (query.required ?? []).includes(name), schema } as never);
    }
    const body = schemaOf(r.body) as { properties?: object };
    const op: Record<string, unknown> = {
      operationId: r.operation,
      summary: r.summary,
      parameters: params,
      security: r.auth ? [{ bearer: [] }] : [],
      responses: {
        [String(r.success.status)]: {
          description: r.success.code,
          content: r.stream
            ? { 'text/event-stream': { schema: { type: 'string', description: 'hello, subscribed, change, renewed, overflow and closed events (HTTP.md)' } } }
            : { 'application/json': { schema: { $ref: '#/components/schemas/Success' } } },
        },
        default: { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    };
    if (body.properties && Object.keys(body.properties).length > 0) {
      op.requestBody = { required: true, content: { 'application/json': { schema: body } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  paths['/api/v1/health'] = { get: { operationId: 'health', summary: 'Liveness and store status', security: [], responses: { 200: { description: 'ok' }, 503: { description: 'store unavailable' } } } };
  paths['/api/v1/health/live'] = { get: { operationId: 'health_live', summary: 'The process runs (liveness probe)', security: [], responses: { 200: { description: 'ok' } } } };
  paths['/api/v1/health/ready'] = {
    get: { operationId: 'health_ready', summary: 'Send this instance traffic (readiness probe)', security: [], responses: { 200: { description: 'ready' }, 503: { description: 'store unavailable, schema mismatch, or draining' } } },
  };
  paths['/api/metrics'] = {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus text exposition for the whole instance: a root token, or none when LEASEHOLD_METRICS_PUBLIC=true; 404 when LEASEHOLD_METRICS=off',
      security: [{ bearer: [] }, {}],
      responses: {
        200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } },
        default: { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    },
  };
  paths['/api/v1/openapi.json'] = { get: { operationId: 'openapi', summary: 'This document', security: [], responses: { 200: { description: 'OpenAPI 3.1' } } } };
  cached = {
    openapi: '3.1.0',
    info: { title: 'Leasehold API', version },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Success: {
          type: 'object',
          required: ['status', 'code', 'correlation_id'],
          properties: { status: { const: 'success' }, code: { type: 'string' }, correlation_id: { type: 'string' } },
        },
        Error: {
          type: 'object',
          required: ['status', 'code', 'message', 'correlation_id', 'retryable'],
          properties: {
            status: { const: 'error' },
            code: { enum: ERROR_CODES.filter((c) => c !== 'internal_error') },
            message: { type: 'string' },
            correlation_id: { type: 'string' },
            retryable: { type: 'boolean' },
            retry_after_ms: { type: 'integer' },
          },
          'x-status-of-code': STATUS_OF,
        },
      },
    },
  };
  return cached;
}
