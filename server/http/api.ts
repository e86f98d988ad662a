/**
 * The API adapter: Node's request/response in, the route table's thin
 * handlers in the middle. It owns the contract's order of checks (the check
 * pipeline, here and nowhere else):
 * unknown path or method (404/405) → credentials (401) → malformed route or
 * selector (400) → permission (403) → media type, size, body (415/413/400) →
 * (the engine:) idempotency lookup → semantics. Errors become answers in one
 * place (respond.ts); handlers carry no try/catch.
 *
 * Each concern has its own file: router.ts (paths, queries, schemas),
 * credentials.ts (bearer, cookie, same-origin), cors.ts, respond.ts.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { correlationId, authorize, silentLogger, type LeaseEngine } from '../engine';
import type { Caller, RequestInfo, Principal } from '../engine/core/model';
import { LeaseholdError, fail } from '../engine/core/errors';
import { bufferedBody, parseJsonBody, readBody, MAX_BODY_BYTES } from './body';
import { successJson } from './envelope';
import type { z } from 'zod';
import type { HealthOk, HealthUnavailable } from './answers';
import { openApiDocument } from './openapi';
import { openApi30Document } from './openapi-30';
import { STREAMED, type ApiRequest } from './routes';
import { SseSink } from './sse';
import type { Triple } from '@/lib/selector';
import type { Permission } from '@/lib/grants';
import type { MetricsCollector, RequestOutcome } from '../metrics/collector';
import { AccessLog, CLIENT_CLOSED } from './access-log';
import { LIVE_PATH, probe, READY_PATH, type DrainState } from './health';
import { compile, decodeSegment, matchPath, parseQuery, pathRoute, validate, type Match } from './router';
import { authenticate, bearer, fromAnotherOrigin, LOGIN_COOKIE, NO_PRINCIPAL, onHttps, readCookie, SAFE_METHODS, sameOrigin } from './credentials';
import { Cors } from './cors';
import { Responder } from './respond';

interface ApiOptions {
  /** Origins allowed to call with a bearer token from a browser (CORS, never with credentials). */
  corsOrigins?: readonly string[];
  version?: string;
  /** The origin browsers use (`LEASEHOLD_PUBLIC_ORIGIN`); else taken from the Host header. */
  publicOrigin?: string;
  /** Request lines, and unexpected errors with their correlation id (silent when absent). */
  accessLog?: AccessLog;
  /** Set once a graceful shutdown begins: readiness answers 503. */
  drain?: DrainState;
  /**
   * Metrics on: `GET /api/metrics` and the summary route are served, and every
   * answered request is reported to the collector. Off (absent): both are
   * unknown paths and nothing is measured.
   */
  metrics?: { collector: MetricsCollector; public: boolean };
}

/** The health answers, typed by the schemas the OpenAPI document shows. */
type Health = z.output<typeof HealthOk> | z.output<typeof HealthUnavailable>;

/** What dispatch learns about a request, for its metrics and its log line; `code` stays '' until it is answered. */
/** `left`: the client went away while its request waited (reported as client_closed, whatever was answered after). */
type Trace = RequestOutcome & { route: string; waits: boolean; left: boolean; error: unknown };

/** The `Last-Event-ID` header, when present and not empty (a repeated header is joined, so it is not a revision). */
function lastEventId(req: IncomingMessage): string | undefined {
  const h = req.headers['last-event-id'];
  return h === undefined || h === '' ? undefined : String(h);
}

const getOrHead = () => Object.assign(new LeaseholdError('method_not_allowed', 'this path takes GET, HEAD'), { allow: 'GET, HEAD' });

/** The methods a path takes, from the routes matching it (a GET route takes HEAD too). */
function allowedMethods(candidates: readonly Match[]): string[] {
  return [...new Set(candidates.flatMap((c) => (c.def.method === 'GET' ? ['GET', 'HEAD'] : [c.def.method])))];
}

