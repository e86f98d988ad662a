/**
 * A stream resumes across a SIGKILL of the real server process (docs/semantics.md
 * §8, "Resuming"): changes keep committing on several connections when the
 * process is killed; after a restart on the same data directory (or, on the
 * unit script's PostgreSQL pass, the same database) a stream opened with the
 * last id it saw replays every later change of the family exactly once, in
 * revision order (those committed after the client left, up to the kill),
 * then continues live.
 */

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, leasePath, rid, TEST_STORE } from '../testing/harness';
import { createTestDatabase, type TestDatabase } from '../testing/pg';
import { killServers, spawnServer } from '../testing/process';
import { SseClient } from '../testing/sse';

const TOKEN = `lh_feed_restart_${Math.random().toString(36).slice(2)}_bootstrap`;
const SELECTOR = 'lease://rk/**';
const LOOPS = 8;

let dataDir = '';
let db: TestDatabase | undefined;
const startServer = () => spawnServer({ LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_BOOTSTRAP_TOKEN: TOKEN, ...(db ? { LEASEHOLD_DATABASE_URL: db.url } : {}) });
const api = (url: string, method: string, path: string, body?: unknown) => call(url, method, path, body, { token: TOKEN });

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'leasehold-feed-restart-'));
  if (TEST_STORE === 'postgres') db = await createTestDatabase();
});

after(async () => {
  killServers();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  await db?.drop();
});

const path = (since?: string) => `/api/v1/inventory/stream?selector=${encodeURIComponent(SELECTOR)}${since === undefined ? '' : `&since=${since}`}`;
const changeIds = (c: SseClient) => c.of('change').map((e) => Number(e.id));

test('after a SIGKILL mid-churn, the stream resumes from its last id: every later change once, in order, then live', async (t) => {
  const first = await startServer();
  const s = await api(first.url, 'POST', '/api/v1/sessions', { owner_id: 'restart', ttl_ms: 300_000 });
  assert.equal(s.status, 201, s.text);
  const sessionId = s.body.session.session_id as string;
  const before = await SseClient.open(first.url, path(), { token: TOKEN });
  await before.waitFor((e) => e.event === 'subscribed');

  let killed = false;
  let acquired = 0;
  const loops = Array.from({ length: LOOPS }, async (_, k) => {
    const route = `lease://rk/loop/r${k}`;
    try {
      while (!killed) {
        const a = await api(first.url, 'POST', leasePath(route, 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
        if (a.status !== 200) return;
        acquired++;
        const l = a.body.lease;
        await api(first.url, 'POST', leasePath(route, 'release'), { session_id: sessionId, lease_id: l.lease_id, fencing_token: l.fencing_token, request_id: rid() });
      }
    } catch {
      // The kill cut the connection.
    }
  });
  // The client goes away first; changes go on committing until the kill.
  await before.waitForCount((e) => e.event === 'change', 100, 20_000);
  before.close();
  await before.done;
  const goal = acquired + 100;
  for (let i = 0; i < 2_000 && acquired < goal; i++) await new Promise((r) => setTimeout(r, 10));
  const exited = new Promise<void>((r) => first.proc.once('exit', () => r()));
  first.proc.kill('SIGKILL');
  killed = true;
  await Promise.all(loops);
  await exited;
  const seen = changeIds(before);
  // The family's every change is under the selector, and revisions are contiguous.
  assert.deepEqual(seen, seen.map((_, i) => i + 1));
  const last = seen.at(-1)!;

  const second = await startServer();
  const resumed = await SseClient.open(second.url, path(String(last)), { token: TOKEN });
  const hello = await resumed.waitFor((e) => e.event === 'hello');
  assert.equal(hello.data.resumed, true);
  const upTo = hello.data.revision as number;
  assert.ok(upTo >= last + 100, `revision ${upTo} after the restart, ${last} seen before`);
  // Then live: one more change after the restart.
  const a = await api(second.url, 'POST', leasePath('lease://rk/after/x', 'acquire'), { session_id: sessionId, request_id: rid(), ttl_ms: 60_000 });
  assert.equal(a.status, 200, a.text);
  const final = a.body.lease.fencing_token as number;
  await resumed.waitFor((e) => e.event === 'change' && Number(e.id) === final, 10_000, `revision ${final}`);
  const got = changeIds(resumed);
  t.diagnostic(`${last} changes seen before the kill, ${upTo - last} committed after the client left, replayed after the restart`);
  const expected = Array.from({ length: final - last }, (_, i) => last + 1 + i);
  assert.deepEqual(got, expected, 'every change after the last id seen, once, in revision order');
  assert.deepEqual(resumed.events.filter((e) => e.event !== 'hello' && e.event !== 'subscribed' && e.event !== 'change'), []);
  resumed.close();
});
