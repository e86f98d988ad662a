/**
 * Request lines: one per answered `/api/*` request when the access log is on
 * (`LEASEHOLD_ACCESS_LOG=on`), and always for server errors (5xx, with the
 * stack of an unexpected error) and slow requests. A request's correlation id
 * (the one its client saw) is in exactly one line.
 *
 * A line holds what identifies the request and its outcome and nothing a
 * caller sent as a secret: never a header, a query string, a body, a token,
 * a session id or a cookie (docs/operations.md, "Logs").
 */

import { errorFields, type LogFields, type Logger } from '../engine';

interface AccessLogOptions {
  logger: Logger;
  /** Every request (at `info`); else only server errors and slow requests. */
  all?: boolean;
  /** Slower than this is a slow request (a `warn` line). Waiting acquires are exempt: they wait on purpose. */
  slowMs?: number;
  /** Server-error and slow lines: at most `burst` of each kind per `windowMs`; the rest are counted, and the count is logged. */
  burst?: number;
  windowMs?: number;
}

/** What the API knows about one request once it is answered (or its client left). */
interface AccessEntry {
  correlationId: string;
  method: string;
  /** The route table's operation, or '' for an unknown path. */
  operation: string;
  family: string | undefined;
  /** The lease route the request named, or ''. */
  route: string;
  status: number;
  code: string;
  latencyMs: number;
  /** The request asked to wait (an acquire with `wait_ms`): never counted as slow. */
  waits: boolean;
  /** The unexpected error behind an `internal_error`. */
  error?: unknown;
}

/** The status logged for a request whose client left before it was answered (nginx's convention). */
export const CLIENT_CLOSED = 499;

export class AccessLog {
  private readonly all: boolean;
  private readonly slowMs: number;
  private readonly burst: number;
  private readonly windowMs: number;
  private readonly windows = new Map<string, { start: number; used: number; suppressed: number }>();
  private reportTimer: ReturnType<typeof setTimeout> | undefined;
  /** Lines not written because their kind was over its budget, by kind, since start. */
  readonly suppressed: Record<string, number> = {};

  constructor(private readonly opts: AccessLogOptions) {
    this.all = opts.all ?? false;
    this.slowMs = opts.slowMs ?? 1_000;
    this.burst = opts.burst ?? 50;
    this.windowMs = opts.windowMs ?? 10_000;
  }

  /**
   * True when `record` would write nothing for a request with these figures
   * (none failed, none slow, not every request logged), so the caller need
   * not make its entry: the common case with the log off.
   */
  quiet(status: number, code: string, latencyMs: number, waits: boolean): boolean {
    return !this.all && status < 500 && code !== 'internal_error' && (waits || latencyMs < this.slowMs);
  }

  /** Log one request's line, if its kind is logged and within budget. */
  record(e: AccessEntry): void {
    // A probe's 503 is its answer (draining, or the store is down), not a failure of this request.
    const failed = (e.status >= 500 && !e.operation.startsWith('health')) || e.code === 'internal_error';
    const slow = !failed && !e.waits && e.latencyMs >= this.slowMs;
    if (!failed && !slow && !this.all) return;
    const level = failed ? 'error' : slow ? 'warn' : 'info';
    const { logger } = this.opts;
    if (!logger.enabled(level)) return;
    if ((failed || slow) && !this.take(failed ? e.code : 'slow')) return;
    const fields: LogFields = {
      correlation_id: e.correlationId,
      method: e.method,
      operation: e.operation || null,
      family: e.family ?? null,
      route: e.route || null,
      status: e.status,
      code: e.code,
      latency_ms: Math.round(e.latencyMs * 100) / 100,
    };
    if (slow) fields.slow = true;
    if (e.code === 'internal_error' && e.error !== undefined) fields.error = errorFields(e.error);
    logger[level](e.code === 'internal_error' ? 'unexpected error' : failed ? 'request failed' : slow ? 'slow request' : 'request', fields);
  }

  /** Stop the pending report, writing what it would have. */
  close(): void {
    if (this.reportTimer) clearTimeout(this.reportTimer);
    this.report();
  }

  /** One line of a budgeted kind: within budget, or counted. */
  private take(kind: string): boolean {
    const now = performance.now();
    let w = this.windows.get(kind);
    if (!w || now - w.start >= this.windowMs) {
      const carried = w?.suppressed ?? 0;
      this.windows.set(kind, (w = { start: now, used: 0, suppressed: carried }));
    }
    if (w.used < this.burst) {
      w.used++;
      return true;
    }
    w.suppressed++;
    this.suppressed[kind] = (this.suppressed[kind] ?? 0) + 1;
    this.reportTimer ??= setTimeout(() => {
      this.reportTimer = undefined;
      this.report();
    }, this.windowMs);
    this.reportTimer.unref?.();
    return false;
  }

  /** A line per kind that had lines suppressed since the last report, with the count. */
  private report(): void {
    for (const [kind, w] of this.windows) {
      if (w.suppressed === 0) continue;
      this.opts.logger.warn('log lines suppressed', { kind, suppressed: w.suppressed, window_ms: this.windowMs, burst: this.burst });
      w.suppressed = 0;
    }
  }
}
