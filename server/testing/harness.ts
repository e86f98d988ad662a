/**
 * Test support: a real server (real SQLite store in a temporary directory,
 * real HTTP on a free loopback port) and a small JSON client. Never a mock.
 */

import type { Scheduler, TimerHandle } from '../engine/core/scheduler';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAppServer, type AppServer, type AppServerOptions } from '../app-server';
import { captureLogger, noteSecrets } from './log-capture';
import { millis, type Millis } from '../store/millis';
import { createTestDatabase, dropTestDatabase, type Backend } from './pg';

/**
 * The store HTTP-level tests run against: `LEASEHOLD_TEST_STORE=postgres`
 * runs them on two instances sharing one fresh PostgreSQL database (the
 * unit script's second pass, docs/design.md "Testing on both stores");
 * anything else is SQLite.
 */
export const TEST_STORE: Backend = process.env.LEASEHOLD_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** A clock tests move by hand, so engine tests never sleep for expiry. */
export class ManualClock implements Scheduler {
  private timers: Array<{ at: number; ms: number; every: number; fn: () => void; seq: number }> = [];
  private seq = 0;
  constructor(public t = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now = (): Millis => millis(this.t);
  /** Move time forward, running every timer that falls due on the way, in due order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.t = Math.max(this.t, due.at);
      if (due.every > 0) due.at += due.every;
      else this.timers = this.timers.filter((x) => x !== due);
      due.fn();
    }
    this.t = end;
  }
  after(ms: number, fn: () => void): TimerHandle {
    return this.add(ms, 0, fn);
  }
  every(ms: number, fn: () => void): TimerHandle {
    return this.add(ms, Math.max(1, ms), fn);
  }
  /** A mark for `armedSince`: the timers armed after this call. */
  mark(): number {
    return this.seq;
  }
  /** When the earliest pending one-shot timer of `ms` armed since `mark` falls due; undefined while there is none. */
  armedSince(mark: number, ms: number): number | undefined {
    const due = this.timers.filter((x) => x.seq >= mark && x.every === 0 && x.ms === ms).map((x) => x.at);
    return due.length === 0 ? undefined : Math.min(...due);
  }
  private add(ms: number, every: number, fn: () => void): TimerHandle {
    const timer = { at: this.t + ms, ms, every, fn, seq: this.seq++ };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((x) => x !== timer)) };
  }
}

/** mulberry32: a small seeded PRNG in [0, 1), so randomized tests name the seed that reproduces them. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function tempDir(prefix = 'leasehold-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: any; 
  text: string;
}

export interface CallOptions {
  token?: string | null;
  headers?: Record<string, string>;
  /** Send this exact body (string or bytes) instead of JSON-encoding `body`. */
  raw?: string | Buffer;
  signal?: AbortSignal;
  /** The connection pool (a shared keep-alive agent unless given). */
  agent?: Agent;
}

