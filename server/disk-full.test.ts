/**
 * A full disk through the real server process (CONTRACT §19 "A failure
 * answer is the truth", docs/operations.md "Disk full"), SQLite only: the
 * data directory is on a small tmpfs, which a filler file fills while
 * acquires and checkpoints stream in. Mounting needs root (CI runs as
 * root); elsewhere the file is skipped, saying so.
 *
 * - While the disk is full, reads (inspect, checkpoint read, LIST, audit,
 *   token authentication) and the feed keep answering, writes are refused
 *   (`backend_unavailable`), and readiness says 200 `degraded` (`no_space`).
 * - Every write answered `backend_unavailable` changed nothing: its route is
 *   free (acquire) or has no checkpoint (checkpoint), before and after a
 *   SIGKILL, and once space returns a replay of its request_id runs afresh
 *   (no `Idempotent-Replay`, a new fencing token).
 * - Every write answered 200 survives a SIGKILL taken while the disk is
 *   still full, and replays as acknowledged.
 * - A server started on the full disk serves reads (read-only until there is room).
 * - The feed saw every acknowledged acquire, with no revision missing,
 *   unless it was told to resync.
 */

import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call, leasePath, rid, TEST_STORE, type Reply } from './testing/harness';
import { killServers, spawnServer, type ServerProcess } from './testing/process';
import { SseClient } from './testing/sse';
import { mountTmpfs, type Tmpfs } from './testing/tmpfs';
import { waitFor } from './testing/wait';
import { HealthReady } from './http/answers';

const TOKEN = `lh_disk_full_${Math.random().toString(36).slice(2)}_bootstrap`;
const SELECTOR = 'lease://full/**';
/** Clients writing at once: batches of several steps, as in production. */
const LOOPS = 12;
/** Acknowledged acquires before the disk is filled, and refused writes before the load stops. */
const ACKED_BEFORE_FULL = 40;
const REFUSED_WHILE_FULL = 40;

interface Write {
  kind: 'acquire' | 'checkpoint';
  route: string;
  requestId: string;
  body: Record<string, unknown>;
  status: number;
  code: string;
  /** Acquire: the lease; checkpoint: the version written. */
  leaseId?: string;
  token?: number;
  version?: number;
}

let skip: string | undefined;
let disk: Tmpfs | undefined;
let dataDir = '';
let server: ServerProcess | undefined;
let sessionId = '';
const writes: Write[] = [];
const readFailures: string[] = [];
let readsWhileFull = 0;
let feed: SseClient | undefined;

const api = (url: string, method: string, path: string, body?: unknown) => call(url, method, path, body, { token: TOKEN });
const startServer = () => spawnServer({ LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN });
const acked = (kind: Write['kind']) => writes.filter((w) => w.kind === kind && w.status === 200);
const refused = (kind: Write['kind']) => writes.filter((w) => w.kind === kind && w.code === 'backend_unavailable');

async function ready(url: string): Promise<Reply> {
  return call(url, 'GET', '/api/v1/health/ready', undefined, { token: null });
}

/** Readiness says the disk is full, in the documented shape. */
async function degradedNoSpace(url: string): Promise<void> {
  const r = await waitFor('ready to say degraded (no_space)', () => ready(url), (x) => x.body?.status === 'degraded');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.reasons, [{ reason: 'no_space' }]);
  assert.deepEqual(HealthReady.parse(r.body), r.body, 'the documented schema');
}

/** Every acknowledged write reads back as acknowledged; every refused one left nothing behind. */
async function checkReads(url: string, label: string): Promise<void> {
  for (const w of acked('acquire')) {
    const r = await api(url, 'GET', leasePath(w.route));
    assert.equal(r.status, 200, `${label}: acknowledged acquire of ${w.route}: ${r.text}`);
    assert.deepEqual([r.body.lease.fencing_token, r.body.lease.owner_id], [w.token, 'disk-full'], `${label}: ${w.route}`);
  }
  // A checkpoint reads back as the last acknowledged write of its route, or is absent when none was.
  for (const route of new Set(writes.filter((w) => w.kind === 'checkpoint').map((w) => w.route))) {
    const last = acked('checkpoint').filter((w) => w.route === route).at(-1);
    const r = await api(url, 'GET', leasePath(route, 'checkpoint'));
    if (last) assert.deepEqual([r.status, r.body.checkpoint?.version, r.body.checkpoint?.value], [200, last.version, last.body.value], `${label}: the checkpoint of ${route}: ${r.text}`);
    else assert.deepEqual([r.status, r.body.code], [404, 'checkpoint_not_found'], `${label}: a refused checkpoint of ${route} was not stored: ${r.text}`);
  }
  for (const w of refused('acquire')) {
    const r = await api(url, 'GET', leasePath(w.route));
    assert.deepEqual([r.status, r.body.code], [404, 'lease_not_found'], `${label}: a refused acquire of ${w.route} is not held: ${r.text}`);
  }
}

