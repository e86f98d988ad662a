/**
 * One HTTP call to the API, with the envelope unwrapped, errors typed and, for
 * calls that are safe to repeat, bounded jittered retries. A mutation is safe
 * to repeat only because it carries a request_id that every retry reuses: the
 * server then replays the first answer instead of acting twice (docs/semantics.md §6).
 */

import { LeaseholdError } from './errors';
import { assertPageOrigin, validateConfig } from './config';
import { backoffMs, sleep, systemClock, type Clock, type Random } from './runtime';

export interface RetryPolicy {
  /** Attempts in all, the first included (default 5). */
  attempts: number;
  /** First backoff ceiling (default 100 ms); it doubles each attempt. */
  baseDelayMs: number;
  /** Backoff ceiling (default 2 s). A server's `retry_after_ms` is honoured up to this too. */
  maxDelayMs: number;
}

export interface TransportOptions {
  /**
   * The server's origin, e.g. `http://127.0.0.1:8080` (http or https, no
   * query or fragment). Required outside a browser; in a browser, omit it
   * for the page's own origin.
   */
  baseUrl?: string | undefined;
  /**
   * A bearer token. Without one, a browser sends the console's cookie (same
   * origin only). `undefined` is accepted (`token: process.env.LEASEHOLD_TOKEN`
   * compiles under `exactOptionalPropertyTypes`) and means no token.
   */
  token?: string | undefined;
  fetch?: typeof fetch | undefined;
  retry?: Partial<RetryPolicy>;
  /** Per-attempt deadline for calls that do not wait on the server (default 10 s). */
  timeoutMs?: number;
  clock?: Clock;
  random?: Random;
}

/**
 * How a call may be retried: `safe` (a read), `idempotent` (a mutation with a
 * request_id), or `never` (a mutation that cannot be told apart from a repeat).
 */
export type RetryMode = 'safe' | 'idempotent' | 'never';

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
  retry: RetryMode;
  signal?: AbortSignal;
  /** Per-attempt deadline instead of the client's (a renewal must not wait longer than it has). */
  timeoutMs?: number;
  /** Extra time the server may legitimately hold the call (a waiting acquire). */
  extraTimeoutMs?: number;
  /**
   * Statuses whose JSON body is the answer although they are not 2xx: health's
   * 503 carries `{ status: 'unavailable', store }` (docs/api.md "HealthUnavailable").
   */
  answerStatuses?: readonly number[];
}

export interface Answer<T> {
  data: T;
  status: number;
  correlationId: string | undefined;
  replay: boolean;
}

type Envelope = Record<string, unknown> & { status?: unknown; code?: unknown };

export class Transport {
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly clock: Clock;
  readonly random: Random;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  readonly #fetch: typeof fetch;

  /** Throws `invalid_config` (at once, not retryable) when the options cannot work. */
  constructor(opts: TransportOptions = {}) {
    const config = validateConfig(opts);
    this.baseUrl = config.baseUrl;
    this.token = config.token;
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.retry = { attempts: 5, baseDelayMs: 100, maxDelayMs: 2000, ...opts.retry };
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.#fetch = config.fetch.bind(globalThis);
  }

