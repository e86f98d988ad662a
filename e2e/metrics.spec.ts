// The /metrics page against the real server: a workload run through the API
// while the page is open shows up in the charts' readouts, the drawings
// move, the window lives in the URL, a narrow token is told why it sees
// nothing, a server started with LEASEHOLD_METRICS=off is explained, and
// request latency is a table of operations ranked by p99 whose chosen row is
// charted (docs/console.md "Metrics: request latency by operation").
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER, spawnListening, stopServer } from '../server/testing/process';
import { expect, test as base, type Held, STORE_INDEPENDENT } from './fixtures';
import { expectTheme, preferTheme, THEMES } from './axe';
import { CHARTS, latencyChart, loadChart, MetricsPage } from './pages/metrics-page';

interface OwnServer {
  url: string;
  adminToken: string;
}

const test = base.extend<{ metricsPage: MetricsPage; metricsOffServer: OwnServer }>({
  metricsPage: async ({ page }, use) => {
    await use(new MetricsPage(page));
  },
  // A second server of its own, with metrics off (the shared one has them on).
  metricsOffServer: async ({}, use) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-e2e-metrics-off-'));
    const adminToken = `lh_e2e_off_${randomBytes(16).toString('hex')}`;
    const server = await spawnListening('leasehold', [SERVER], {
      LEASEHOLD_DATA_DIR: dataDir,
      LEASEHOLD_BOOTSTRAP_TOKEN: adminToken,
      LEASEHOLD_METRICS: 'off',
      LEASEHOLD_CONSOLE: 'on',
      NEXT_TELEMETRY_DISABLED: '1',
    });
    await use({ url: server.url, adminToken });
    await stopServer(server.proc);
    rmSync(dataDir, { recursive: true, force: true });
  },
});

const AREA = 'lease://acme/metrics-e2e';

// The charts are the console instance's own counters (metrics are per
// process): on PostgreSQL the workload goes to that instance, not to B.
test.use({ apiOn: 'console' });

test('the charts follow a workload run through the API: acquisitions, a conflict, releases, leases and sessions', async ({
  page,
  api,
  signIn,
  metricsPage,
  screenshots,
  consoleErrors,
}) => {
  test.setTimeout(60_000);
  await signIn(page);
  await metricsPage.goto('1m');
  await expect(metricsPage.heading).toBeVisible();
  for (const name of Object.values(CHARTS)) await expect(metricsPage.chart(name)).toBeVisible();
  await expect(metricsPage.windowOption('1 min')).toBeChecked();

  // The points move: the newest second drawn follows the clock, and so do the pixels.
  const firstAt = await metricsPage.lastAt(CHARTS.leases);
  await expect.poll(() => metricsPage.lastAt(CHARTS.leases)).toBeGreaterThan(firstAt);
  const drawn = await metricsPage.drawing(CHARTS.throughput).screenshot();
  await expect.poll(async () => (await metricsPage.drawing(CHARTS.throughput).screenshot()).equals(drawn), { timeout: 15_000 }).toBe(false);

  const worker = await api.openSession('metrics-e2e-worker');
  const leasesBefore = await metricsPage.latest(CHARTS.leases, 'Active leases');
  const held: Held[] = [];
  for (let i = 0; i < 5; i++) held.push(await api.acquire(`${AREA}/job-${i}`, worker));

  // A second session asks for a held route: refused, and counted as a conflict.
  const rival = await api.openSession('metrics-e2e-rival');
  const refused = await api.http.post(`/api/v1/leases/${held[0]!.route.slice('lease://'.length)}/acquire`, {
    data: { session_id: rival.sessionId, request_id: randomUUID(), ttl_ms: 60_000 },
  });
  expect(refused.status()).toBe(409);
  expect(((await refused.json()) as { code: string }).code).toBe('lease_conflict');

  await expect.poll(() => metricsPage.latest(CHARTS.leases, 'Active leases')).toBeGreaterThanOrEqual(leasesBefore + 5);
  await expect.poll(() => metricsPage.latest(CHARTS.sessions, 'Active sessions')).toBeGreaterThanOrEqual(2);
  await expect.poll(() => metricsPage.peak(CHARTS.throughput, 'Conflicts')).toBeGreaterThanOrEqual(1);

  // Keep acquiring (and releasing) a route each poll until a complete second with acquisitions is the latest drawn.
  await expect
    .poll(async () => {
      await api.release(await api.acquire(`${AREA}/burst`, worker));
      return metricsPage.latest(CHARTS.throughput, 'Acquisitions');
    })
    .toBeGreaterThan(0);

  const leasesHeld = await metricsPage.latest(CHARTS.leases, 'Active leases');
  for (const h of held) await api.release(h);
  await expect.poll(() => metricsPage.latest(CHARTS.leases, 'Active leases')).toBeLessThanOrEqual(leasesHeld - 5);
  await expect.poll(() => metricsPage.peak(CHARTS.throughput, 'Releases')).toBeGreaterThanOrEqual(1);

  // Latency comes per operation: a row of the latency table, charted when chosen.
  await metricsPage.revealOperation('lease_acquire');
  await metricsPage.operation('lease_acquire').click();
  await expect(metricsPage.readout(latencyChart('lease_acquire'), 'p50')).toContainText('ms');
  await expect(metricsPage.readout(latencyChart('lease_acquire'), 'p99')).toContainText('ms');

  await screenshots(page, 'metrics');
  expect(consoleErrors).toEqual([]);
});

