/**
 * Crash durability through the real server process: every answer the server
 * acknowledged before a SIGKILL is still true after a restart on the same
 * data directory (synchronous=NORMAL in WAL: a process crash loses no
 * committed step). Needs dist/server.mjs (built here if missing).
 *
 * A stream of acquisitions (64 concurrent loops, distinct routes, lease
 * TTL 600 s) with checkpoints on some of them is cut by SIGKILL ~1.5 s in
 * (later on a loaded machine, once many answers were acknowledged). The
 * server is frozen first (SIGSTOP): the loops read the answers it wrote
 * before, and each sends its next request, which it can no longer answer; so
 * the kill always finds requests in flight, whichever of client and server
 * was ahead. To the server a stop then a kill is one crash at the stop.
 * After the restart:
 * - every acknowledged lease is held with the acknowledged fencing token;
 * - every acknowledged checkpoint reads back with its value, token and version;
 * - replaying every acknowledged acquire (same request_id and body) answers
 *   200 with `Idempotent-Replay: true`, the same lease_id and token;
 * - a new acquire, and a release + re-acquire of an acknowledged route, get
 *   tokens strictly greater than every token seen before the kill.
 *
 * On SQLite the first server holds its commits back (LEASEHOLD_SQLITE_COMMIT_MS
 * of a minute), so every lease operation acknowledged before the kill exists
 * only in the batch journal (docs/design.md, "SQLite: the batch journal"),
 * and the second server must say it applied those lines.
 *
 * With LEASEHOLD_TEST_STORE=postgres (the unit script's second pass) the
 * same, with the server on a fresh PostgreSQL database instead of SQLite.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, leasePath, rid, TEST_STORE, type Reply } from './testing/harness';
import { createTestDatabase, type TestDatabase } from './testing/pg';
import { killServers, spawnServer } from './testing/process';

const TOKEN = `lh_durability_${Math.random().toString(36).slice(2)}_bootstrap`;
/** Clients in flight: enough that the server's group-committed batches are large when it is killed. */
const LOOPS = 64;
// PostgreSQL steps are network round trips: a longer run before the kill, and a lower bar for "many".
const KILL_AFTER_MS = TEST_STORE === 'postgres' ? 3_000 : 1_500;
const MANY = TEST_STORE === 'postgres' ? 30 : 100;
/** A loaded machine acknowledges fewer in KILL_AFTER_MS: the stream runs on until MANY, for at most this long. */
const MANY_WITHIN_MS = 60_000;
/**
 * After the stop, the kill waits until no answer was read for this long (at most STOP_MAX_MS). Its
 * timer ticks mean the client polled its sockets meanwhile: every answer written before the stop
 * was in them (loopback), so it was read, and its loop's next request sent to the stopped server.
 */
const STOP_QUIET_MS = 200;
const STOP_MAX_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Linux: wait (bounded) until the process is in the stopped state, so nothing it does comes after the stop. */
async function stopped(pid: number): Promise<void> {
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; await sleep(1)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return; // no procfs: the signal is delivered at once all the same
    }
    // `pid (comm) state …`: T is stopped.
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    if (state === 'T' || state === 't') return;
  }
  throw new Error(`server ${pid} not stopped 5 s after SIGSTOP`);
}

interface Acked {
  route: string;
  requestId: string;
  body: Record<string, unknown>;
  leaseId: string;
  token: number;
}

interface CheckpointWrite {
  value: unknown;
  /** Set when the write was acknowledged. */
  version?: number;
  token: number;
}

let dataDir = '';

let db: TestDatabase | undefined;

const startServer = (extra: Record<string, string> = {}) =>
  spawnServer({ LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN, ...(db ? { LEASEHOLD_DATABASE_URL: db.url } : {}), ...extra });

// What the first server acknowledged, and what the second one is.
const acked: Acked[] = [];
const checkpoints = new Map<string, CheckpointWrite[]>();
let maxTokenBeforeKill = 0;
let connectionErrors = 0;
/** Requests sent before the kill whose answer the client read only after it (the server answered just before dying). */
let answeredAfterKill = 0;
/** Answers read after the stop (the server wrote them before it): acknowledged like any other. */
let answeredAfterStop = 0;
/** Requests sent to the stopped server, and how many of those got an answer (none can). */
let sentAfterStop = 0;
let answeredSentAfterStop = 0;
/** How long the stream ran before the stop, and the stop before the kill. */
let ranMs = 0;
let stopMs = 0;
let sessionId = '';
let url2 = '';
let restartLog = '';

