/**
 * The bootstrap sequence of docs/semantics.md §8 (register, buffer, list to the
 * end, apply newer revisions) converges to the true held set, with the held
 * set changing at every step of it: while the registration is in flight,
 * between its acknowledgement and the first page, between pages, and right
 * after the last one. The SDK owns this sequence (InventoryObserver, docs/sdk.md); here the
 * test drives it by hand against the real server.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { leasePath, prng, rid, startTestServer, type TestServer } from '../testing/harness';
import { SseClient } from '../testing/sse';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.close();
});

interface Held {
  sessionId: string;
  leaseId: string;
  token: number;
}

/** A churning fleet of our own sessions over `routes`: each step acquires a free route or releases a held one. */
class Churn {
  readonly held = new Map<string, Held>();
  private sessions: string[] = [];
  constructor(
    private readonly routes: string[],
    private readonly rand: () => number,
  ) {}

  async init(): Promise<void> {
    for (let i = 0; i < 4; i++) this.sessions.push((await s.openSession(`w${i}`)).sessionId);
  }

  async step(): Promise<void> {
    const route = this.routes[Math.floor(this.rand() * this.routes.length)]!;
    const h = this.held.get(route);
    if (h) {
      this.held.delete(route);
      const r = await s.call('POST', leasePath(route, 'release'), { session_id: h.sessionId, lease_id: h.leaseId, fencing_token: h.token, request_id: rid() });
      assert.equal(r.status, 200, r.text);
    } else {
      const sessionId = this.sessions[Math.floor(this.rand() * this.sessions.length)]!;
      const r = await s.call('POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid() });
      if (r.status === 200) this.held.set(route, { sessionId, leaseId: r.body.lease.lease_id, token: r.body.lease.fencing_token });
      else assert.equal(r.body.code, 'lease_conflict', r.text); // a concurrent step of ours took it
    }
  }

  /** `n` steps, `parallel` at a time. */
  async run(n: number, parallel = 4): Promise<void> {
    let left = n;
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (left-- > 0) await this.step();
      }),
    );
  }
}

interface Page {
  items: Array<{ route: string; fencing_token: number }>;
  revision: number;
  next_cursor: string | null;
}

async function listAll(selector: string, limit: number, between: () => Promise<void> = async () => {}): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const q = `selector=${encodeURIComponent(selector)}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await s.call('GET', `/api/v1/leases?${q}`);
    assert.equal(r.status, 200, r.text);
    pages.push(r.body as Page);
    cursor = r.body.next_cursor;
    if (cursor) await between();
  } while (cursor);
  return pages;
}

/** The revision of the page whose key range covered `route` (pages resume after their last item). */
function coveringRevision(pages: Page[], route: string): number {
  for (const p of pages) {
    const last = p.items[p.items.length - 1];
    if (p.next_cursor === null || (last && route <= last.route)) return p.revision;
  }
  throw new Error('unreachable: the last page covers the rest');
}

for (const seed of [1, 2, 3, 4]) {
  test(`bootstrap converges to the true held set while it changes at every step (seed ${seed})`, async () => {
    const selector = `lease://boot${seed}/**`;
    const routes = Array.from({ length: 60 }, (_, i) => `lease://boot${seed}/${i % 3 === 0 ? 'a' : 'b'}/r${String(i).padStart(2, '0')}`);
    const churn = new Churn(routes, prng(seed));
    await churn.init();
    await churn.run(40); // a populated inventory to begin with

    // 1. Open the stream, register while the held set changes (some changes land before the acknowledgement).
    const c = await SseClient.open(s.url, '/api/v1/inventory/stream', { token: s.token });
    const hello = await c.waitFor((e) => e.event === 'hello');
    const during = churn.run(12);
    const reg = await s.call('POST', `/api/v1/inventory/streams/${hello.data.stream_id}/subscriptions`, { selector });
    assert.equal(reg.status, 200, reg.text);
    await during;
    // 2. Between the acknowledgement and the first page.
    await churn.run(8);
    // 3. During pagination (small pages, changes between them).
    const pages = await listAll(selector, 4, () => churn.run(3, 2));
    assert.ok(pages.length >= 4, `expected several pages, got ${pages.length}`);
    // 4. Right after the snapshot.
    await churn.run(10);

    // Everything published has been delivered once a final marker change arrives.
    const marker = `lease://boot${seed}/z/marker`;
    const m = await s.openSession('marker');
    assert.equal((await s.call('POST', leasePath(marker, 'acquire'), { session_id: m.sessionId, request_id: rid() })).status, 200);
    await c.waitFor((e) => e.event === 'change' && e.data.route === marker);

    // Install the snapshot, then apply buffered changes newer than the page that covered their route.
    const view = new Map<string, number>();
    for (const p of pages) for (const item of p.items) view.set(item.route, item.fencing_token);
    let applied = 0;
    for (const e of c.events) {
      if (e.event !== 'change' || e.data.subscription_id !== reg.body.subscription_id) continue;
      if (e.data.revision <= coveringRevision(pages, e.data.route)) continue;
      applied++;
      if (e.data.change === 'acquired') view.set(e.data.route, e.data.lease.fencing_token);
      else view.delete(e.data.route);
    }
    assert.ok(applied > 0, 'changes after the snapshot were applied');

    const truth = new Map<string, number>();
    for (const p of await listAll(selector, 1_000)) for (const item of p.items) truth.set(item.route, item.fencing_token);
    assert.deepEqual([...view].sort(), [...truth].sort());
    // And the truth is what our own sessions hold.
    assert.deepEqual([...truth.keys()].filter((r) => r !== marker).sort(), [...churn.held.keys()].sort());

    // Revisions on the stream only grow.
    const revs = c.of('change').map((e) => e.data.revision as number);
    assert.deepEqual(revs, [...revs].sort((x, y) => x - y));
    c.close();
  });
}
