/**
 * The leases page across a server restart (docs/console.md "Feed"): the
 * tab's stream resumes from its last revision on the restarted process, so
 * the badge goes `reconnecting`, then `live`, the table keeps up with what
 * changed meanwhile, and the page never lists again (no LIST request leaves
 * the browser). The spec runs its own server process, so that it can restart
 * it on the same data directory (and, on PostgreSQL, the suite's database).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { request as apiRequest, type APIRequestContext } from '@playwright/test';
import { SERVER, spawnListening, stopServer, type ServerProcess } from '../server/testing/process';
import { ADMIN_TOKEN, expect, test as base } from './fixtures';
import { LeasesPage } from './pages/leases-page';

interface RestartableServer {
  url: string;
  /** The admin token's API on this server. */
  http: () => APIRequestContext;
  /** SIGTERM, then the same command on the same port and data directory. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

const test = base.extend<{ own: RestartableServer; leasesPage: LeasesPage }>({
  own: async ({}, use) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-e2e-resume-'));
    const env = (port: string): Record<string, string> => ({
      PORT: port,
      LEASEHOLD_DATA_DIR: dataDir,
      LEASEHOLD_BOOTSTRAP_TOKEN: ADMIN_TOKEN,
      LEASEHOLD_CONSOLE: 'on',
      LEASEHOLD_FEED_HEARTBEAT_MS: '5000',
      NEXT_TELEMETRY_DISABLED: '1',
      // On PostgreSQL, one more instance on the suite's database.
      ...(process.env.LEASEHOLD_E2E_DATABASE_URL ? { LEASEHOLD_DATABASE_URL: process.env.LEASEHOLD_E2E_DATABASE_URL } : {}),
    });
    let proc: ServerProcess | undefined = await spawnListening('leasehold', [SERVER], env('0'));
    const url = proc.url;
    const port = new URL(url).port;
    let http = await apiRequest.newContext({ baseURL: url, extraHTTPHeaders: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    await use({
      url,
      http: () => http,
      async stop() {
        if (proc) await stopServer(proc.proc);
        proc = undefined;
      },
      async start() {
        proc = await spawnListening('leasehold', [SERVER], env(port));
        await http.dispose();
        http = await apiRequest.newContext({ baseURL: url, extraHTTPHeaders: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
      },
    });
    await http.dispose();
    if (proc) await stopServer(proc.proc);
    rmSync(dataDir, { recursive: true, force: true });
  },
  leasesPage: async ({ page }, use) => {
    await use(new LeasesPage(page));
  },
});

async function openSession(http: APIRequestContext, owner: string): Promise<string> {
  const res = await http.post('/api/v1/sessions', { data: { owner_id: owner, ttl_ms: 60_000 } });
  expect(res.ok(), await res.text()).toBe(true);
  return ((await res.json()) as { session: { session_id: string } }).session.session_id;
}

async function acquire(http: APIRequestContext, route: string, sessionId: string): Promise<{ lease_id: string; fencing_token: number }> {
  const res = await http.post(`/api/v1/leases/${route.slice('lease://'.length)}/acquire`, { data: { session_id: sessionId, request_id: randomUUID(), ttl_ms: 60_000 } });
  expect(res.ok(), await res.text()).toBe(true);
  return ((await res.json()) as { lease: { lease_id: string; fencing_token: number } }).lease;
}

test('the leases page stays live across a server restart: reconnecting, then live, without listing again', async ({ page, own, leasesPage, consoleErrors }) => {
  const area = `r${randomUUID().slice(0, 8)}`;
  const selector = `lease://e2e-resume/${area}/*`;
  const route = (name: string) => `lease://e2e-resume/${area}/${name}`;
  const sessionId = await openSession(own.http(), 'resume-e2e');
  const held = await acquire(own.http(), route('before'), sessionId);
  const gone = await acquire(own.http(), route('gone'), sessionId);

  // Every LIST the page makes, from the browser.
  const lists: string[] = [];
  page.on('request', (req) => {
    const u = new URL(req.url());
    if (req.method() === 'GET' && u.pathname === '/api/v1/leases') lists.push(u.search);
  });
  const login = await page.request.post(`${own.url}/api/v1/auth/login`, { data: { token: ADMIN_TOKEN } });
  expect(login.ok(), await login.text()).toBe(true);
  await page.goto(`${own.url}/leases?${new URLSearchParams({ selector })}`);
  await expect(leasesPage.feed).toContainText('live');
  await expect(leasesPage.row(route('before'))).toBeVisible();
  await expect(leasesPage.row(route('gone'))).toBeVisible();
  // A change while live, so the tab has a revision to resume from.
  await acquire(own.http(), route('live'), sessionId);
  await expect(leasesPage.row(route('live'))).toBeVisible();
  const listed = lists.length;
  expect(listed).toBeGreaterThan(0);

  await own.stop();
  await expect(leasesPage.feed).toContainText('reconnecting');
  // The table keeps the last state received while the server is away.
  await expect(leasesPage.row(route('before'))).toBeVisible();
  await own.start();
  // Changes on the restarted server: the tab hears them by replay or live.
  const release = await own.http().post(`/api/v1/leases/${route('gone').slice('lease://'.length)}/release`, {
    data: { session_id: sessionId, lease_id: gone.lease_id, fencing_token: gone.fencing_token, request_id: randomUUID() },
  });
  expect(release.ok(), await release.text()).toBe(true);
  await acquire(own.http(), route('after'), sessionId);

  await expect(leasesPage.feed).toContainText('live', { timeout: 30_000 });
  await expect(leasesPage.row(route('after'))).toBeVisible();
  await expect(leasesPage.row(route('gone'))).toHaveCount(0);
  await expect(leasesPage.row(route('before'))).toBeVisible();
  await expect(leasesPage.row(route('live'))).toBeVisible();
  expect(lists.slice(listed), 'no LIST after the restart').toEqual([]);
  expect(held.fencing_token).toBeGreaterThan(0);
  await own.http().post('/api/v1/sessions/close', { data: { session_id: sessionId } });
  expect(consoleErrors.filter((e) => !/Failed to load resource|ERR_CONNECTION_REFUSED|network/i.test(e))).toEqual([]);
});