/** Every route LIST finds under SELECTOR, page by page, sorted. */
async function listed(url: string): Promise<string[]> {
  const routes: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await api(url, 'GET', `/api/v1/leases?selector=${encodeURIComponent(SELECTOR)}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.equal(r.status, 200, r.text);
    for (const l of r.body.items) routes.push(l.route);
    cursor = r.body.next_cursor;
  } while (cursor);
  return routes.sort();
}

function skipped(t: TestContext): boolean {
  if (skip) t.skip(skip);
  return skip !== undefined;
}

before(async () => {
  if (TEST_STORE === 'postgres') {
    skip = 'SQLite only: a full disk of the embedded store';
    return;
  }
  const m = mountTmpfs(24, 'leasehold-disk-full-');
  if ('skip' in m) {
    skip = m.skip;
    return;
  }
  disk = m;
  dataDir = join(disk.dir, 'data');
  server = await startServer();
  const s = await api(server.url, 'POST', '/api/v1/sessions', { owner_id: 'disk-full', ttl_ms: 300_000 });
  assert.equal(s.status, 201, s.text);
  sessionId = s.body.session.session_id;
  feed = await SseClient.open(server.url, `/api/v1/inventory/stream?selector=${encodeURIComponent(SELECTOR)}`, { token: TOKEN });
  await feed.waitFor((e) => e.event === 'subscribed');
});

after(async () => {
  killServers();
  if (server) await new Promise<void>((r) => (server!.proc.exitCode !== null || server!.proc.signalCode !== null ? r() : server!.proc.once('exit', () => r())));
  disk?.unmount();
});

test('on a full disk reads keep answering, writes are refused, readiness says degraded (no_space), and a refused write changed nothing', async (t) => {
  if (skipped(t)) return;
  const url = server!.url;
  let stop = false;
  let full = false;

  const writer = async (l: number) => {
    for (let n = 0; !stop; n++) {
      const route = `lease://full/l${l}/r${n}`;
      const body = { session_id: sessionId, request_id: rid(`acq-${l}-${n}`), ttl_ms: 600_000 };
      const a = await api(url, 'POST', leasePath(route, 'acquire'), body);
      const w: Write = { kind: 'acquire', route, requestId: body.request_id, body, status: a.status, code: a.body?.code };
      writes.push(w);
      if (a.status !== 200) {
        assert.equal(a.status, 503, `acquire ${route}: ${a.text}`);
        continue;
      }
      w.leaseId = a.body.lease.lease_id;
      w.token = a.body.lease.fencing_token;
      const cp = { session_id: sessionId, request_id: rid(`cp-${l}-${n}`), lease_id: w.leaseId, fencing_token: w.token, value: { l, n, note: 'x'.repeat(512) } };
      const c = await api(url, 'PUT', leasePath(route, 'checkpoint'), cp);
      writes.push({ kind: 'checkpoint', route, requestId: cp.request_id, body: cp, status: c.status, code: c.body?.code, version: c.body?.checkpoint?.version });
      if (c.status !== 200) assert.equal(c.status, 503, `checkpoint ${route}: ${c.text}`);
    }
  };
  // Reads of every kind, all along: each must answer.
  const reader = async () => {
    while (!stop) {
      const first = acked('checkpoint')[0];
      const reads: Array<[string, string, number]> = [
        ['whoami', '/api/v1/auth/whoami', 200],
        ['list', `/api/v1/leases?selector=${encodeURIComponent(SELECTOR)}&limit=20`, 200],
        ['audit', '/api/v1/audit?limit=5', 200],
        ...(first ? ([['inspect', leasePath(first.route), 200], ['checkpoint read', leasePath(first.route, 'checkpoint'), 200]] as Array<[string, string, number]>) : []),
      ];
      for (const [what, path, status] of reads) {
        const r = await api(url, 'GET', path);
        if (r.status !== status) readFailures.push(`${what} ${full ? 'while full' : 'before'}: ${r.status} ${r.text.slice(0, 200)}`);
        else if (full) readsWhileFull++;
      }
    }
  };
  const load = Promise.all([...Array.from({ length: LOOPS }, (_, l) => writer(l)), reader()]);
  let failed: unknown;
  load.catch((e: unknown) => (failed = e));
  try {
    await waitFor(`${ACKED_BEFORE_FULL} acquires acknowledged`, () => failed ?? acked('acquire').length, (n) => n === failed || (n as number) >= ACKED_BEFORE_FULL, 60_000);
    disk!.fill();
    full = true;
    await degradedNoSpace(url);
    // What the server's failed writes gave back (a journal line taken back) is taken too.
    disk!.fill();
    await waitFor(`${REFUSED_WHILE_FULL} writes refused`, () => failed ?? writes.filter((w) => w.code === 'backend_unavailable').length, (n) => n === failed || (n as number) >= REFUSED_WHILE_FULL, 60_000);
    await waitFor('reads answered while full', () => failed ?? readsWhileFull, (n) => n === failed || (n as number) >= 20, 60_000);
  } finally {
    stop = true;
    await load.catch(() => undefined);
  }
  if (failed) throw failed;
  t.diagnostic(`${acked('acquire').length} acquires and ${acked('checkpoint').length} checkpoints acknowledged, ${refused('acquire').length} and ${refused('checkpoint').length} refused; ${readsWhileFull} reads answered while full`);
  const refusedLine = server!.output().split('\n').find((l) => l.includes('writes refused'));
  assert.ok(refusedLine, 'the server logged that it refuses writes');
  t.diagnostic(`what filled: ${(JSON.parse(refusedLine) as { error?: string }).error}`);
  assert.deepEqual(readFailures, [], 'every read answered, full or not');
  assert.deepEqual(writes.filter((w) => w.status !== 200 && w.code !== 'backend_unavailable').map((w) => `${w.kind} ${w.route}: ${w.status} ${w.code}`), [], 'a write is acknowledged or refused (nothing here leaves its outcome unknown)');
  // One more checkpoint, over an acknowledged one: refused, it leaves the acknowledged one in place.
  const over = acked('checkpoint')[0]!;
  const body = { ...over.body, request_id: rid('cp-over'), value: { over: true } };
  const c = await api(url, 'PUT', leasePath(over.route, 'checkpoint'), body);
  assert.deepEqual([c.status, c.body.code], [503, 'backend_unavailable'], c.text);
  writes.push({ kind: 'checkpoint', route: over.route, requestId: body.request_id, body, status: c.status, code: c.body.code });
  assert.ok(refused('acquire').length > 0, 'acquires were refused');
  await degradedNoSpace(url);
  await checkReads(url, 'while full');
  // A stream opened while full resumes from the change log: every acknowledged acquire, and nothing else.
  const since = Math.min(...acked('acquire').map((w) => w.token!));
  const expected = acked('acquire').map((w) => w.token!).filter((n) => n > since).sort((a, b) => a - b);
  const resumed = await SseClient.open(url, `/api/v1/inventory/stream?selector=${encodeURIComponent(SELECTOR)}&since=${since}`, { token: TOKEN });
  assert.equal((await resumed.waitFor((e) => e.event === 'hello')).data.resumed, true);
  await resumed.waitFor((e) => e.event === 'change' && Number(e.id) === expected.at(-1), 10_000, `revision ${expected.at(-1)}`);
  assert.deepEqual(resumed.of('change').map((e) => Number(e.id)), expected, 'the change log holds the acknowledged acquires alone');
  resumed.close();
  const live = await ready(url);
  assert.deepEqual([live.status, live.body.status], [200, 'degraded'], 'still full');
});

