/**
 * `npm run bench:resume`: what a server restart costs a fleet of observers
 * (docs/benchmarks.md "Resumable feed"), before and after resumable feeds,
 * side by side in one run against the real server (a child process, API only,
 * NODE_ENV=production).
 *
 * N observers (1,000 by default) follow a selector holding L leases (10,000).
 * Each is a raw stream client doing exactly what `observeInventory` does
 * after its stream ends, with the SDK's own pieces (Subscription, the resume
 * policy of lib/client/resume.ts, its backoff): holding a view of 10,000
 * leases 1,000 times over would measure the benchmark's memory, not the
 * server, so the clients count the items they list instead of keeping them.
 *
 *   before  (`resume: false`): a new stream, register the selector, LIST it to
 *           the end (pages of 500, the observer's default), ready;
 *   after   (the default): a new stream with the selector and `since` = the
 *           last revision seen; ready at once when the server resumes, a
 *           LIST to the end only if it answers `resync`.
 *
 * Each mode: the N clients open their streams, 100 changes commit (so there
 * is something to replay), the server is stopped (SIGTERM) and started again
 * on the same port and data directory; then the LIST requests the new process
 * served (its own request metrics), the time from its first listening to the
 * last client ready, and the server's CPU over that recovery (/proc).
 *
 * Knobs: BENCH_RESUME_OBSERVERS (1000), BENCH_RESUME_LEASES (10000),
 * BENCH_RESUME_PAGE (500), BENCH_RESUME_MODES (after,before). At the full size the relisting herd takes minutes
 * on two cores: run it on a quiet machine.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, setGlobalDispatcher } from 'undici';
import { LeaseholdClient, ResumePoint, judgeResume, type Session, type Subscription } from '../lib/client';
import { backoffMs } from '../lib/client/runtime';
import { ensureServerBuilt, killServers, SERVER, spawnListening, stopServer, type ServerProcess, runMain } from '../server/testing/process';
import { cpuMs } from '../server/testing/proc-cpu';

const TOKEN = `lh_bench_resume_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
const OBSERVERS = Number(process.env.BENCH_RESUME_OBSERVERS ?? 1_000);
const LEASES = Number(process.env.BENCH_RESUME_LEASES ?? 10_000);
const SELECTOR = 'lease://bench/fleet/*';
/** `BENCH_RESUME_MODES=after` skips the relisting half (minutes at the full size on a small machine). */
const MODES = (process.env.BENCH_RESUME_MODES ?? 'after,before').split(',').filter((m): m is 'after' | 'before' => m === 'after' || m === 'before');
/** The observer's default page size. */
const PAGE = Number(process.env.BENCH_RESUME_PAGE ?? 500);
/** Streams per token stay under the server's 64. */
const PER_TOKEN = 50;

setTimeout(() => {
  console.error('bench:resume: watchdog: still running after 40 minutes, giving up');
  killServers();
  process.exit(1);
}, 40 * 60_000).unref();

// A thousand streams and their reconnections need more sockets than fetch's default pool keeps idle.
setGlobalDispatcher(new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 30_000 }));

interface Totals {
  lists: number;
  items: number;
  resumed: number;
  relisted: number;
}

/** One observer's stream life after a restart, by the observer's own policy. */
class Follower {
  readonly point = new ResumePoint();
  sub: Subscription | undefined;
  constructor(
    readonly client: LeaseholdClient,
    readonly resume: boolean,
    readonly totals: Totals,
  ) {}

  /** The first stream: registered, and its hello's revision as the starting point (the listing that would follow is not what is measured). */
  async open(): Promise<void> {
    const sub = this.client.subscribe([SELECTOR]);
    const hello = await sub.opened;
    this.point.listed(hello.revision, hello.epoch);
    this.#follow(sub);
  }

