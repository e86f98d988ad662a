// docs/console.md "On-call views on /leases": the on-call views. On /leases, filters the server applies
// (expiring soon, with waiters, release requested), the free routes in
// lock-delay, an exact count of the matching leases with the owners holding
// them (one click filters by an owner), all kept in the URL; on lease detail,
// the policy that applies to the route with a link to the policies page.
import { randomUUID } from 'node:crypto';
import { expect, test as base, type LeaseholdApi } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';
import { LeasesPage } from './pages/leases-page';

const test = base.extend<{ leaseDetail: LeaseDetailPage; leasesPage: LeasesPage }>({
  leaseDetail: async ({ page }, use) => {
    await use(new LeaseDetailPage(page));
  },
  leasesPage: async ({ page }, use) => {
    await use(new LeasesPage(page));
  },
});

test.describe.configure({ timeout: 90_000 });

const REASON = 'draining the node for the on-call test';
const realm = () => `oncall-${randomUUID().slice(0, 8)}`;
const apiPath = (route: string, action: string) => `/api/v1/leases/${route.slice('lease://'.length)}/${action}`;

async function setPolicy(api: LeaseholdApi, selector: string, fields: Record<string, number>): Promise<void> {
  const res = await api.http.put('/api/v1/policies', { data: { selector, reason: 'on-call views e2e policy', ...fields } });
  expect(res.status(), await res.text()).toBe(200);
}

test('the on-call filters narrow the table on the server, live in the URL, and the counts follow them', async ({ api, page, signIn, leasesPage, consoleErrors }) => {
  const r = realm();
  const route = (name: string) => `lease://${r}/jobs/${name}`;
  const soon = `lease://${r}/tick/soon`;
  const long = { ttlMs: 120_000 };
  await setPolicy(api, `lease://${r}/**`, { lock_delay_ms: 60_000 });
  // The short lease's session outlives it: the lease is the one expiring soon.
  await api.acquire(soon, await api.openSession('night-worker', 120_000), { ttlMs: 25_000 });
  const asked = await api.hold(route('asked'), 'day-worker', long);
  const busy = await api.hold(route('busy'), 'day-worker', long);
  await api.hold(route('calm'), 'day-worker', long);
  await api.hold(route('nightly'), 'night-worker', long);
  const forced = await api.hold(route('forced'), 'wedged-worker', long);
  expect((await api.http.post(apiPath(asked.route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: asked.fencingToken } })).ok()).toBe(true);
  await signIn(page);
  // Expiring soon first, while the short lease is held (it ends on its own 25 s TTL).
  await leasesPage.goto(`lease://${r}/**`);
  await expect(leasesPage.rows).toHaveCount(6);
  await expect(leasesPage.counts).toContainText('6 matching leases');
  await leasesPage.filter('Expiring soon').click();
  await expect(page).toHaveURL(/[?&]expiring=30(&|$)/);
  await expect(leasesPage.filter('Expiring soon')).toHaveAttribute('aria-pressed', 'true');
  await expect(leasesPage.rows).toHaveCount(1);
  await expect(leasesPage.row(soon)).toBeVisible();
  await expect(leasesPage.counts).toContainText('1 matching lease');
  await leasesPage.expiringWindow.selectOption('300');
  await expect(page).toHaveURL(/[?&]expiring=300(&|$)/);
  await expect(leasesPage.rows).toHaveCount(6);

  // The rest on the jobs area, whose leases last the whole test. A client of
  // the same owner queues for the busy route (a wait is 30 s at most: it
  // starts here, and is granted right after the waiters check).
  const waiter = await api.openSession('day-worker', 120_000);
  const waiting = api.http.post(apiPath(busy.route, 'acquire'), { data: { session_id: waiter.sessionId, request_id: randomUUID(), ttl_ms: 120_000, wait_ms: 30_000 } });
  await expect.poll(async () => (await api.inspect(busy.route))?.waiters).toBe(1);
  await leasesPage.goto(`lease://${r}/jobs/*`);
  await expect(leasesPage.rows).toHaveCount(5);
  await expect(leasesPage.counts).toContainText('5 matching leases');
  await expect(leasesPage.ownerCount('day-worker')).toHaveAccessibleName('day-worker 3 leases');
  await expect(leasesPage.ownerCount('night-worker')).toHaveAccessibleName('night-worker 1 lease');
  await expect(leasesPage.table.getByRole('columnheader', { name: /Route/ })).toHaveAttribute('aria-sort', 'ascending');

  await leasesPage.filter('With waiters').click();
  await expect(page).toHaveURL(/[?&]waiters=1(&|$)/);
  await expect(leasesPage.rows).toHaveCount(1);
  await expect(leasesPage.row(busy.route)).toBeVisible();
  await expect(leasesPage.counts).toContainText('1 matching lease');
  await leasesPage.filter('With waiters').click();
  await expect(leasesPage.rows).toHaveCount(5);
  // The queued client gets the route: the table follows live, and the counts stay the owner's.
  const before = await leasesPage.row(busy.route).getByRole('cell').nth(6).textContent();
  await api.release(busy);
  expect((await waiting).status()).toBe(200);
  await expect(leasesPage.row(busy.route).getByRole('cell').nth(6)).not.toHaveText(before ?? '');

  await leasesPage.filter('Release requested').click();
  await expect(page).toHaveURL(/[?&]release_requested=1(&|$)/);
  await expect(leasesPage.rows).toHaveCount(1);
  await expect(leasesPage.row(asked.route)).toContainText('Release requested');
  // A shared link opens the same view.
  await page.reload();
  await expect(leasesPage.filter('Release requested')).toHaveAttribute('aria-pressed', 'true');
  await expect(leasesPage.rows).toHaveCount(1);
  await leasesPage.filter('Release requested').click();
  await expect(leasesPage.rows).toHaveCount(5);

  // Choosing an owner filters by it; choosing it again shows every owner.
  await leasesPage.ownerCount('day-worker').click();
  await expect(page).toHaveURL(/[?&]owner=day-worker(&|$)/);
  await expect(leasesPage.owner).toHaveValue('day-worker');
  await expect(leasesPage.rows).toHaveCount(3);
  await expect(leasesPage.counts).toContainText('3 matching leases');
  await leasesPage.ownerCount('day-worker').click();
  await expect(leasesPage.rows).toHaveCount(5);

  // Free routes in lock-delay are their own list (a delay lasts 60 s at most:
  // it starts here); choosing a lease filter goes back to the leases.
  expect((await api.http.post(apiPath(forced.route, 'force-release'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: forced.fencingToken } })).ok()).toBe(true);
  await expect(leasesPage.row(forced.route)).toHaveCount(0);
  await leasesPage.filter('In lock-delay').click();
  await expect(page).toHaveURL(/[?&]lock_delay=1(&|$)/);
  const delayed = leasesPage.lockDelayTable.getByRole('row').filter({ has: page.getByRole('cell') });
  await expect(delayed).toHaveCount(1);
  await expect(delayed.first()).toContainText(forced.route);
  await expect(delayed.first().getByRole('cell').nth(1)).toHaveText(/^(\d+s|1m 00s)$/);
  await expect(leasesPage.table).toHaveCount(0);
  await leasesPage.filter('With waiters').click();
  await expect(page).not.toHaveURL(/lock_delay=1/);
  await expect(leasesPage.rows).toHaveCount(0);
  await expect(page.getByText('No held leases match')).toBeVisible();
  expect(consoleErrors).toEqual([]);
});