test('the feed saw every acknowledged acquire, in revision order with none missing, or was told to resync', async (t) => {
  if (skipped(t)) return;
  const tokens = acked('acquire').map((w) => w.token!);
  const top = Math.max(...tokens);
  await feed!.waitFor((e) => e.event === 'change' && Number(e.id) >= top, 10_000, `revision ${top}`).catch(() => undefined);
  const resync = feed!.events.find((e) => e.event === 'resync' || e.event === 'overflow');
  const ids = feed!.of('change').map((e) => Number(e.id));
  if (resync) {
    t.diagnostic(`the stream was told to resync (${JSON.stringify(resync.data)}): a gap after it is allowed`);
    return;
  }
  assert.deepEqual(ids, ids.map((_, i) => ids[0]! + i), 'contiguous revisions: no change left unpublished');
  const byId = new Map(feed!.of('change').map((e) => [Number(e.id), e.data]));
  for (const w of acked('acquire')) assert.deepEqual([byId.get(w.token!)?.route, byId.get(w.token!)?.change], [w.route, 'acquired'], `the acquire of ${w.route} was published`);
  const published = new Set(feed!.of('change').map((e) => e.data.route as string));
  for (const w of refused('acquire')) assert.ok(!published.has(w.route), `no change for the refused acquire of ${w.route}`);
});