  #follow(sub: Subscription): void {
    this.sub = sub;
    sub.on((ev) => {
      if (ev.type === 'change') this.point.applied(ev.revision);
    });
  }

  /** After the stream ended: reconnect with the observer's backoff until ready again. */
  async recover(): Promise<void> {
    for (let failures = 0; ; failures++) {
      if (failures > 1) await new Promise((r) => setTimeout(r, backoffMs(failures - 1, 250, 15_000, Math.random)));
      try {
        await this.#connect();
        return;
      } catch {
        this.sub?.close();
      }
    }
  }

  async #connect(): Promise<void> {
    const { since } = this.point.next(this.resume);
    if (since !== undefined) {
      const sub = this.client.subscribe([SELECTOR], { since });
      let resync = false;
      sub.on((ev) => {
        if (ev.type === 'resync') resync = true;
      });
      this.#follow(sub);
      const hello = await sub.opened;
      // A resync in the same chunk as the hello has been seen by now.
      await new Promise((r) => setImmediate(r));
      const verdict = judgeResume(since, this.point.epoch, hello, resync ? { type: 'resync', reason: 'horizon', revision: hello.revision } : undefined);
      if (verdict.kind === 'resumed') {
        this.totals.resumed++;
        return;
      }
      await this.#list(hello.revision, hello.epoch);
      return;
    }
    const sub = this.client.subscribe([]);
    this.#follow(sub);
    const hello = await sub.opened;
    await sub.add(SELECTOR);
    await this.#list(hello.revision, hello.epoch);
  }

  async #list(revision: number, epoch: string): Promise<void> {
    let cursor: string | undefined;
    let min = Infinity;
    do {
      const page = await this.client.listPage(SELECTOR, { limit: PAGE, cursor });
      this.totals.lists++;
      this.totals.items += page.items.length;
      min = Math.min(min, page.revision);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    this.point.listed(Number.isFinite(min) ? min : revision, epoch);
    this.totals.relisted++;
  }
}