test('lease detail shows the policy that applies to the route, linking to the policies page', async ({ api, page, signIn, leaseDetail }) => {
  const r = realm();
  await setPolicy(api, `lease://${r}/db/*`, { lock_delay_ms: 15_000, max_waiters: 7 });
  const held = await api.hold(`lease://${r}/db/primary`, 'db-primary');
  const plain = await api.hold(`lease://${r}/cache/warm`, 'cache-warmer');

  await signIn(page);
  await leaseDetail.goto(held.route);
  const panel = leaseDetail.applyingPolicy;
  await expect(panel.getByLabel('Policy', { exact: true })).toHaveText(`lease://${r}/db/*`);
  await expect(panel.getByLabel('Lock-delay', { exact: true })).toHaveText('15,000 ms');
  await expect(panel.getByLabel('Max waiters', { exact: true })).toHaveText('7');
  const link = panel.getByRole('link', { name: 'Open in Policies' });
  await expect(link).toHaveAttribute('href', `/policies?selector=${encodeURIComponent(`lease://${r}/db/*`)}&route=${encodeURIComponent(held.route)}`);

  await leaseDetail.goto(plain.route);
  await expect(leaseDetail.applyingPolicy.getByLabel('Policy', { exact: true })).toHaveText('none (global bounds)');
  await expect(leaseDetail.applyingPolicy.getByRole('link', { name: 'Policies' })).toHaveAttribute('href', `/policies?route=${encodeURIComponent(plain.route)}`);
});
