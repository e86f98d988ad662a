import { randomUUID } from 'node:crypto';
import { expect, test as base, type Held, type LeaseholdApi, STORE_INDEPENDENT } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';

const test = base.extend<{ leaseDetail: LeaseDetailPage }>({
  leaseDetail: async ({ page }, use) => {
    await use(new LeaseDetailPage(page));
  },
});

// Several tests write full-page screenshots in light and dark; on a shared
// two-core machine that alone can take half of the default 30 s.
test.describe.configure({ timeout: 60_000 });

/** A route of this spec's own (lease://acme/detail-e2e/…), so specs sharing the server never meet. */
function uniqueRoute(name: string): string {
  return `lease://acme/detail-e2e/${name}-${randomUUID().slice(0, 8)}`;
}

function leasePath(route: string, action: string): string {
  return `/api/v1/leases/${route.slice('lease://'.length)}/${action}`;
}

/** A call made as the holder would make it; answers are returned, not asserted, since refusals are the point. */
async function asHolder(api: LeaseholdApi, method: 'POST' | 'PUT', path: string, body: object): Promise<{ status: number; code: string }> {
  const res = await api.http.fetch(path, { method, data: body });
  const json = (await res.json()) as { code: string };
  return { status: res.status(), code: json.code };
}

function proof(held: Held) {
  return { session_id: held.sessionId, request_id: randomUUID(), lease_id: held.leaseId, fencing_token: held.fencingToken };
}

const renew = (api: LeaseholdApi, held: Held) => asHolder(api, 'POST', leasePath(held.route, 'renew'), proof(held));
const writeCheckpoint = (api: LeaseholdApi, held: Held, value: unknown) => asHolder(api, 'PUT', leasePath(held.route, 'checkpoint'), { ...proof(held), value });
const keepAlive = (api: LeaseholdApi, sessionId: string) => asHolder(api, 'POST', '/api/v1/sessions/keepalive', { session_id: sessionId });

/** Page errors and console errors, except the browser's own log line for an HTTP error answer (a free route is a 404 by contract). */
function unexpected(errors: string[]): string[] {
  return errors.filter((e) => !e.includes('Failed to load resource'));
}

test('force release needs a reason of 10 characters, and the holder then loses the lease', async ({ api, page, signIn, leaseDetail, screenshots, consoleErrors }) => {
  const route = uniqueRoute('force');
  const held = await api.hold(route, 'renderer-7');
  await signIn(page);
  await leaseDetail.goto(route);

  await expect(leaseDetail.heading(route)).toBeVisible();
  await expect(leaseDetail.field('Fencing token')).toHaveText(String(held.fencingToken));
  await expect(leaseDetail.field('Owner')).toContainText('renderer-7');
  await expect(leaseDetail.field('Holder incarnation')).toContainText(held.holderIncarnation);
  await expect(leaseDetail.field('Expires')).toContainText(/in \d+/);
  await expect(leaseDetail.feed).toContainText('live');
  await screenshots(page, 'lease-detail');

  await leaseDetail.forceReleaseButton.click();
  const dialog = leaseDetail.forceReleaseDialog;
  await expect(dialog).toBeVisible();
  for (const seen of [route, 'renderer-7', held.holderIncarnation, String(held.fencingToken)]) await expect(dialog).toContainText(seen);
  const confirm = leaseDetail.confirmForceRelease();
  await expect(confirm).toBeDisabled();

  await leaseDetail.reason(dialog).fill('node dead');
  await expect(dialog.getByText('9 / 500')).toBeVisible();
  await expect(confirm).toBeDisabled();
  await leaseDetail.reason(dialog).fill('   node dead   ');
  await expect(dialog.getByText('9 / 500'), 'spaces around the reason do not count').toBeVisible();
  await expect(confirm).toBeDisabled();
  await leaseDetail.reason(dialog).fill('node dead!');
  await expect(dialog.getByText('10 / 500')).toBeVisible();
  await expect(confirm).toBeEnabled();
  await screenshots(page, 'force-release-dialog');

  await confirm.click();
  await expect(dialog).toBeHidden();
  await expect(leaseDetail.notice).toContainText(`Fencing token ${held.fencingToken} is no longer valid`);

  // The holder really lost it: the route is free, and its own renew is refused.
  expect(await api.inspect(route)).toBeUndefined();
  expect(await renew(api, held)).toEqual({ status: 409, code: 'lease_lost' });

  await expect(leaseDetail.holder).toContainText('Nobody holds this route');
  await expect(leaseDetail.forceReleaseButton).toHaveCount(0);
  await expect(leaseDetail.revokeButton).toHaveCount(0);
  await screenshots(page, 'lease-detail-free');
  expect(unexpected(consoleErrors)).toEqual([]);
});

