/**
 * Shared pieces of the SDK conformance tests: a fetch the tests can sabotage
 * (lose an answer after the server acted, cut live streams), a model of the
 * truth read straight from the server, and polling with a deadline.
 */

import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before } from 'node:test';
import { LeaseholdClient } from '@/lib/client';
import { leasePath, rid, startTestServer, type TestServer } from '../../server/testing/harness';
import { waitFor } from '../../server/testing/wait';

type Fetch = typeof fetch;

/** Is this the URL that opens a live stream (not a registration on one)? */
export function isStreamOpen(url: string): boolean {
  return new URL(url).pathname === '/api/v1/inventory/stream';
}

/** Wraps the real fetch; everything still reaches the real server. */
export class ControlledFetch {
  /** `inner` sends the requests (the harness's `s.fetch` spreads them over both instances on PostgreSQL). */
  constructor(private readonly inner: Fetch = fetch) {}
  readonly calls: { method: string; url: string }[] = [];
  #streams = new Set<AbortController>();
  #loseAnswers: ((method: string, url: string) => boolean)[] = [];
  #fail: ((method: string, url: string) => boolean) | undefined;

  readonly fetch: Fetch = async (input, init) => {
    const url = String(input);
    const method = init?.method ?? 'GET';
    this.calls.push({ method, url });
    if (this.#fail?.(method, url)) throw new TypeError('fetch failed (test: network down)');
    if (isStreamOpen(url)) {
      const ctrl = new AbortController();
      this.#streams.add(ctrl);
      const signal = init?.signal ? AbortSignal.any([init.signal, ctrl.signal]) : ctrl.signal;
      return this.inner(input, { ...init, signal });
    }
    const res = await this.inner(input, init);
    const i = this.#loseAnswers.findIndex((p) => p(method, url));
    if (i >= 0) {
      this.#loseAnswers.splice(i, 1);
      await res.arrayBuffer(); // the server has answered; the client never sees it
      throw new TypeError('fetch failed (test: answer lost)');
    }
    return res;
  };

  /** The next call matching `pred` reaches the server, which acts; its answer is then lost. */
  loseNextAnswer(pred: (method: string, url: string) => boolean): void {
    this.#loseAnswers.push(pred);
  }

  /** Calls matching `pred` fail before reaching the server until `failWhile(undefined)`. */
  failWhile(pred: ((method: string, url: string) => boolean) | undefined): void {
    this.#fail = pred;
  }

  /** Cut every live stream opened through this fetch (the client sees a dropped connection). */
  dropStreams(): number {
    const n = this.#streams.size;
    for (const c of this.#streams) c.abort(new Error('test: connection dropped'));
    this.#streams.clear();
    return n;
  }

  count(method: string, fragment: string): number {
    return this.calls.filter((c) => c.method === method && c.url.includes(fragment)).length;
  }
}

/** Poll `check` until it returns true, or fail with `what` after `timeoutMs` (× the CI factor, server/testing/wait.ts). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  await waitFor(what, check, (ok) => ok, timeoutMs);
}

/** The true held set for `selector`, straight from LIST: route → fencing token. */
export async function truth(s: TestServer, selector: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const q = new URLSearchParams({ selector, limit: '1000' });
    if (cursor) q.set('cursor', cursor);
    const r = await s.call('GET', `/api/v1/leases?${q}`);
    assert.equal(r.status, 200, r.text);
    for (const item of r.body.items as { route: string; fencing_token: number }[]) out.set(item.route, item.fencing_token);
    cursor = r.body.next_cursor ?? undefined;
  } while (cursor);
  return out;
}

export function tokensOf(view: ReadonlyMap<string, { fencing_token: number }>): Map<string, number> {
  return new Map([...view].map(([route, lease]) => [route, lease.fencing_token]));
}

interface Held {
  sessionId: string;
  leaseId: string;
  token: number;
}

/** A fleet of raw-HTTP sessions that acquires free routes and releases held ones at random. */
export class Churn {
  readonly held = new Map<string, Held>();
  #sessions: string[] = [];
  constructor(
    private readonly s: TestServer,
    private readonly routes: readonly string[],
    private readonly rand: () => number,
  ) {}

  async init(n = 4): Promise<void> {
    for (let i = 0; i < n; i++) this.#sessions.push((await this.s.openSession(`churn-${i}`, 60_000)).sessionId);
  }

  async step(): Promise<void> {
    await this.toggle(this.routes[Math.floor(this.rand() * this.routes.length)]!);
  }

  /** Acquire free routes, in order, until `n` are held. */
  async fill(n: number): Promise<void> {
    for (const route of this.routes) {
      if (this.held.size >= n) return;
      if (!this.held.has(route)) await this.toggle(route);
    }
  }

  /** Release `route` if held, else acquire it. */
  async toggle(route: string): Promise<void> {
    const h = this.held.get(route);
    if (h) {
      this.held.delete(route);
      const r = await this.s.call('POST', leasePath(route, 'release'), { session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() });
      assert.equal(r.status, 200, r.text);
    } else {
      const sessionId = this.#sessions[Math.floor(this.rand() * this.#sessions.length)]!;
      const r = await this.s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
      assert.equal(r.status, 200, r.text);
      this.held.set(route, { sessionId, leaseId: r.body.lease.lease_id, token: r.body.lease.fencing_token });
    }
  }

  async steps(n: number): Promise<void> {
    for (let i = 0; i < n; i++) await this.step();
  }

  async close(): Promise<void> {
    for (const id of this.#sessions) await this.s.call('POST', '/api/v1/sessions/close', { session_id: id });
    this.#sessions = [];
    this.held.clear();
  }
}

/** A real server for the test file and an SDK client with its root token (started before, closed after). */
export function serverAndClient(): { readonly s: TestServer; readonly client: LeaseholdClient } {
  const box = {} as { s: TestServer; client: LeaseholdClient };
  before(async () => {
    box.s = await startTestServer();
    box.client = new LeaseholdClient({ baseUrl: box.s.url, token: box.s.token });
  });
  after(async () => {
    await box.s.close();
  });
  return box;
}

/** A URL on 127.0.0.1 where nothing listens (a port just freed): connecting to it is refused. */
export async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
