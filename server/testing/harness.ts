/**
 * Test support: a real server (real SQLite store in a temporary directory,
 * real HTTP on a free loopback port) and a small JSON client. Never a mock.
 */

import type { Scheduler, TimerHandle } from '../engine/scheduler';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAppServer, type AppServer, type AppServerOptions } from '../app-server';

/** A clock tests move by hand, so engine tests never sleep for expiry. */
export class ManualClock implements Scheduler {
  private timers: Array<{ at: number; every: number; fn: () => void; seq: number }> = [];
  private seq = 0;
  constructor(public t = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now = (): number => this.t;
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
  private add(ms: number, every: number, fn: () => void): TimerHandle {
    const timer = { at: this.t + ms, every, fn, seq: this.seq++ };
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
  app: AppServer;
  url: string;
  /** The bootstrap root admin token (grants `lease://**#admin`, family `default`). */
  token: string;
  dataDir: string;
  call(method: string, path: string, body?: unknown, opts?: CallOptions): Promise<Reply>;
  /** Open a session with the admin token; returns its session_id and incarnation. */
  openSession(ownerId?: string, ttlMs?: number, token?: string): Promise<{ sessionId: string; incarnation: string }>;
  /** Create a token with these grants (by the admin token unless `by` is given). */
  createToken(grants: string[], extra?: Record<string, unknown>, by?: string): Promise<string>;
  close(): Promise<void>;
}

let counter = 0;
/** A fresh request_id. */
export function rid(prefix = 'r'): string {
  return `${prefix}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** `lease://a/b/c` → `/api/v1/leases/a/b/c` (+ `/action`). */
export function leasePath(route: string, action?: string): string {
  const body = route.slice('lease://'.length);
  const p = `/api/v1/leases/${body.split('/').map(encodeURIComponent).join('/')}`;
  return action ? `${p}/${action}` : p;
}

/** Start a real server on a free port over a fresh (or given) data directory. */
export async function startTestServer(opts: Partial<AppServerOptions> & { keepDir?: boolean } = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  const bootstrapSecret = opts.engine?.bootstrapSecret ?? `lh_test_bootstrap_${Math.random().toString(36).slice(2)}xxxxxxxx`;
  const app = await startAppServer({ ...opts, dataDir, engine: { ...opts.engine, bootstrapSecret }, log: opts.log ?? (() => {}) });
  const url = app.url;
  const token = bootstrapSecret;
  const ts: TestServer = {
    app,
    url,
    token,
    dataDir,
    call: (method, path, body, o = {}) => call(url, method, path, body, { ...o, token: o.token === null ? undefined : (o.token ?? token) }),
    async openSession(ownerId = 'worker', ttlMs = 15_000, tok = token) {
      const r = await call(url, 'POST', '/api/v1/sessions', { owner_id: ownerId, ttl_ms: ttlMs }, { token: tok });
      if (r.status !== 201) throw new Error(`openSession: ${r.status} ${r.text}`);
      return { sessionId: r.body.session.session_id as string, incarnation: r.body.session.holder_incarnation as string };
    },
    async createToken(grants, extra = {}, by = token) {
      const r = await call(url, 'POST', '/api/v1/tokens', { name: 'test', grants, ...extra }, { token: by });
      if (r.status !== 201) throw new Error(`createToken: ${r.status} ${r.text}`);
      return r.body.token as string;
    },
    async close() {
      await app.close();
      if (!opts.keepDir && !opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return ts;
}
