/**
 * The API adapter: Node's request/response in, the route table's thin
 * handlers in the middle. It owns the contract's order of checks:
 * unknown path or method (404/405) → credentials (401) → malformed route or
 * selector (400) → permission (403) → media type, size, body (415/413/400) →
 * (the engine:) idempotency lookup → semantics. It is the one place that maps
 * errors to answers; handlers carry no try/catch.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseRoute } from '@/lib/selector';
import type { z } from 'zod';
import type { LeaseEngine } from '../engine/engine';
import { LeaseholdError, fail } from '../engine/errors';
import { parseJsonBody, readBody, MAX_BODY_BYTES } from './body';
import { errorBody, STATUS_OF, successBody } from './envelope';
import { correlationId } from '../engine/ids';
import type { HealthOk, HealthUnavailable } from './answers';
import { openApiDocument } from './openapi';
import { LOGIN_COOKIE, ROUTES, STREAMED, type ApiRequest, type RouteDef } from './routes';
import { SseSink } from './sse';
import { authorize } from '../engine/tokens';
import type { Principal } from '../engine/tokens';
import type { Caller } from '../engine/audit';
import type { MetricsCollector, RequestOutcome } from '../metrics/collector';

/** The health answers, typed by the schemas the OpenAPI document shows. */
type Health = z.output<typeof HealthOk> | z.output<typeof HealthUnavailable>;

export interface ApiOptions {
  /** Origins allowed to call with a bearer token from a browser (CORS, never with credentials). */
  corsOrigins?: readonly string[];
  version?: string;
  /** The origin browsers use (`LEASEHOLD_PUBLIC_ORIGIN`); else taken from the Host header. */
  publicOrigin?: string;
  /** Where unexpected errors are logged (with their correlation id). */
  log?: (line: string) => void;
  /**
   * Metrics on: `GET /api/metrics` and the summary route are served, and every
   * answered request is reported to the collector. Off (absent): both are
   * unknown paths and nothing is measured.
   */
  metrics?: { collector: MetricsCollector; public: boolean };
}

interface Compiled {
  def: RouteDef;
  segments: string[];
}

function compile(withMetrics: boolean): Compiled[] {
  return ROUTES.filter((def) => withMetrics || !def.metrics).map((def) => ({ def, segments: def.path.split('/') }));
}

function matchPath(compiled: readonly Compiled[], segments: string[]): Array<{ def: RouteDef; params: Record<string, string> }> {
  const out: Array<{ def: RouteDef; params: Record<string, string> }> = [];
  for (const c of compiled) {
    if (c.segments.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < segments.length; i++) {
      const p = c.segments[i]!;
      if (p.startsWith('{')) params[p.slice(1, -1)] = segments[i]!;
      else if (p !== segments[i]) {
        ok = false;
        break;
      }
    }
    if (ok) out.push({ def: c.def, params });
  }
  return out;
}

function decodeSegment(raw: string): string {
  if (raw === '' || raw === '.' || raw === '..') fail('invalid_request', 'empty, "." or ".." path segment');
  try {
    return decodeURIComponent(raw);
  } catch {
    fail('invalid_request', 'badly encoded path segment');
  }
}

/** The route named by a lease path's three segments, validated, never normalized. */
function pathRoute(params: Record<string, string>): string {
  const route = `lease://${decodeSegment(params.realm!)}/${decodeSegment(params.area!)}/${decodeSegment(params.resource!)}`;
  const r = parseRoute(route);
  if (!r.ok) fail('invalid_request', `route ${r.reason}`);
  return r.value.route;
}

/** Query string → object; a repeated parameter is refused unless `repeatable` (those are always arrays). */
function parseQuery(qs: string, repeatable: readonly string[] = []): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
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

function validate<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.length > 0 ? issue.path.join('.') : what;
  const message =
    issue.code === 'unrecognized_keys' ? `unknown ${what === 'query' ? 'query parameter' : 'field'} ${issue.keys.join(', ')}` : `${at}: ${issue.message}`;
  fail('invalid_request', message);
}

function bearer(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer ([!-~]{1,512})$/i.exec(h);
  if (!m) fail('invalid_credential', 'Authorization must be "Bearer <token>"');
  return m[1]!;
}