test('the time window is chosen in the URL, by pointer or keyboard, and survives a reload', STORE_INDEPENDENT, async ({ page, signIn, metricsPage }) => {
  await signIn(page);
  await metricsPage.goto();
  await expect(metricsPage.windowOption('5 min'), 'five minutes by default').toBeChecked();
  await expect(metricsPage.chart(CHARTS.throughput)).toContainText('last 5 minutes');

  await metricsPage.windowOption('15 min').check();
  await expect(page).toHaveURL(/[?&]window=15m(&|$)/);
  await expect(metricsPage.chart(CHARTS.throughput)).toContainText('last 15 minutes');

  await page.reload();
  await expect(metricsPage.windowOption('15 min')).toBeChecked();
  await expect(metricsPage.chart(CHARTS.throughput)).toContainText('last 15 minutes');

  await metricsPage.windowOption('15 min').focus();
  await page.keyboard.press('ArrowLeft');
  await expect(metricsPage.windowOption('5 min')).toBeChecked();
  await expect(metricsPage.windowOption('5 min')).toBeFocused();
  await expect(page).toHaveURL(/[?&]window=5m(&|$)/);
});

/** The table's numbers as shown ("1,204", "0.42", "—" as NaN). */
const num = (text: string) => (/^[\d.,]+$/.test(text) ? Number(text.replace(/,/g, '')) : Number.NaN);

test('request latency is a table of operations ranked by p99, any column sorts, and choosing a row charts that operation; sort and choice live in the URL with the window', STORE_INDEPENDENT, async ({
  page,
  api,
  signIn,
  metricsPage,
  consoleErrors,
}) => {
  test.setTimeout(60_000);
  // A workload with errors: a conflict is an error answer of lease_acquire.
  const worker = await api.openSession('metrics-e2e-table');
  const held = await api.acquire(`${AREA}/table-held`, worker);
  const rival = await api.openSession('metrics-e2e-table-rival');
  const refused = await api.http.post(`/api/v1/leases/${held.route.slice('lease://'.length)}/acquire`, {
    data: { session_id: rival.sessionId, request_id: randomUUID(), ttl_ms: 60_000 },
  });
  expect(refused.status()).toBe(409);
  await api.release(held);

  await signIn(page);
  await metricsPage.goto('15m');
  await expect(metricsPage.latencyTable).toBeVisible();
  // No chart with one series per operation, and no legend of thirty names.
  await expect(page.getByRole('figure', { name: /by operation/ })).toHaveCount(0);

  // Ranked by p99, slowest first, by default.
  await expect(metricsPage.column('p99')).toHaveAttribute('aria-sort', 'descending');
  await expect.poll(async () => (await metricsPage.rows()).length).toBeGreaterThan(1);
  const p99s = (await metricsPage.rows()).map((cells) => num(cells[4]!));
  expect(p99s).toEqual([...p99s].sort((a, b) => b - a));

  // More than ten operations (the server is shared by every spec): the top ten, and all of them on request.
  const showAll = page.getByRole('button', { name: /^Show all \d+ operations$/ });
  if ((await showAll.count()) > 0) {
    expect((await metricsPage.rows()).length).toBe(10);
    await showAll.click();
    await expect.poll(async () => (await metricsPage.rows()).length).toBeGreaterThan(10);
  }
  await metricsPage.revealOperation('lease_acquire');

  // lease_acquire: requests counted, and the refused one among its error answers.
  const acquireRow = await metricsPage.operationRow('lease_acquire').getByRole('cell').allInnerTexts();
  expect(num(acquireRow[1]!)).toBeGreaterThanOrEqual(2);
  expect(acquireRow[2]).toMatch(/^(<)?[\d.]+ %$/);
  expect(acquireRow[2]).not.toBe('0 %');

  // The slowest operation is chosen until another is: its p50 and p99, and its requests and errors.
  const first = (await metricsPage.rows())[0]![0]!;
  await expect(metricsPage.operation(first)).toHaveAttribute('aria-pressed', 'true');
  await expect(metricsPage.chart(latencyChart(first))).toBeVisible();
  await metricsPage.operation('lease_acquire').click();
  await expect(page).toHaveURL((url) => url.searchParams.get('op') === 'lease_acquire' && url.searchParams.get('window') === '15m');
  await expect(metricsPage.operation('lease_acquire')).toHaveAttribute('aria-pressed', 'true');
  const chart = metricsPage.chart(latencyChart('lease_acquire'));
  await expect(chart).toBeVisible();
  await expect(chart.getByRole('group')).toHaveCount(2);
  await expect(metricsPage.readout(latencyChart('lease_acquire'), 'p99')).toContainText('ms');
  await expect(metricsPage.chart(loadChart('lease_acquire'))).toBeVisible();
  await expect(metricsPage.readout(loadChart('lease_acquire'), 'Errors')).toBeVisible();
  await expect(metricsPage.chart(latencyChart(first))).toHaveCount(first === 'lease_acquire' ? 1 : 0);

  // Any column sorts: Requests, most first, then fewest first on a second click.
  await metricsPage.column('Requests').getByRole('button').click();
  await expect(metricsPage.column('Requests')).toHaveAttribute('aria-sort', 'descending');
  await expect(metricsPage.column('p99')).not.toHaveAttribute('aria-sort');
  await expect(page).toHaveURL((url) => url.searchParams.get('sort') === 'requests');
  const byRequests = (await metricsPage.rows()).map((cells) => num(cells[1]!));
  expect(byRequests).toEqual([...byRequests].sort((a, b) => b - a));
  await metricsPage.column('Requests').getByRole('button').click();
  await expect(metricsPage.column('Requests')).toHaveAttribute('aria-sort', 'ascending');
  await expect(page).toHaveURL((url) => url.searchParams.get('order') === 'asc');

  // The window picker keeps the sort and the choice; a reload keeps all three.
  await metricsPage.windowOption('5 min').check();
  await expect(page).toHaveURL((url) => url.searchParams.get('window') === '5m' && url.searchParams.get('op') === 'lease_acquire' && url.searchParams.get('sort') === 'requests');
  await expect(chart).toContainText('last 5 minutes');
  await page.reload();
  await expect(metricsPage.windowOption('5 min')).toBeChecked();
  await expect(metricsPage.column('Requests')).toHaveAttribute('aria-sort', 'ascending');
  await expect(metricsPage.operation('lease_acquire')).toHaveAttribute('aria-pressed', 'true');
  await expect(chart).toContainText('last 5 minutes');

  expect(consoleErrors).toEqual([]);
});