const api = (url: string, method: string, path: string, body?: unknown) => call(url, method, path, body, { token: TOKEN });

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'leasehold-durability-'));
  if (TEST_STORE === 'postgres') db = await createTestDatabase();
  const first = await startServer({ LEASEHOLD_SQLITE_COMMIT_MS: '60000' });
  const s = await api(first.url, 'POST', '/api/v1/sessions', { owner_id: 'durability', ttl_ms: 300_000 });
  assert.equal(s.status, 201, s.text);
  sessionId = s.body.session.session_id;

  let isStopped = false;
  let killed = false;
  let lastAnswerAt = 0;
  const seen = (token: unknown) => {
    if (typeof token === 'number' && token > maxTokenBeforeKill) maxTokenBeforeKill = token;
  };
  /** One request; a connection error (the kill) ends the loop, and so does the kill itself. */
  const attempt = async (method: string, path: string, body: unknown): Promise<Reply | undefined> => {
    if (killed) return undefined; // nothing new is sent after the kill
    const afterStop = isStopped;
    if (afterStop) sentAfterStop++;
    try {
      const r = await api(first.url, method, path, body);
      lastAnswerAt = performance.now();
      if (afterStop) answeredSentAfterStop++;
      if (isStopped) answeredAfterStop++;
      if (killed) answeredAfterKill++;
      return r;
    } catch {
      connectionErrors++;
      return undefined;
    }
  };

  const loop = async (l: number) => {
    for (let n = 0; !killed; n++) {
      const route = `lease://durability/loop-${l}/res-${n}`;
      const requestId = rid(`acq-${l}-${n}`);
      const body = { session_id: sessionId, request_id: requestId, ttl_ms: 600_000 };
      const a = await attempt('POST', leasePath(route, 'acquire'), body);
      if (!a) return;
      assert.equal(a.status, 200, `acquire ${route}: ${a.text}`);
      const { lease_id: leaseId, fencing_token: token } = a.body.lease;
      seen(token);
      acked.push({ route, requestId, body, leaseId, token });
      // Every third route gets two checkpoint writes in a row.
      if (n % 3 !== 0) continue;
      const writes: CheckpointWrite[] = [];
      checkpoints.set(route, writes);
      for (const k of [1, 2]) {
        const value = { loop: l, n, k, note: `checkpoint ${k} of ${route}`, list: [l, n, k, null, true] };
        const w: CheckpointWrite = { value, token };
        writes.push(w);
        const c = await attempt('PUT', leasePath(route, 'checkpoint'), {
          session_id: sessionId,
          request_id: rid(`cp-${l}-${n}-${k}`),
          lease_id: leaseId,
          fencing_token: token,
          value,
        });
        if (!c) return;
        assert.equal(c.status, 200, `checkpoint ${route}: ${c.text}`);
        seen(c.body.checkpoint.fencing_token);
        w.version = c.body.checkpoint.version;
      }
    }
  };

  const loops = Promise.all(Array.from({ length: LOOPS }, (_, l) => loop(l)));
  let failed = false;
  loops.catch(() => (failed = true)); // awaited below, after the kill
  const started = performance.now();
  await sleep(KILL_AFTER_MS);
  while (!failed && acked.length < MANY && performance.now() - started < MANY_WITHIN_MS) await sleep(20);
  ranMs = performance.now() - started;
  const exited = new Promise<void>((r) => first.proc.once('exit', () => r()));
  // Freeze the server, then let the loops read what it answered before and send what it never will.
  first.proc.kill('SIGSTOP');
  isStopped = true;
  await stopped(first.proc.pid!);
  lastAnswerAt = performance.now();
  const stopAt = lastAnswerAt;
  do {
    await sleep(20);
  } while (!failed && performance.now() - lastAnswerAt < STOP_QUIET_MS && performance.now() - stopAt < STOP_MAX_MS);
  stopMs = performance.now() - stopAt;
  first.proc.kill('SIGKILL');
  killed = true;
  await loops;
  await exited;

  const second = await startServer();
  url2 = second.url;
  restartLog = second.output();
});

after(async () => {
  killServers();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  await db?.drop();
});

test('the stream was cut by the kill, after many acknowledged answers', (t) => {
  const cps = [...checkpoints.values()].flat().filter((w) => w.version !== undefined).length;
  const what =
    `${acked.length} acquires and ${cps} checkpoint writes acknowledged in ${ranMs.toFixed(0)} ms before the stop; max token ${maxTokenBeforeKill}; ` +
    `stopped ${stopMs.toFixed(0)} ms: ${answeredAfterStop} answers written before the stop read after it, ${sentAfterStop} requests sent to the stopped server ` +
    `(${answeredSentAfterStop} answered); at the kill ${connectionErrors} cut and ${answeredAfterKill} answered after it, of ${LOOPS} loops`;
  t.diagnostic(what);
  assert.ok(acked.length >= MANY, `fewer than ${MANY} acquires acknowledged before the kill: ${what}`);
  assert.ok([...checkpoints.values()].some((w) => w.some((x) => x.version !== undefined)), `no checkpoint acknowledged before the kill: ${what}`);
  // A stopped server answers nothing: a request it answered after the stop means the kill cut nothing real.
  assert.equal(answeredSentAfterStop, 0, `the stopped server answered: ${what}`);
  assert.ok(connectionErrors > 0, `no request was in flight when the server was killed: ${what}`);
  // Closed loops: every one had one request out at the kill. Most were cut; a loop whose answer (written
  // before the stop) it had not yet read reads it after the kill, and sends nothing more. The split varies
  // with how far behind the client is; the sum does not.
  assert.equal(connectionErrors + answeredAfterKill, LOOPS, `not every loop had a request in flight at the kill: ${what}`);
});