test('a server killed on the full disk starts on it, read-only: every acknowledged answer is there, every refused write absent', async (t) => {
  if (skipped(t)) return;
  feed!.close();
  const exited = new Promise<void>((r) => server!.proc.once('exit', () => r()));
  server!.proc.kill('SIGKILL');
  await exited;
  disk!.fill();
  server = await startServer();
  const url = server.url;
  await checkReads(url, 'restarted on the full disk');
  assert.deepEqual(await listed(url), acked('acquire').map((w) => w.route).sort(), 'LIST holds exactly the acknowledged leases');
  // Writes: each one is acknowledged (and then held) or refused (and then absent), until one is refused.
  for (let n = 0; ; n++) {
    const route = `lease://full/restarted/r${n}`;
    const body = { session_id: sessionId, request_id: rid(`restarted-${n}`), ttl_ms: 600_000 };
    const a = await api(url, 'POST', leasePath(route, 'acquire'), body);
    const w: Write = { kind: 'acquire', route, requestId: body.request_id, body, status: a.status, code: a.body?.code, leaseId: a.body?.lease?.lease_id, token: a.body?.lease?.fencing_token };
    writes.push(w);
    if (a.status === 503 && a.body.code === 'backend_unavailable') break;
    assert.equal(a.status, 200, `acquire ${route} on the full disk: ${a.text}`);
    assert.ok(n < 10_000, 'a full disk refuses writes');
  }
  await degradedNoSpace(url);
  await checkReads(url, 'after a write was refused');
});

test('once space returns, writes are taken again: a refused request_id runs afresh, an acknowledged one replays', async (t) => {
  if (skipped(t)) return;
  const url = server!.url;
  disk!.free();
  await waitFor('ready to say ready', () => ready(url), (r) => r.status === 200 && r.body.status === 'ready');
  const before = Math.max(...acked('acquire').map((w) => w.token!));
  for (const w of acked('acquire')) {
    const r = await api(url, 'POST', leasePath(w.route, 'acquire'), w.body);
    assert.deepEqual([r.status, r.headers['idempotent-replay'], r.body.lease?.lease_id, r.body.lease?.fencing_token], [200, 'true', w.leaseId, w.token], `replay of the acknowledged acquire of ${w.route}`);
  }
  for (const w of refused('acquire')) {
    const r = await api(url, 'POST', leasePath(w.route, 'acquire'), w.body);
    assert.equal(r.status, 200, `replay of the refused acquire of ${w.route}: ${r.text}`);
    assert.equal(r.headers['idempotent-replay'], undefined, `the refused acquire of ${w.route} runs afresh`);
    assert.ok(r.body.lease.fencing_token > before, `a new token for ${w.route}`);
  }
  const versions = new Map<string, number>();
  for (const w of acked('checkpoint')) versions.set(w.route, w.version!);
  for (const w of refused('checkpoint')) {
    const r = await api(url, 'PUT', leasePath(w.route, 'checkpoint'), w.body);
    assert.equal(r.status, 200, `replay of the refused checkpoint of ${w.route}: ${r.text}`);
    assert.equal(r.headers['idempotent-replay'], undefined, `the refused checkpoint of ${w.route} runs afresh`);
    const version = (versions.get(w.route) ?? 0) + 1;
    assert.equal(r.body.checkpoint.version, version, `the next version of the checkpoint of ${w.route}`);
    versions.set(w.route, version);
  }
  const live = await ready(url);
  assert.deepEqual([live.status, live.body], [200, { status: 'ready', store: 'sqlite', checks: { store: 'ok', schema: 'ok', draining: false } }]);
});