test('pictures of the metrics page for docs/console.md, light and dark', STORE_INDEPENDENT, async ({ page, api, signIn, metricsPage }, testInfo) => {
  test.setTimeout(60_000);
  const worker = await api.openSession('metrics-e2e-picture');
  for (let i = 0; i < 3; i++) await api.release(await api.acquire(`${AREA}/picture-${i}`, worker));
  await signIn(page);
  // LEASEHOLD_DOCS_SCREENSHOTS=1 writes into docs/img/, else into the test's output.
  const dir = process.env.LEASEHOLD_DOCS_SCREENSHOTS ? join(process.cwd(), 'docs', 'img') : testInfo.outputPath();
  for (const theme of THEMES) {
    await preferTheme(page, theme);
    await page.goto('/metrics?window=5m&op=lease_acquire');
    await expectTheme(page, theme);
    await expect(metricsPage.drawing(CHARTS.throughput)).toBeVisible();
    await expect(metricsPage.drawing(latencyChart('lease_acquire'))).toBeVisible();
    await expect(metricsPage.operation('lease_acquire')).toHaveAttribute('aria-pressed', 'true');
    await page.screenshot({ path: join(dir, `metrics-${theme}.png`), fullPage: true, animations: 'disabled' });
  }
});

test('a token without read on lease://** is told it cannot read the metrics, and no chart is drawn', async ({ page, api, signIn, metricsPage }) => {
  const { token } = await api.createToken('metrics-e2e-narrow', [`${AREA}/*#read`]);
  await signIn(page, token);
  await metricsPage.goto();
  const denied = page.getByRole('alert').filter({ hasText: 'Access denied' });
  await expect(denied).toContainText('Access denied: your token cannot read the metrics');
  await expect(denied).toContainText('lease://**');
  await expect(metricsPage.chart(CHARTS.throughput)).toHaveCount(0);
});

test('a server started with LEASEHOLD_METRICS=off says so instead of drawing empty charts', STORE_INDEPENDENT, async ({ page, metricsOffServer, metricsPage }) => {
  const login = await page.request.post(`${metricsOffServer.url}/api/v1/auth/login`, { data: { token: metricsOffServer.adminToken } });
  expect(login.ok(), `login: ${login.status()}`).toBe(true);
  await page.goto(`${metricsOffServer.url}/metrics`);
  await expect(page.getByRole('heading', { name: 'Metrics are off on this server' })).toBeVisible();
  await expect(page.getByText('LEASEHOLD_METRICS=off', { exact: true })).toBeVisible();
  await expect(metricsPage.chart(CHARTS.throughput)).toHaveCount(0);
});