  /** The call's URL; throws `invalid_config` when there is no baseUrl and no page origin to resolve against. */
  url(path: string, query?: CallOptions['query']): string {
    if (this.baseUrl === '') assertPageOrigin();
    let url = this.baseUrl + path;
    if (query) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const item of v) params.append(k, item);
        else params.append(k, String(v));
      }
      const qs = params.toString();
      if (qs) url += `?${qs}`;
    }
    return url;
  }

  /** Headers and credentials for any request to the API (bearer token, else cookie). */
  init(method: string, body?: unknown, signal?: AbortSignal): RequestInit {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.token !== undefined) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      // A bearer token never travels with cookies; without one, only the
      // page's own origin gets the console's cookie.
      credentials: this.token !== undefined ? 'omit' : 'same-origin',
      cache: 'no-store',
      signal,
    };
  }

  /** The raw fetch, for the stream. */
  fetch(url: string, init: RequestInit): Promise<Response> {
    return this.#fetch(url, init);
  }

  /**
   * Perform a call, retrying per `opts.retry`. Resolves with the envelope's
   * payload; throws LeaseholdError (the server's refusal, or a client code).
   */
  async call<T>(method: string, path: string, opts: CallOptions): Promise<Answer<T>> {
    const url = this.url(path, opts.query);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, url, opts);
      } catch (e) {
        if (!(e instanceof LeaseholdError) || !this.mayRetry(e, opts.retry) || attempt >= this.retry.attempts) throw e;
        if (opts.signal?.aborted) throw e;
        const wait = Math.max(
          backoffMs(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, this.random),
          Math.min(e.retryAfterMs ?? 0, this.retry.maxDelayMs),
        );
        await sleep(wait, this.clock, opts.signal);
      }
    }
  }

  mayRetry(e: LeaseholdError, mode: RetryMode): boolean {
    if (mode === 'never') return false;
    switch (e.code) {
      case 'network_error':
      case 'timeout':
      case 'backend_unavailable':
      case 'outcome_unknown':
      case 'rate_limited':
        return true;
      case 'idempotency_conflict':
        // Retryable only while the first attempt is still running on the server.
        return mode === 'idempotent' && e.retryable;
      default:
        return false;
    }
  }

  async once<T>(method: string, url: string, opts: CallOptions): Promise<Answer<T>> {
    const deadline = new AbortController();
    let timedOut = false;
    const timer = this.clock.setTimeout(() => {
      timedOut = true;
      deadline.abort();
    }, (opts.timeoutMs ?? this.timeoutMs) + (opts.extraTimeoutMs ?? 0));
    const onAbort = (): void => deadline.abort(opts.signal?.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      let res: Response;
      let text: string;
      try {
        res = await this.fetch(url, this.init(method, opts.body, deadline.signal));
        text = await res.text();
      } catch (cause) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        const target = `${method} ${url.split('?')[0]}`;
        throw new LeaseholdError({
          code: timedOut ? 'timeout' : 'network_error',
          message: timedOut ? `no answer to ${target} within its deadline` : `no answer to ${target}: ${networkReason(cause)}`,
          retryable: true,
          cause,
        });
      }
      return parseAnswer<T>(res, text, opts.answerStatuses);
    } finally {
      this.clock.clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }
}

const NETWORK_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'the connection closed',
};

/**
 * Why a fetch failed, in words. Node's fetch only says `fetch failed` and
 * keeps the reason (ECONNREFUSED, ENOTFOUND, …) in its `cause` chain; a
 * browser's message is all there is.
 */
export function networkReason(e: unknown): string {
  let cur: unknown = e;
  for (let depth = 0; cur instanceof Error && depth < 5; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_REASONS[code] !== undefined) return NETWORK_REASONS[code];
    if (!(cur.cause instanceof Error)) return cur.message;
    cur = cur.cause;
  }
  return String(cur);
}

/** Unwrap the envelope (docs/semantics.md "The wire"), or throw the error it carries. */
export function parseAnswer<T>(res: Response, text: string, answerStatuses?: readonly number[]): Answer<T> {
  const correlationId = res.headers.get('x-correlation-id') ?? undefined;
  let body: Envelope | undefined;
  try {
    const parsed: unknown = text === '' ? undefined : JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Envelope;
  } catch {
    body = undefined;
  }
  if (body !== undefined && (res.ok || (answerStatuses?.includes(res.status) === true && body.status !== 'error'))) {
    return { data: body as T, status: res.status, correlationId, replay: res.headers.get('idempotent-replay') === 'true' };
  }
  if (body !== undefined && body.status === 'error' && typeof body.code === 'string') {
    return throwEnvelope(res.status, body, correlationId);
  }
  throw new LeaseholdError({
    code: res.status === 503 ? 'backend_unavailable' : 'invalid_response',
    message: `unexpected answer (HTTP ${res.status})`,
    status: res.status,
    retryable: res.status === 503,
    correlationId,
  });
}

function throwEnvelope(status: number, body: Envelope, correlationId: string | undefined): never {
  throw new LeaseholdError({
    code: body.code as LeaseholdError['code'],
    message: typeof body.message === 'string' ? body.message : String(body.code),
    status,
    retryable: body.retryable === true,
    retryAfterMs: typeof body.retry_after_ms === 'number' ? body.retry_after_ms : undefined,
    lockDelayUntil: typeof body.lock_delay_until === 'string' ? Date.parse(body.lock_delay_until) : undefined,
    held: Array.isArray(body.held) ? body.held.filter((r): r is string => typeof r === 'string') : undefined,
    queueTicket: typeof body.queue_ticket === 'string' ? body.queue_ticket : undefined,
    correlationId: typeof body.correlation_id === 'string' ? body.correlation_id : correlationId,
    fromServer: true,
  });
}
