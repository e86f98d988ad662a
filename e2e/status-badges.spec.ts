// docs/console.md "On-call: badges and dialogs that tell the truth": status badges that tell the truth (a free route in
// lock-delay is not "Free"; a pending release request and waiters show on
// the list and on lease detail), and operator dialogs that state the
// route's lock-delay and a pending request, with "Skip lock-delay" only
// where it acts.
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

test.describe.configure({ timeout: 60_000 });

const REASON = 'deploying the new primary, please hand over';
const realm = () => `badge-${randomUUID().slice(0, 8)}`;
const apiPath = (route: string, action: string) => `/api/v1/leases/${route.slice('lease://'.length)}/${action}`;

async function setLockDelay(api: LeaseholdApi, selector: string, ms: number): Promise<void> {
  const res = await api.http.put('/api/v1/policies', { data: { selector, reason: 'on-call badges e2e policy', lock_delay_ms: ms } });
  expect(res.status(), await res.text()).toBe(200);
}

async function askToRelease(api: LeaseholdApi, route: string, fencingToken: number): Promise<void> {
  const res = await api.http.post(apiPath(route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: fencingToken } });
  expect(res.status(), await res.text()).toBe(200);
}

test('a free route in lock-delay is badged "Lock-delay N s", counting down, never "Free"', async ({ api, page, signIn, leaseDetail }) => {
  const r = realm();
  const route = `lease://${r}/db/primary`;
  await setLockDelay(api, `lease://${r}/**`, 60_000);
  const held = await api.hold(route, 'wedged-primary');
  const forced = await api.http.post(apiPath(route, 'force-release'), { data: { request_id: randomUUID(), reason: 'wedged, freeing it for the badge test', expected_fencing_token: held.fencingToken } });
  expect(forced.ok()).toBe(true);

  await signIn(page);
  await leaseDetail.goto(route);
  await expect(leaseDetail.statusBadges).toHaveText([/^Lock-delay \d+ s$/]);
  const seconds = async () => Number(/(\d+) s/.exec((await leaseDetail.statusBadges.first().textContent()) ?? '')?.[1]);
  const first = await seconds();
  expect(first).toBeGreaterThan(40);
  expect(first).toBeLessThanOrEqual(60);
  await expect.poll(seconds, { message: 'the badge counts down' }).toBeLessThan(first);
  await expect(page.getByRole('status', { name: 'Lock-delay' })).toContainText(/accepts no new holder for \d+ s/);
});

test('a pending release request and the waiters show as badges on lease detail and on the leases table, live', async ({ api, page, signIn, leaseDetail, leasesPage }) => {
  const r = realm();
  const route = `lease://${r}/jobs/asked`;
  const quiet = `lease://${r}/jobs/quiet`;
  const held = await api.hold(route, 'busy-worker');
  const quietHeld = await api.hold(quiet, 'quiet-worker');
  await askToRelease(api, route, held.fencingToken);
  const waiter = await api.openSession('next-worker', 30_000);
  const waiting = api.http.post(apiPath(route, 'acquire'), { data: { session_id: waiter.sessionId, request_id: randomUUID(), ttl_ms: 30_000, wait_ms: 25_000 } });
  await expect.poll(async () => (await api.inspect(route))?.waiters).toBe(1);

  await signIn(page);
  await leaseDetail.goto(route);
  await expect(leaseDetail.statusBadges).toHaveText(['Held', 'Release requested', '1 waiting']);

  await leasesPage.goto(`lease://${r}/jobs/*`);
  await expect(leasesPage.feed).toContainText('live');
  await expect(leasesPage.row(route)).toContainText('Release requested');
  await expect(leasesPage.row(route).getByRole('cell').last()).toHaveText('1');
  await expect(leasesPage.row(quiet)).not.toContainText('Release requested');
  // A request made while the table is open shows without a reload.
  await askToRelease(api, quiet, quietHeld.fencingToken);
  await expect(leasesPage.row(quiet)).toContainText('Release requested');

  await api.release(held);
  expect((await waiting).status()).toBe(200);
});

test('the force and revoke dialogs state the lock-delay and the pending request; Skip lock-delay is offered only where it acts', async ({ api, page, signIn, leaseDetail }) => {
  const r = realm();
  const route = `lease://${r}/db/primary`;
  await setLockDelay(api, `lease://${r}/db/*`, 42_000);
  const held = await api.hold(route, 'old-primary');
  await askToRelease(api, route, held.fencingToken);
  await signIn(page);
  await leaseDetail.goto(route);
  await expect(leaseDetail.statusBadges).toHaveText(['Held', 'Release requested']);

  await leaseDetail.askButton.click();
  await expect(leaseDetail.askDialog).toBeVisible();
  await expect(leaseDetail.skipLockDelay(leaseDetail.askDialog), 'a release request starts no lock-delay').toHaveCount(0);
  await leaseDetail.cancel(leaseDetail.askDialog).click();

  for (const [button, dialog] of [
    [leaseDetail.forceReleaseButton, leaseDetail.forceReleaseDialog],
    [leaseDetail.revokeButton, leaseDetail.revokeDialog],
  ] as const) {
    await button.click();
    await expect(dialog).toContainText(/Lock-delay\s*42 s/);
    await expect(dialog).toContainText(`lease://${r}/db/*`);
    await expect(dialog).toContainText(/Release request\s*pending, asked \d+s ago/);
    await expect(dialog).toContainText(REASON);
    await expect(leaseDetail.skipLockDelay(dialog)).toBeVisible();
    await leaseDetail.cancel(dialog).click();
  }

  // A route without lock-delay: the dialog says so, and offers no skip.
  const plain = await api.hold(`lease://${r}/cache/warm`, 'cache-warmer');
  await leaseDetail.goto(plain.route);
  await leaseDetail.forceReleaseButton.click();
  await expect(leaseDetail.forceReleaseDialog).toContainText(/Lock-delay\s*none/);
  await expect(leaseDetail.forceReleaseDialog).not.toContainText('Release request');
  await expect(leaseDetail.skipLockDelay(leaseDetail.forceReleaseDialog)).toHaveCount(0);
});