// PostgreSQL commits every batch (no journal), so this one is SQLite's alone.
if (TEST_STORE !== 'postgres') {
  test('the restart applied the journaled batches that had not committed', () => {
    const m = /applied (\d+) journaled batches/.exec(restartLog);
    assert.ok(m, `the restarted server did not report a journal replay:\n${restartLog.slice(-2000)}`);
    assert.ok(Number(m[1]) > 0);
  });
}

test('every acknowledged lease is still held with the same fencing token', async () => {
  const held = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ selector: 'lease://durability/**', limit: '1000' });
    if (cursor) q.set('cursor', cursor);
    const r = await api(url2, 'GET', `/api/v1/leases?${q}`);
    assert.equal(r.status, 200, r.text);
    for (const it of r.body.items) held.set(it.route, it.fencing_token);
    cursor = r.body.next_cursor;
  } while (cursor);
  const missing = acked.filter((a) => held.get(a.route) !== a.token);
  assert.deepEqual(
    missing.slice(0, 5).map((a) => ({ route: a.route, acked: a.token, now: held.get(a.route) })),
    [],
    `${missing.length} of ${acked.length} acknowledged leases are not held with their token`,
  );
  // Spot-check inspect as well.
  for (const a of acked.slice(0, 10)) {
    const r = await api(url2, 'GET', leasePath(a.route));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.lease.fencing_token, a.token);
  }
});

test('every acknowledged checkpoint reads back with its value, token and version', async () => {
  let checked = 0;
  for (const [route, writes] of checkpoints) {
    const lastAcked = writes.map((w) => w.version !== undefined).lastIndexOf(true);
    if (lastAcked < 0) continue;
    const r = await api(url2, 'GET', leasePath(route, 'checkpoint'));
    assert.equal(r.status, 200, `${route}: ${r.text}`);
    const cp = r.body.checkpoint;
    // The acknowledged write, or a later one that was in flight at the kill.
    const i = writes.findIndex((w, j) => j >= lastAcked && JSON.stringify(w.value) === JSON.stringify(cp.value));
    assert.ok(i >= 0, `${route}: read back ${JSON.stringify(cp.value)}, acknowledged ${JSON.stringify(writes[lastAcked]!.value)}`);
    assert.equal(cp.fencing_token, writes[i]!.token, route);
    assert.equal(cp.version, i === lastAcked ? writes[i]!.version : i + 1, route);
    checked++;
  }
  assert.ok(checked > 0);
});

test('replaying every acknowledged acquire returns the original answer', async () => {
  for (const a of acked) {
    const r = await api(url2, 'POST', leasePath(a.route, 'acquire'), a.body);
    assert.equal(r.status, 200, `${a.route}: ${r.text}`);
    assert.equal(r.headers['idempotent-replay'], 'true', a.route);
    assert.equal(r.body.lease.lease_id, a.leaseId, a.route);
    assert.equal(r.body.lease.fencing_token, a.token, a.route);
  }
});

test('tokens after the restart are greater than every token seen before the kill', async () => {
  assert.ok(maxTokenBeforeKill > 0);
  const fresh = await api(url2, 'POST', leasePath('lease://durability/after-restart/fresh', 'acquire'), {
    session_id: sessionId,
    request_id: rid('fresh'),
    ttl_ms: 600_000,
  });
  assert.equal(fresh.status, 200, fresh.text);
  assert.ok(fresh.body.lease.fencing_token > maxTokenBeforeKill, `fresh route got ${fresh.body.lease.fencing_token}, max before kill ${maxTokenBeforeKill}`);

  const a = acked[0]!;
  const rel = await api(url2, 'POST', leasePath(a.route, 'release'), {
    session_id: sessionId,
    request_id: rid('release'),
    lease_id: a.leaseId,
    fencing_token: a.token,
  });
  assert.equal(rel.status, 200, rel.text);
  const again = await api(url2, 'POST', leasePath(a.route, 'acquire'), { session_id: sessionId, request_id: rid('again'), ttl_ms: 600_000 });
  assert.equal(again.status, 200, again.text);
  assert.ok(again.body.lease.fencing_token > maxTokenBeforeKill, `re-acquire got ${again.body.lease.fencing_token}, max before kill ${maxTokenBeforeKill}`);
  assert.ok(again.body.lease.fencing_token > fresh.body.lease.fencing_token);
});