function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/**
 * Cookie-authenticated mutations must come from the console's own origin
 * (CONTRACT.md §10): `Sec-Fetch-Site: same-origin`, or an `Origin` equal to
 * the public origin.
 */
function sameOrigin(req: IncomingMessage, publicOrigin: string | undefined): boolean {
  if (req.headers['sec-fetch-site'] === 'same-origin') return true;
  const origin = req.headers.origin;
  if (!origin) return false;
  if (publicOrigin) return origin === publicOrigin;
  const host = req.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const NO_PRINCIPAL: Principal = { tokenId: '', name: '', family: '', grants: [], root: false, kind: 'api', expiresAt: null };

/** What dispatch learns about a request, for its outcome (only when metrics are on); `code` stays '' until it is answered. */
type Trace = RequestOutcome;

/** Build the `/api/*` request handler over an engine. */
export function createApiHandler(engine: LeaseEngine, opts: ApiOptions = {}) {
  const cors = new Set(opts.corsOrigins ?? []);
  const log = opts.log ?? ((l: string) => console.error(l));
  const version = opts.version ?? '0.0.0';
  const metrics = opts.metrics;
  const compiled = compile(metrics !== undefined);

  /** CORS answer headers for an allowed origin (bearer tokens only: never with credentials). */
  function corsHeaders(req: IncomingMessage): Record<string, string> {
    const origin = req.headers.origin;
    if (!origin || !cors.has(origin)) return {};
    return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': 'X-Correlation-Id, Idempotent-Replay, Retry-After', Vary: 'Origin' };
  }

  function send(req: IncomingMessage, res: ServerResponse, status: number, body: object, cid: string, extra: Record<string, string> = {}): void {
    if (res.headersSent || res.destroyed) return;
    const text = JSON.stringify(body);
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Correlation-Id': cid,
      ...extra,
    };
    Object.assign(headers, corsHeaders(req));
    res.writeHead(status, headers);
    res.end(req.method === 'HEAD' ? undefined : text);
  }

  function sendError(req: IncomingMessage, res: ServerResponse, e: unknown, cid: string, extra: Record<string, string> = {}): void {
    if (e instanceof LeaseholdError) {
      if (e.code === 'invalid_credential') engine.audit.count('invalid_credential');
      const headers = { ...extra };
      if (e.retryAfterMs !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(e.retryAfterMs / 1000)));
      send(req, res, STATUS_OF[e.code], errorBody(e.code, e.message, cid, e.retryable, e.retryAfterMs), cid, headers);
      return;
    }
    log(`[${cid}] unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    send(req, res, 500, errorBody('internal_error', 'internal error', cid, false), cid);
  }

  /** The principal of a bearer token, else of the console's login cookie, else `invalid_credential`. */
  async function authenticate(token: string | undefined, loginCookie: string | undefined): Promise<Principal> {
    if (token !== undefined) return engine.tokens.authenticate(token);
    if (loginCookie !== undefined) return engine.tokens.authenticateLogin(loginCookie);
    fail('invalid_credential', 'a bearer token or a console login is required');
  }

  /** `GET /api/metrics`: the Prometheus text, for a root token (or anyone when public). */
  async function serveMetrics(req: IncomingMessage, res: ServerResponse, cid: string, trace: Trace | undefined): Promise<void> {
    if (!metrics) fail('not_found', 'no such API path');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw Object.assign(new LeaseholdError('method_not_allowed', 'this path takes GET, HEAD'), { allow: 'GET, HEAD' });
    }
    if (!metrics.public) {
      const principal = await authenticate(bearer(req), readCookie(req, LOGIN_COOKIE));
      if (trace) trace.family = principal.family;
      if (!principal.root) {
        engine.audit.note({ caller: principal, type: 'access_denied', route: null, success: '' }, 'access_denied');
        fail('access_denied', 'the metrics need a root token');
      }
    }
    const text = await metrics.collector.exposition();
    if (res.headersSent || res.destroyed) return;
    res.writeHead(200, {
      'Content-Type': metrics.collector.contentType,
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Correlation-Id': cid,
      ...corsHeaders(req),
    });
    res.end(req.method === 'HEAD' ? undefined : text);
    if (trace) trace.code = 'metrics';
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse, cid: string, trace: Trace | undefined): Promise<void> {
    const startedAt = engine.store.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const qs = q < 0 ? '' : url.slice(q + 1);

    if (path === '/api/metrics') {
      if (trace) trace.operation = 'metrics';
      return serveMetrics(req, res, cid, trace);
    }
    if (path === '/api/v1/health' || path === '/api/v1/openapi.json') {
      if (trace) trace.operation = path === '/api/v1/health' ? 'health' : 'openapi';
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        throw Object.assign(new LeaseholdError('method_not_allowed', 'this path takes GET, HEAD'), { allow: 'GET, HEAD' });
      }
      if (path === '/api/v1/openapi.json') {
        send(req, res, 200, openApiDocument(version), cid);
        return;
      }
      const ok = await engine.healthy();
      const store = engine.store.kind;
      const body: Health = ok ? { status: 'ok', store, epoch: engine.store.epoch(), version, uptime_ms: engine.uptimeMs() } : { status: 'unavailable', store };
      send(req, res, ok ? 200 : 503, body, cid);
      return;
    }

    const candidates = matchPath(compiled, path.split('/'));
    if (candidates.length === 0) fail('not_found', 'no such API path');
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const allow = [...new Set(candidates.flatMap((c) => (c.def.method === 'GET' ? ['GET', 'HEAD'] : [c.def.method])))];
    if (method === 'OPTIONS') {
      const origin = req.headers.origin;
      const headers: Record<string, string> = { Allow: [...allow, 'OPTIONS'].join(', ') };
      if (origin && cors.has(origin)) {
        headers['Access-Control-Allow-Origin'] = origin;
        headers['Access-Control-Allow-Methods'] = allow.join(', ');
        headers['Access-Control-Allow-Headers'] = 'Authorization, Content-Type';
        headers['Access-Control-Max-Age'] = '600';
        headers.Vary = 'Origin';
      }
      res.writeHead(204, { ...headers, 'X-Correlation-Id': cid });
      res.end();
      return;
    }
    const hit = candidates.find((c) => c.def.method === method);
    if (!hit) {
      throw Object.assign(new LeaseholdError('method_not_allowed', `this path takes ${allow.join(', ')}`), { allow: allow.join(', ') });
    }
    const { def, params } = hit;
    if (trace) trace.operation = def.operation;

    // A bearer token wins over the console's cookie when both are present.
    const token = bearer(req);
    const loginCookie = readCookie(req, LOGIN_COOKIE);
    const viaCookie = token === undefined && loginCookie !== undefined;
    let principal: Caller = NO_PRINCIPAL;
    if (def.auth) {
      principal = { ...(await authenticate(token, loginCookie)), request: { correlationId: cid, startedAt } };
      if (trace) trace.family = principal.family;
    }
    const route = params.realm !== undefined ? pathRoute(params) : '';
    // Every refusal from here to the permission check is an audited access_denied.
    const denied = (message: string) => {
      engine.audit.note({ caller: principal, type: 'access_denied', route: route || null, success: '' }, 'access_denied');
      fail('access_denied', message);
    };
    if (viaCookie && !SAFE_METHODS.has(req.method ?? 'GET') && !sameOrigin(req, opts.publicOrigin)) {
      denied('a cookie-authenticated change must come from the console’s own origin');
    }
    if (principal.kind === 'embed' && !def.embed) denied('an embed token may only read the inventory');

    const rawQuery = parseQuery(qs, def.repeatable);
    if (trace) trace.cursor = typeof rawQuery.cursor === 'string';
    if (params.token_id !== undefined) params.token_id = decodeSegment(params.token_id);

    // The disconnect signal is made only for handlers that ask for it (a
    // waiting acquire): an AbortController per request costs measurable CPU.
    let ac: AbortController | undefined;
    const signal = () => {
      if (!ac) {
        const controller = (ac = new AbortController());
        if (res.destroyed || res.writableFinished) controller.abort();
        else res.on('close', () => res.writableFinished || controller.abort());
      }
      return ac.signal;
    };
    const extraHeaders: Record<string, string> = {};
    const request: ApiRequest = {
      method,
      params,
      query: rawQuery,
      body: {},
      principal,
      route,
      metrics: metrics?.collector,
      get signal() {
        return signal();
      },
      loginCookie,
      viaCookie,
      setHeader: (name, value) => {
        extraHeaders[name] = value;
      },
      authorize: (target, need) => {
        try {
          authorize(principal, target, need);
        } catch (e) {
          if (e instanceof LeaseholdError && e.code === 'access_denied') denied(e.message);
          throw e;
        }
      },
      openSse: () => new SseSink(res, { 'X-Correlation-Id': cid, ...corsHeaders(req) }),
      // Secure whenever the browser is on https: the public origin says so, the
      // socket is TLS, or a TLS-terminating proxy says so (marking a cookie
      // Secure only ever narrows where it is sent).
      secureCookies:
        (opts.publicOrigin?.startsWith('https:') ?? false) ||
        (req.socket as { encrypted?: boolean }).encrypted === true ||
        req.headers['x-forwarded-proto'] === 'https',
    };
    try {
      def.permit?.(request);
    } catch (e) {
      if (e instanceof LeaseholdError && e.code === 'access_denied') denied(e.message);
      throw e;
    }

    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) fail('payload_too_large', `the body is larger than ${MAX_BODY_BYTES} bytes`);
    const raw = await readBody(req);
    request.body = validate(def.body, parseJsonBody(raw, req.headers['content-type']), 'body') as Record<string, unknown>;
    request.query = validate(def.query, rawQuery, 'query') as Record<string, unknown>;

    if (def.stream && req.method === 'HEAD') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Correlation-Id': cid });
      res.end();
      return;
    }
    const result = (await def.handle(request, engine)) as Record<string, unknown>;
    if (trace) trace.code = def.success.code;
    if (result === STREAMED) return;
    const isOutcome = 'answer' in result && 'replayed' in result;
    const payload = (isOutcome ? result.answer : result) as object;
    const replayed = isOutcome && result.replayed === true;
    if (replayed) extraHeaders['Idempotent-Replay'] = 'true';
    send(req, res, def.success.status, successBody(def.success.code, cid, payload), cid, extraHeaders);
    if (trace) {
      trace.replayed = replayed;
      trace.queued = (payload as { queued?: unknown }).queued === true;
    }
  }

  function fail500(req: IncomingMessage, res: ServerResponse, cid: string, e: unknown): void {
    const allow = (e as { allow?: string }).allow;
    sendError(req, res, e, cid, allow ? { Allow: allow } : {});
  }

  /** Serve one `/api/*` request. Never throws. */
  function api(req: IncomingMessage, res: ServerResponse): void {
    const cid = correlationId();
    dispatch(req, res, cid, undefined).catch((e: unknown) => fail500(req, res, cid, e));
  }

  /**
   * The same, reporting the request's outcome to the metrics once: when it
   * is answered, or when the client leaves before any answer (`client_closed`:
   * a waiting acquire whose client gave up). Requests on unknown paths have
   * no operation and are not reported.
   */
  function measuredApi(collector: MetricsCollector, req: IncomingMessage, res: ServerResponse): void {
    const cid = correlationId();
    const t0 = performance.now();
    const trace: Trace = { operation: '', family: undefined, code: '', ok: false, replayed: false, queued: false, cursor: false, seconds: 0 };
    let reported = false;
    const report = (code: string, ok: boolean) => {
      if (reported || trace.operation === '') return;
      reported = true;
      trace.code = code;
      trace.ok = ok;
      trace.seconds = (performance.now() - t0) / 1000;
      collector.observe(trace);
    };
    res.once('close', () => {
      if (!res.writableFinished && trace.code === '') report('client_closed', false);
    });
    dispatch(req, res, cid, trace).then(
      () => report(trace.code || 'ok', true),
      (e: unknown) => {
        fail500(req, res, cid, e);
        report(e instanceof LeaseholdError ? e.code : 'internal_error', false);
      },
    );
  }

  return metrics ? (req: IncomingMessage, res: ServerResponse) => measuredApi(metrics.collector, req, res) : api;
}