async function listsServed(url: string): Promise<number> {
  const res = await fetch(`${url}/api/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  const text = await res.text();
  let n = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('leasehold_request_duration_seconds_count{') && line.includes('operation="lease_list"')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}

async function main(): Promise<void> {
  ensureServerBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-bench-resume-'));
  const env = (port: string) => ({ PORT: port, LEASEHOLD_CONSOLE: 'off', LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN, LEASEHOLD_MAX_STREAMS: String(OBSERVERS * 2 + 100) });
  let server: ServerProcess = await spawnListening('leasehold', [SERVER], env('0'), 30_000);
  const url = server.url;
  const port = new URL(url).port;
  const admin = new LeaseholdClient({ baseUrl: url, token: TOKEN });
  const sessions: Session[] = [];
  try {
    console.log(`bench:resume: ${OBSERVERS} observers of a ${LEASES}-lease selector, Node ${process.version}, ${new Date().toISOString()}`);
    // The longest session TTL: the relisting herd can starve keepalives for minutes, and the fleet must outlive it.
    for (let i = 0; i < 10; i++) sessions.push(await admin.openSession({ ownerId: `bench-${i}`, ttlMs: 300_000 }));
    let next = 0;
    const fillStart = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let i = next++; i < LEASES; i = next++) {
          await sessions[i % sessions.length]!.acquire(`lease://bench/fleet/r${String(i).padStart(6, '0')}`, { ttlMs: 600_000 });
        }
      }),
    );
    console.log(`fill: ${LEASES} leases in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);
    const tokens: string[] = [];
    for (let i = 0; i < Math.ceil(OBSERVERS / PER_TOKEN); i++) tokens.push((await admin.createToken({ name: `observers-${i}`, grants: [`${SELECTOR}#read`] })).token);

    const results: { mode: string; totals: Totals; servedLists: number; readyMs: number; p50Ms: number; serverCpuMs: number }[] = [];
    // After first: the relisting herd can starve the fleet's keepalives for minutes on a small machine.
    for (const mode of MODES) {
      const totals: Totals = { lists: 0, items: 0, resumed: 0, relisted: 0 };
      const followers = Array.from({ length: OBSERVERS }, (_, i) => new Follower(new LeaseholdClient({ baseUrl: url, token: tokens[Math.floor(i / PER_TOKEN)]! }), mode === 'after', totals));
      for (let i = 0; i < followers.length; i += 100) await Promise.all(followers.slice(i, i + 100).map((f) => f.open()));
      // Changes to replay: releases and re-acquisitions of 50 routes.
      const churn = await admin.openSession({ ownerId: `churn-${mode}`, ttlMs: 300_000 });
      sessions.push(churn);
      for (let i = 0; i < 50; i++) {
        const route = `lease://bench/churn-${mode}/r${i}`;
        const h = await churn.acquire(route, { ttlMs: 600_000 });
        if (i % 2 === 0) await h.release();
      }
      const changed = `lease://bench/fleet/r${String(LEASES + 1).padStart(6, '0')}`;
      const extra = await churn.acquire(changed, { ttlMs: 600_000 });
      await extra.release();
      await new Promise((r) => setTimeout(r, 500));

      await stopServer(server.proc);
      const ended = Promise.all(followers.map((f) => f.sub!.done));
      await ended;
      server = await spawnListening('leasehold', [SERVER], env(port), 30_000);
      const t0 = performance.now();
      const cpu0 = cpuMs(server.proc.pid!);
      const readyAt: number[] = [];
      await Promise.all(
        followers.map(async (f) => {
          await f.recover();
          readyAt.push(performance.now() - t0);
        }),
      );
      const readyMs = performance.now() - t0;
      const serverCpuMs = cpuMs(server.proc.pid!) - cpu0;
      readyAt.sort((a, b) => a - b);
      const servedLists = await listsServed(url);
      // A fleet that lost its sessions meanwhile would have made the listings cheap: say so.
      let held = 0;
      for await (const _ of admin.list(SELECTOR, { pageSize: 1_000 })) held++;
      const lostSessions = sessions.filter((x) => x.lost.aborted).length;
      results.push({ mode, totals: { ...totals }, servedLists, readyMs, p50Ms: readyAt[Math.floor(readyAt.length / 2)]!, serverCpuMs });
      console.log(
        `${mode}: ${totals.resumed} resumed, ${totals.relisted} relisted; LIST requests ${servedLists} at the server (${totals.lists} pages answered in time, ${totals.items} items${servedLists > totals.lists ? '; the rest timed out at the client and were retried' : ''}); all ${OBSERVERS} ready ${(readyMs / 1000).toFixed(2)} s after the restart (median ${(readyAt[Math.floor(readyAt.length / 2)]! / 1000).toFixed(2)} s); server CPU ${(serverCpuMs / 1000).toFixed(2)} s; ${held} leases held afterwards${lostSessions ? ` (${lostSessions} of the fleet's sessions were lost: their keepalives could not get through)` : ''}`,
      );
      for (const f of followers) f.sub?.close();
    }
    const a = results.find((r) => r.mode === 'after');
    const b = results.find((r) => r.mode === 'before');
    console.log('');
    console.log('| observers restarted | LIST requests at the server | pages answered in time | items listed | all ready after | median ready | server CPU |');
    console.log('|---|--:|--:|--:|--:|--:|--:|');
    for (const r of [b, a]) {
      if (!r) continue;
      console.log(`| ${r.mode === 'before' ? 'before (relist, `resume: false`)' : 'after (resume from revision)'} | ${r.servedLists} | ${r.totals.lists} | ${r.totals.items} | ${(r.readyMs / 1000).toFixed(2)} s | ${(r.p50Ms / 1000).toFixed(2)} s | ${(r.serverCpuMs / 1000).toFixed(2)} s |`);
    }
    if (a && b) console.log(`\nafter / before: time to all ready ${(a.readyMs / b.readyMs).toFixed(3)}, server CPU ${(a.serverCpuMs / Math.max(1, b.serverCpuMs)).toFixed(3)}`);
  } finally {
    for (const s of sessions) await s.close().catch(() => undefined);
    await stopServer(server.proc).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runMain(main, 'bench-resume');
