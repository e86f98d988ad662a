/**
 * The router: matching a request path against the route table, and parsing
 * what a path or query string carries (lease routes, query parameters),
 * validated against the route's schemas. Every refusal is `invalid_request`.
 */

import type { z } from 'zod';
import { parseRoute } from '@/lib/selector';
import { fail } from '../engine/core/errors';
import { ROUTES, type RouteDef } from './routes';
import { FAST_PATHS } from './schemas';

export interface Compiled {
  def: RouteDef;
  segments: string[];
}

export interface Match {
  def: RouteDef;
  params: Record<string, string>;
}

/** The route table, split into segments (the metrics routes only when metrics are on). */
export function compile(withMetrics: boolean): Compiled[] {
  return ROUTES.filter((def) => withMetrics || !def.metrics).map((def) => ({ def, segments: def.path.split('/') }));
}

const lengths = new WeakMap<readonly Compiled[], Map<number, Compiled[]>>();

/** The table's routes by segment count (in table order), made once per table. */
function byLength(compiled: readonly Compiled[]): Map<number, Compiled[]> {
  let m = lengths.get(compiled);
  if (!m) {
    m = new Map();
    for (const c of compiled) {
      const list = m.get(c.segments.length);
      if (list) list.push(c);
      else m.set(c.segments.length, [c]);
    }
    lengths.set(compiled, m);
  }
  return m;
}

/** Every route whose pattern matches the path's segments (several when only the method differs). */
export function matchPath(compiled: readonly Compiled[], segments: string[]): Match[] {
  const out: Match[] = [];
  for (const c of byLength(compiled).get(segments.length) ?? []) {
    // The literal segments first: a params object only for the routes that match (one or two of ~40).
    let ok = true;
    for (let i = 0; i < segments.length; i++) {
      const p = c.segments[i]!;
      if (p.charCodeAt(0) !== 0x7b && p !== segments[i]) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    const params: Record<string, string> = {};
    for (let i = 0; i < segments.length; i++) {
      const p = c.segments[i]!;
      if (p.charCodeAt(0) === 0x7b) params[p.slice(1, -1)] = segments[i]!;
    }
    out.push({ def: c.def, params });
  }
  return out;
}

export function decodeSegment(raw: string): string {
  if (raw === '' || raw === '.' || raw === '..') fail('invalid_request', 'empty, "." or ".." path segment');
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    fail('invalid_request', 'badly encoded path segment');
  }
}

/** Routes already found valid (a client names the same few again and again); emptied when full. */
const validRoutes = new Set<string>();
const MAX_VALID_ROUTES = 4_096;

/** The route named by a lease path's three segments, validated, never normalized. */
export function pathRoute(params: Record<string, string>): string {
  const route = `lease://${decodeSegment(params.realm!)}/${decodeSegment(params.area!)}/${decodeSegment(params.resource!)}`;
  if (validRoutes.has(route)) return route;
  const r = parseRoute(route);
  if (!r.ok) fail('invalid_request', `route ${r.reason}`);
  if (validRoutes.size >= MAX_VALID_ROUTES) validRoutes.clear();
  validRoutes.add(r.value.route);
  return r.value.route;
}

/** Query string → object; a repeated parameter is refused unless `repeatable` (those are always arrays). */
export function parseQuery(qs: string, repeatable: readonly string[] = []): Record<string, string | string[]> {
  // No prototype: `__proto__` (or `constructor`) is then a parameter like any
  // other, refused as unknown or repeated, never a setter that swallows it.
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const k of repeatable) out[k] = [];
  if (qs === '') return out;
  let params: URLSearchParams;
  try {
    // URLSearchParams never throws on bad escapes; check them first.
    decodeURIComponent(qs.replace(/\+/g, ' '));
    params = new URLSearchParams(qs);
  } catch {
    fail('invalid_request', 'badly encoded query string');
  }
  for (const [k, v] of params) {
    const list = out[k];
    if (Array.isArray(list)) {
      list.push(v);
      continue;
    }
    if (Object.hasOwn(out, k)) fail('invalid_request', `query parameter ${JSON.stringify(k)} is repeated`);
    out[k] = v;
  }
  return out;
}

/**
 * True when the schema's hand-written check (schemas.ts, FAST_PATHS) accepts
 * `value`: it accepts only what the schema accepts and would return
 * unchanged, so `value` is already the schema's output
 * (server/http/fast-paths.test.ts holds each check to its schema).
 */
function fastAccepts<T>(schema: z.ZodType<T>, value: unknown): value is T {
  const fast = FAST_PATHS.get(schema);
  return fast !== undefined && fast(value);
}

/** A body or query checked against its schema; the first issue becomes `invalid_request` naming the field. */
export function validate<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  // The hot bodies skip zod when their hand-written check accepts them.
  if (fastAccepts(schema, value)) return value;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.length > 0 ? issue.path.join('.') : what;
  const message =
    issue.code === 'unrecognized_keys' ? `unknown ${what === 'query' ? 'query parameter' : 'field'} ${issue.keys.join(', ')}` : `${at}: ${issue.message}`;
  fail('invalid_request', message);
}