/** An audited `access_denied`: every refusal from the path's route to the permission check. */
function deny(engine: LeaseEngine, caller: Caller, route: string, message: string): never {
  engine.audit.note({ caller, type: 'access_denied', route: route || null, success: '' }, 'access_denied');
  fail('access_denied', message);
}

/** Build the `/api/*` request handler over an engine. */
export function createApiHandler(engine: LeaseEngine, opts: ApiOptions = {}) {
  const cors = new Cors(opts.corsOrigins);
  // Unexpected errors are logged by the access log, in the request's one line (with the stack).
  const respond = new Responder(engine, cors);
  const accessLog = opts.accessLog ?? new AccessLog({ logger: silentLogger });
  const drain = opts.drain ?? { draining: false };
  const version = opts.version ?? '0.0.0';
  const metrics = opts.metrics;
  const compiled = compile(metrics !== undefined);

  /** `GET /api/metrics`: the Prometheus text, for a root token (or anyone when public). */
  async function serveMetrics(req: IncomingMessage, res: ServerResponse, cid: string, trace: Trace | undefined): Promise<void> {
    if (!metrics) fail('not_found', 'no such API path');
    if (req.method !== 'GET' && req.method !== 'HEAD') throw getOrHead();
    if (!metrics.public) {
      const principal = await authenticate(engine, bearer(req), readCookie(req, LOGIN_COOKIE));
      if (trace) trace.family = principal.family;
      if (!principal.root) {
        engine.audit.note({ caller: principal, type: 'access_denied', route: null, success: '' }, 'access_denied');
        fail('access_denied', 'the metrics need a root token');
      }
    }
    const text = await metrics.collector.exposition();
    respond.raw(req, res, 200, text, metrics.collector.contentType, cid);
    if (trace) trace.code = 'metrics';
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse, cid: string, trace: Trace | undefined): Promise<void> {
    const startedAt = engine.health.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const qs = q < 0 ? '' : url.slice(q + 1);

    if (path === '/api/metrics') {
      if (trace) trace.operation = 'metrics';
      return serveMetrics(req, res, cid, trace);
    }
    if (path === LIVE_PATH || path === READY_PATH) {
      if (trace) trace.operation = path === LIVE_PATH ? 'health_live' : 'health_ready';
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        throw Object.assign(new LeaseholdError('method_not_allowed', 'this path takes GET, HEAD'), { allow: 'GET, HEAD' });
      }
      const answer = await probe(path, engine, drain);
      respond.send(req, res, answer.status, answer.body, cid);
      if (trace) trace.code = answer.body.status;
      return;
    }
    if (path === '/api/v1/health' || path === '/api/v1/openapi.json' || path === '/api/v1/openapi-3.0.json') {
      if (trace) trace.operation = path === '/api/v1/health' ? 'health' : 'openapi';
      if (req.method !== 'GET' && req.method !== 'HEAD') throw getOrHead();
      if (path !== '/api/v1/health') {
        respond.send(req, res, 200, path === '/api/v1/openapi.json' ? openApiDocument(version) : openApi30Document(version), cid);
        return;
      }
      const ok = await engine.health.healthy();
      const store = engine.health.storeKind;
      const body: Health = ok ? { status: 'ok', store, epoch: engine.health.epoch(), version, uptime_ms: engine.health.uptimeMs() } : { status: 'unavailable', store };
      respond.send(req, res, ok ? 200 : 503, body, cid);
      return;
    }

    const candidates = matchPath(compiled, path.split('/'));
    if (candidates.length === 0) fail('not_found', 'no such API path');
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    if (method === 'OPTIONS') {
      res.writeHead(204, { ...cors.preflight(req, allowedMethods(candidates)), 'X-Correlation-Id': cid });
      res.end();
      return;
    }
    const hit = candidates.find((c) => c.def.method === method);
    if (!hit) {
      const allow = allowedMethods(candidates);
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
      principal = callerOf(await authenticate(engine, token, loginCookie), { correlationId: cid, startedAt });
      if (trace) trace.family = principal.family;
    }
    const route = params.realm !== undefined ? pathRoute(params) : '';
    if (trace) trace.route = route;
    // Every refusal from here to the permission check is an audited access_denied.
    if (viaCookie && !SAFE_METHODS.has(req.method ?? 'GET') && !sameOrigin(req, opts.publicOrigin)) {
      deny(engine, principal, route, 'a cookie-authenticated change must come from the console’s own origin');
    }
    // Login sets the console's cookie: no page of another origin may log its visitor in (login CSRF).
    if (def.operation === 'login' && fromAnotherOrigin(req, opts.publicOrigin)) {
      deny(engine, principal, route, 'a console login must come from the console’s own origin');
    }
    if (principal.kind === 'embed' && !def.embed) deny(engine, principal, route, 'an embed token may only read the inventory');

    const rawQuery = parseQuery(qs, def.repeatable);
    if (trace) trace.cursor = typeof rawQuery.cursor === 'string';
    if (params.token_id !== undefined) params.token_id = decodeSegment(params.token_id);

    const request = new HttpRequest(req, res, cid, trace, cors, opts.publicOrigin, engine, method, params, rawQuery, principal, route, metrics?.collector, loginCookie, lastEventId(req), viaCookie);
    if (def.permit) {
      try {
        def.permit(request);
      } catch (e) {
        if (e instanceof LeaseholdError && e.code === 'access_denied') deny(engine, principal, route, e.message);
        throw e;
      }
    }

    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) fail('payload_too_large', `the body is larger than ${MAX_BODY_BYTES} bytes`);
    const raw = bufferedBody(req) ?? (await readBody(req));
    request.body = validate(def.body, parseJsonBody(raw, req.headers['content-type']), 'body');
    request.query = validate(def.query, rawQuery, 'query');

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
    if (replayed) request.setHeader('Idempotent-Replay', 'true');
    respond.json(req, res, def.success.status, successJson(def.success.code, cid, payload), cid, request.extraHeaders);
    if (trace) {
      trace.replayed = replayed;
      trace.queued = (payload as { queued?: unknown }).queued === true;
    }
  }

  /**
   * Serve one `/api/*` request (never throws), reporting its outcome once:
   * when it is answered, or when the client leaves before any answer
   * (`client_closed`: a waiting acquire whose client gave up). The metrics
   * get requests on known paths; the access log gets every request.
   */
  function api(req: IncomingMessage, res: ServerResponse): void {
    const cid = correlationId();
    const t0 = performance.now();
    const trace: Trace = { operation: '', family: undefined, code: '', ok: false, replayed: false, queued: false, cursor: false, seconds: 0, route: '', waits: false, left: false, error: undefined };
    let reported = false;
    const report = (code: string, ok: boolean) => {
      if (reported) return;
      reported = true;
      trace.code = code;
      trace.ok = ok;
      trace.seconds = (performance.now() - t0) / 1000;
      if (metrics && trace.operation !== '') metrics.collector.observe(trace);
      const status = code === 'client_closed' ? CLIENT_CLOSED : res.statusCode;
      // With the log off (the default), most requests write no line: no entry is made for them.
      if (accessLog.quiet(status, code, trace.seconds * 1000, trace.waits)) return;
      accessLog.record({ correlationId: cid, method: req.method ?? '', operation: trace.operation, family: trace.family, route: trace.route, status, code, latencyMs: trace.seconds * 1000, waits: trace.waits, error: trace.error });
    };
    // 'close' is emitted once (a plain listener costs less than `once`'s wrapper).
    res.on('close', () => {
      if (!res.writableFinished && trace.code === '') report('client_closed', false);
    });
    dispatch(req, res, cid, trace).then(
      () => (trace.left ? report('client_closed', false) : report(trace.code || 'ok', true)),
      (e: unknown) => {
        respond.error(req, res, e, cid);
        if (!(e instanceof LeaseholdError)) trace.error = e;
        report(trace.left ? 'client_closed' : e instanceof LeaseholdError ? e.code : 'internal_error', false);
      },
    );
  }

  return api;
}