test('revoke needs the resource name typed exactly, and can close the holder’s session with all its leases', async ({ api, page, signIn, leaseDetail, screenshots, consoleErrors }) => {
  const route = uniqueRoute('revoke');
  const otherRoute = uniqueRoute('revoke-other');
  const resource = route.split('/').pop()!;
  const session = await api.openSession('compromised-worker');
  const held = await api.acquire(route, session);
  await api.acquire(otherRoute, session);
  await signIn(page);
  await leaseDetail.goto(route);
  await expect(leaseDetail.field('Fencing token')).toHaveText(String(held.fencingToken));

  await leaseDetail.revokeButton.click();
  const dialog = leaseDetail.revokeDialog;
  await expect(dialog).toBeVisible();
  const confirm = leaseDetail.confirmRevoke();
  await leaseDetail.reason(dialog).fill('credentials leaked in a build log, INC-7731');
  await expect(confirm, 'the resource name is still missing').toBeDisabled();
  await leaseDetail.resourceConfirmation(dialog).fill('wrong-name');
  await expect(confirm).toBeDisabled();
  await leaseDetail.resourceConfirmation(dialog).fill(resource.toUpperCase());
  await expect(confirm, 'the name must match exactly').toBeDisabled();
  await leaseDetail.resourceConfirmation(dialog).fill(resource);
  await expect(confirm).toBeEnabled();
  await leaseDetail.closeSessionCheckbox(dialog).check();
  await expect(leaseDetail.closeSessionCheckbox(dialog)).toBeChecked();
  await screenshots(page, 'revoke-dialog');

  await confirm.click();
  await expect(dialog).toBeHidden();
  await expect(leaseDetail.notice).toContainText('Lease revoked');
  await expect(leaseDetail.notice).toContainText('session was closed');

  // The session is closed: both of its leases are gone and it cannot be kept alive.
  expect(await api.inspect(route)).toBeUndefined();
  expect(await api.inspect(otherRoute)).toBeUndefined();
  expect(await keepAlive(api, session.sessionId)).toEqual({ status: 404, code: 'session_not_found' });
  expect(await renew(api, held)).toEqual({ status: 409, code: 'lease_lost' });

  await expect(leaseDetail.holder).toContainText('Nobody holds this route');
  expect(unexpected(consoleErrors)).toEqual([]);
});

test('a lease that changed while the dialog was open is explained, not retried, and the new holder keeps it', async ({ api, page, signIn, leaseDetail, screenshots }) => {
  const route = uniqueRoute('mismatch');
  const first = await api.hold(route, 'first-owner');
  await signIn(page);
  await leaseDetail.goto(route);
  await expect(leaseDetail.field('Fencing token')).toHaveText(String(first.fencingToken));

  await leaseDetail.forceReleaseButton.click();
  const dialog = leaseDetail.forceReleaseDialog;
  await leaseDetail.reason(dialog).fill('renderer stuck since the 03:00 deploy');

  // Meanwhile the lease is released and another session takes the route.
  await api.release(first);
  const successor = await api.hold(route, 'successor');
  expect(successor.fencingToken).toBeGreaterThan(first.fencingToken);
  await expect(dialog, 'the dialog keeps the lease as the operator saw it').toContainText('first-owner');

  const attempts: string[] = [];
  page.on('request', (req) => {
    if (req.url().endsWith('/force-release')) attempts.push(req.url());
  });
  await leaseDetail.confirmForceRelease().click();

  const alert = leaseDetail.alert(dialog);
  await expect(alert).toContainText('The lease changed since you opened this; review again');
  await expect(alert).toContainText('lease_mismatch');
  await expect(alert).toContainText(/correlation id \S+/);
  await expect(alert).toContainText(`held by successor with fencing token ${successor.fencingToken}`);
  await expect(leaseDetail.confirmForceRelease(), 'no blind retry from the dialog').toBeDisabled();
  expect(attempts).toHaveLength(1);
  await screenshots(page, 'lease-mismatch');

  const now = await api.inspect(route);
  expect(now?.fencing_token).toBe(successor.fencingToken);
  expect(now?.owner_id).toBe('successor');
  expect(await renew(api, successor)).toMatchObject({ status: 200, code: 'lease_renewed' });

  await leaseDetail.cancel(dialog).click();
  await expect(dialog).toBeHidden();
  await expect(leaseDetail.field('Fencing token')).toHaveText(String(successor.fencingToken));
  await expect(leaseDetail.field('Owner')).toContainText('successor');
});