/** One HTTP request with a JSON body; resolves with status, headers and parsed body. */
export function call(baseUrl: string, method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<Reply> {
  const url = new URL(baseUrl);
  const payload = opts.raw !== undefined ? opts.raw : body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string | number> = { ...opts.headers };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  if (payload !== undefined) {
    if (opts.raw === undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path, headers, agent: opts.agent ?? keepAliveAgent, signal: opts.signal },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // Leave non-JSON bodies as text.
          }
          noteSecrets(headers, body, parsed, res.headers['set-cookie']);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

const keepAliveAgent = new Agent({ keepAlive: true, maxSockets: 256 });

export interface TestServer {
  /** Instance A: its engine and store (on PostgreSQL, B runs beside it on the same database). */
  app: AppServer;
  /** Every instance: [A] on SQLite, [A, B] on PostgreSQL. */
  apps: AppServer[];
  backend: Backend;
  /** PostgreSQL: the database both instances use. */
  databaseUrl: string | undefined;
  /** Instance A's base URL. */
  url: string;
  /** Every instance's base URL, A first. */
  urls: string[];
  /** The bootstrap root admin token (grants `lease://**#admin`, family `default`). */
  token: string;
  dataDir: string;
  /** One request; on PostgreSQL successive calls alternate between A and B. */
  call(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<Reply>;
  /** A `fetch` for clients (the SDK) given `url`: on PostgreSQL it sends successive requests to A and B in turn. */
  fetch: typeof fetch;
  /** Open a session with the admin token; returns its session_id and incarnation. */
  openSession(ownerId?: string, ttlMs?: number, token?: string): Promise<{ sessionId: string; incarnation: string }>;
  /** Create a token with these grants (by the admin token unless `by` is given). */
  createToken(grants: string[], extra?: Record<string, unknown>, by?: string): Promise<string>;
  /**
   * A call whose answer depends on another instance having heard of a change
   * (a revoked token is refused by the other instance when the revoke's
   * notification arrives: milliseconds, 1 s at most, docs/design.md): on
   * SQLite one call; on PostgreSQL repeated while `until` is false, for at
   * most 1 s. Returns the last answer.
   */
  settledCall(method: string, path: string, body: unknown, opts: CallOptions, until: (r: Reply) => boolean): Promise<Reply>;
  /** Write every instance's buffered audit events (a read flushes only its own instance's buffer). */
  flushAudit(): Promise<void>;
  close(): Promise<void>;
}

let counter = 0;
/** A fresh request_id. */
/**
 * Resolves once the first request to `app` with this method and path has
 * closed on the server's side (answered, or its client gone). A test that
 * aborts a request waits on this, not on time, for the server to have seen
 * the client leave: the server's own `close` listeners ran before this one's.
 */
export function requestClosed(app: AppServer, method: string, path: string): Promise<void> {
  return new Promise((resolve) => {
    const seen = (req: IncomingMessage, res: ServerResponse): void => {
      if (req.method !== method || req.url !== path) return;
      app.server.off('request', seen);
      res.once('close', () => resolve());
    };
    app.server.on('request', seen);
  });
}

export function rid(prefix = 'r'): string {
  return `${prefix}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** `lease://a/b/c` → `/api/v1/leases/a/b/c` (+ `/action`). */
export function leasePath(route: string, action?: string): string {
  const body = route.slice('lease://'.length);
  const p = `/api/v1/leases/${body.split('/').map(encodeURIComponent).join('/')}`;
  return action ? `${p}/${action}` : p;
}

/** Databases bound to a caller's data directory (a restart on it finds the same one): dropped when the test process ends. */
const boundDatabases = new Set<string>();
process.once('beforeExit', () => {
  void Promise.all([...boundDatabases].map((name) => dropTestDatabase(name).catch(() => undefined)));
  boundDatabases.clear();
});

export interface TestServerOptions extends Partial<AppServerOptions> {
  keepDir?: boolean;
  /**
   * false: every call goes to A, and B does no background sweeps (it still
   * runs on the same database, hearing A's notifications): A alone observes
   * the workload. For what is per process by design, such as Prometheus
   * metrics.
   */
  spread?: boolean;
  /** The store (TEST_STORE unless given). */
  backend?: Backend;
}

/**
 * Start a real server on a free port over a fresh (or given) data directory.
 * On PostgreSQL (TEST_STORE, or `backend`) two instances on one fresh
 * database, with `call` and `fetch` alternating between them; a given data
 * directory keeps its database across restarts. `wrapStore` decorates A's
 * store only, and then every call goes to A (a gate on one instance's steps
 * says nothing about the other's).
 */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const backend = opts.backend ?? TEST_STORE;
  const dataDir = opts.dataDir ?? tempDir();
  const bootstrapSecret = opts.engine?.bootstrapSecret ?? `lh_test_bootstrap_${Math.random().toString(36).slice(2)}xxxxxxxx`;
  // Under scripts/test-unit.sh every server's log, every request line included, is kept for the run's secrets scan.
  const capture = opts.logger ? undefined : captureLogger();
  const base = { ...opts, dataDir, engine: { ...opts.engine, bootstrapSecret }, logger: opts.logger ?? capture, accessLog: opts.accessLog ?? (capture && { all: true }) };
  let apps: AppServer[];
  let databaseUrl: string | undefined;
  let dropDb: (() => Promise<void>) | undefined;
  if (backend === 'postgres') {
    const bound = join(dataDir, 'test-database');
    if (opts.dataDir && existsSync(bound)) databaseUrl = readFileSync(bound, 'utf8');
    else {
      const db = await createTestDatabase({ migrated: true });
      databaseUrl = db.url;
      if (opts.dataDir || opts.keepDir) {
        writeFileSync(bound, db.url);
        boundDatabases.add(db.name);
      } else dropDb = db.drop;
    }
    // B: its own port and data directory, A's store undecorated, and A's
    // origin as the public one (two instances behind one address, as deployed).
    const { wrapStore: _wrapped, port: _port, ...rest } = base;
    const dirB = tempDir();
    try {
      const a = await startAppServer({ ...base, databaseUrl });
      const quietB = opts.spread === false ? { engine: { ...rest.engine, sweepIntervalMs: 2 ** 31 - 1 } } : {};
      apps = [a, await startAppServer({ ...rest, ...quietB, publicOrigin: opts.publicOrigin ?? a.url, dataDir: dirB, databaseUrl }).catch(async (e: unknown) => {
        await a.close();
        throw e;
      })];
    } catch (e) {
      await dropDb?.();
      throw e;
    }
    const inner = dropDb;
    dropDb = async () => {
      rmSync(dirB, { recursive: true, force: true });
      await inner?.();
    };
  } else {
    apps = [await startAppServer(base)];
  }
  const app = apps[0]!;
  const urls = apps.map((a) => a.url);
  // Calls spread over the instances, except when A's store is decorated (see above) or asked not to.
  const targets = opts.wrapStore || opts.spread === false ? [urls[0]!] : urls;
  let turn = 0;
  const next = () => targets[turn++ % targets.length]!;
  const url = app.url;
  const token = bootstrapSecret;
  const ts: TestServer = {
    app,
    apps,
    backend,
    databaseUrl,
    url,
    urls,
    token,
    dataDir,
    call: (method, path, body, o = {}) => call(next(), method, path, body, { ...o, token: o.token === null ? undefined : (o.token ?? token) }),
    fetch: (input, init) => {
      const target = next();
      if (typeof input === 'string' && input.startsWith(url)) return fetch(target + input.slice(url.length), init);
      if (input instanceof URL && input.origin === url) return fetch(new URL(input.pathname + input.search, target), init);
      return fetch(input, init);
    },
    async openSession(ownerId = 'worker', ttlMs = 15_000, tok = token) {
      const r = await call(next(), 'POST', '/api/v1/sessions', { owner_id: ownerId, ttl_ms: ttlMs }, { token: tok });
      if (r.status !== 201) throw new Error(`openSession: ${r.status} ${r.text}`);
      return { sessionId: r.body.session.session_id as string, incarnation: r.body.session.holder_incarnation as string };
    },
    async createToken(grants, extra = {}, by = token) {
      const r = await call(next(), 'POST', '/api/v1/tokens', { name: 'test', grants, ...extra }, { token: by });
      if (r.status !== 201) throw new Error(`createToken: ${r.status} ${r.text}`);
      return r.body.token as string;
    },
    async settledCall(method, path, body, o, until) {
      const deadline = Date.now() + 1_000;
      for (;;) {
        const r = await ts.call(method, path, body, o);
        if (backend === 'sqlite' || until(r) || Date.now() > deadline) return r;
        await new Promise((res) => setTimeout(res, 10));
      }
    },
    async flushAudit() {
      await Promise.all(apps.map((a) => a.engine.audit.flush()));
    },
    async close() {
      await Promise.all(apps.map((a) => a.close()));
      await dropDb?.();
      if (!opts.keepDir && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ts;
}

/**
 * A stand-in for the console that, like Next, answers 500 to a method
 * fetch's `Request` refuses (TRACE, TRACK, CONNECT) and 200 to the rest:
 * the server must never hand it such a request. Records what reached it.
 */
export function consoleLikeFallback(seen: string[] = []): NonNullable<TestServerOptions['fallback']> {
  return (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    try {
      new Request(`http://console${req.url}`, { method: req.method });
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('console\n');
    } catch {
      res.writeHead(500);
      res.end();
    }
  };
}