/** The caller of a request: the token's principal (shared, never changed) with this request's id and start. */
function callerOf(p: Principal, request: RequestInfo): Caller {
  // A literal of one shape: spreading the principal cost more than the rest of authentication.
  return { tokenId: p.tokenId, name: p.name, family: p.family, grants: p.grants, root: p.root, kind: p.kind, expiresAt: p.expiresAt, createdBy: p.createdBy, request };
}

/** What a handler sees of its request (routes.ts, ApiRequest): one object of one class per request, no closures. */
class HttpRequest implements ApiRequest {
  readonly method: string;
  readonly params: Record<string, string>;
  query: Record<string, unknown>;
  body: Record<string, unknown> = {};
  readonly principal: Caller;
  readonly route: string;
  readonly metrics: MetricsCollector | undefined;
  readonly loginCookie: string | undefined;
  readonly lastEventId: string | undefined;
  readonly viaCookie: boolean;
  /** Headers a handler added (login and logout set the cookie), and Idempotent-Replay. */
  extraHeaders: Record<string, string> | undefined;
  private ac: AbortController | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly cid: string,
    private readonly trace: Trace | undefined,
    private readonly cors: Cors,
    private readonly publicOrigin: string | undefined,
    private readonly engine: LeaseEngine,
    method: string,
    params: Record<string, string>,
    query: Record<string, unknown>,
    principal: Caller,
    route: string,
    metrics: MetricsCollector | undefined,
    loginCookie: string | undefined,
    lastEventId: string | undefined,
    viaCookie: boolean,
  ) {
    this.method = method;
    this.params = params;
    this.query = query;
    this.principal = principal;
    this.route = route;
    this.metrics = metrics;
    this.loginCookie = loginCookie;
    this.lastEventId = lastEventId;
    this.viaCookie = viaCookie;
  }

  /**
   * Aborted when the client disconnects. Made only for handlers that ask for
   * it (a waiting acquire): an AbortController per request costs measurable CPU.
   */
  get signal(): AbortSignal {
    if (!this.ac) {
      if (this.trace) this.trace.waits = true;
      const controller = (this.ac = new AbortController());
      const res = this.res;
      const socket = this.req.socket;
      if (res.destroyed || res.writableFinished || socket.readableEnded) controller.abort();
      else {
        // The client's FIN ('end' on the socket, which Node answers by aborting
        // the request) comes a loop turn before the response's 'close': a grant
        // decided in between would go to nobody and not be rolled back.
        const gone = () => {
          if (this.trace) this.trace.left = true;
          controller.abort();
        };
        socket.once('end', gone);
        res.on('close', () => {
          socket.removeListener('end', gone);
          if (!res.writableFinished) gone();
        });
      }
    }
    return this.ac.signal;
  }

  /** Marking a cookie Secure only ever narrows where it is sent. */
  get secureCookies(): boolean {
    return onHttps(this.req, this.publicOrigin);
  }

  setHeader(name: string, value: string): void {
    (this.extraHeaders ??= {})[name] = value;
  }

  authorize(target: Triple, need: Permission, route = this.route): void {
    try {
      authorize(this.principal, target, need);
    } catch (e) {
      if (e instanceof LeaseholdError && e.code === 'access_denied') deny(this.engine, this.principal, route, route === this.route ? e.message : `${e.message} (${route})`);
      throw e;
    }
  }

  openSse(): SseSink {
    return new SseSink(this.res, { 'X-Correlation-Id': this.cid, ...this.cors.headers(this.req) });
  }
}