test('a read-only token sees the lease but is offered neither force release nor revoke', async ({ api, page, signIn, leaseDetail, screenshots, consoleErrors }) => {
  const route = uniqueRoute('read-only');
  const held = await api.hold(route, 'visible-worker');
  const viewer = await api.createToken('viewer', ['lease://acme/**#read']);
  await signIn(page, viewer.token);
  await leaseDetail.goto(route);

  await expect(leaseDetail.heading(route)).toBeVisible();
  await expect(leaseDetail.field('Fencing token')).toHaveText(String(held.fencingToken));
  await expect(leaseDetail.field('Owner')).toContainText('visible-worker');
  await expect(leaseDetail.feed).toContainText('live');
  await expect(leaseDetail.forceReleaseButton).toHaveCount(0);
  await expect(leaseDetail.revokeButton).toHaveCount(0);
  await expect(page.getByText('The audit trail needs an admin grant on this route')).toBeVisible();
  await screenshots(page, 'lease-detail-read-only');
  expect(unexpected(consoleErrors)).toEqual([]);
});

test('the page shows the checkpoint written through the API, live renewals, and the force release with its reason in the audit trail', async ({
  api,
  page,
  signIn,
  leaseDetail,
  screenshots,
}) => {
  const route = uniqueRoute('checkpoint');
  const held = await api.hold(route, 'indexer-2');
  expect(await writeCheckpoint(api, held, { cursor: 'offset-1207', shard: 3 })).toMatchObject({ status: 200, code: 'checkpoint_written' });
  await signIn(page);
  await leaseDetail.goto(route);

  await expect(leaseDetail.checkpointField('Version')).toHaveText('1');
  await expect(leaseDetail.checkpointField('Fencing token')).toContainText(String(held.fencingToken));
  await expect(leaseDetail.checkpointValue).toContainText('"cursor": "offset-1207"');
  await expect(leaseDetail.checkpointValue).toContainText('"shard": 3');
  await expect(leaseDetail.field('Renewals')).toHaveText('0');
  await expect(leaseDetail.feed).toContainText('live');

  // A renewal by the holder reaches the page through the feed.
  expect(await renew(api, held)).toMatchObject({ status: 200, code: 'lease_renewed' });
  await expect(leaseDetail.field('Renewals')).toHaveText('1');

  const reason = 'indexer wedged on shard 3, ticket OPS-2041';
  await leaseDetail.forceReleaseButton.click();
  await leaseDetail.reason(leaseDetail.forceReleaseDialog).fill(reason);
  await leaseDetail.confirmForceRelease().click();
  await expect(leaseDetail.forceReleaseDialog).toBeHidden();

  const forced = leaseDetail.auditRow('Force release', reason);
  await expect(forced).toHaveCount(1);
  await expect(forced).toContainText('lease_force_released');
  await expect(forced).toContainText(String(held.fencingToken));
  await expect(leaseDetail.auditRow('Checkpoint', 'checkpoint_written')).toHaveCount(1);
  await expect(leaseDetail.auditRow('Acquire', 'lease_acquired')).toHaveCount(1);

  // Free now, and the checkpoint outlives the lease.
  await expect(leaseDetail.holder).toContainText('Nobody holds this route');
  await expect(leaseDetail.checkpointValue).toContainText('offset-1207');
  await screenshots(page, 'lease-detail-checkpoint');
});

test('a detail URL that is not a lease route says so, and is never decoded into another route', STORE_INDEPENDENT, async ({ page, signIn }) => {
  await signIn(page);
  // `a%253A` is the segment `a%3A` (invalid), not `a:`.
  for (const path of ['/leases/acme/detail-e2e/bad%20name', '/leases/acme/detail-e2e/a%253A']) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1, name: 'Invalid lease route' })).toBeVisible();
    await expect(page.getByRole('alert').filter({ hasText: 'This is not a lease route' })).toContainText('has an invalid segment');
  }
});
