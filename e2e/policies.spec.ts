import { randomUUID } from 'node:crypto';
import { expect, test } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';

test.describe.configure({ timeout: 60_000 });

const REASON = 'primaries must survive a GC pause';

function acquirePath(route: string): string {
  return `/api/v1/leases/${route.slice('lease://'.length)}/acquire`;
}

test('a policy made in the console puts an expired lease’s route in lock-delay, and a waiter gets it when the delay ends', async ({ api, page, signIn, consoleErrors }) => {
  const realm = `pol-${randomUUID().slice(0, 8)}`;
  const selector = `lease://${realm}/**`;
  const route = `lease://${realm}/db/primary`;
  await signIn(page);
  await page.goto('/leases');
  await page.getByRole('navigation').getByRole('link', { name: 'Policies' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Policies' })).toBeVisible();

  await page.getByRole('button', { name: 'New policy' }).click();
  const form = page.getByRole('form', { name: 'Policy' });
  // Validation before sending: a bad selector and a short reason are refused in the page.
  await form.getByRole('textbox', { name: 'Selector' }).fill('lease://nope');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await expect(form).toContainText('Not a selector');
  await expect(form).toContainText('10 to 500 characters');
  await form.getByRole('textbox', { name: 'Selector' }).fill(selector);
  await form.getByRole('textbox', { name: 'Reason' }).fill(REASON);
  await form.getByRole('spinbutton', { name: 'Lock-delay (ms)' }).fill('4000');
  await form.getByRole('spinbutton', { name: 'Maximum waiters' }).fill('4');
  await form.getByRole('button', { name: 'Save policy' }).click();
  await expect(page.getByRole('table', { name: 'Policies' })).toContainText(selector);

  await page.getByRole('textbox', { name: 'Route' }).fill(route);
  await page.getByRole('button', { name: 'Explain' }).click();
  const effective = page.getByRole('definition').filter({ hasText: selector });
  await expect(effective).toBeVisible();

  // A lease that expires (its holder stops renewing) starts the delay.
  await api.hold(route, 'old-primary', { ttlMs: 2_000 });
  const detail = new LeaseDetailPage(page);
  await detail.goto(route);
  const delay = page.getByRole('status', { name: 'Lock-delay' });
  await expect(delay).toContainText('In lock-delay', { timeout: 15_000 });
  await expect(delay).toContainText(/\d+ s/);

  const waiter = await api.openSession('new-primary', 30_000);
  const waiting = api.http.post(acquirePath(route), { data: { session_id: waiter.sessionId, request_id: randomUUID(), ttl_ms: 30_000, wait_ms: 15_000 } });
  await expect(detail.field('Owner')).toContainText('new-primary', { timeout: 15_000 });
  expect((await waiting).status()).toBe(200);
  expect(consoleErrors.filter((e) => !e.includes('Failed to load resource'))).toEqual([]);
});

test('the force dialog’s Skip lock-delay frees the route at once', async ({ api, page, signIn }) => {
  const realm = `pols-${randomUUID().slice(0, 8)}`;
  const route = `lease://${realm}/db/primary`;
  const set = await api.http.put('/api/v1/policies', { data: { selector: `lease://${realm}/**`, reason: REASON, lock_delay_ms: 60_000 } });
  expect(set.status()).toBe(200);
  await api.hold(route, 'wedged-primary');
  await signIn(page);
  const detail = new LeaseDetailPage(page);
  await detail.goto(route);
  await detail.forceReleaseButton.click();
  const dialog = detail.forceReleaseDialog;
  await dialog.getByRole('textbox', { name: 'Reason' }).fill('host confirmed dead by the hypervisor');
  await dialog.getByRole('checkbox', { name: 'Skip lock-delay' }).check();
  await dialog.getByRole('button', { name: 'Confirm force release' }).click();
  await expect(detail.notice).toBeVisible();
  await expect(page.getByRole('status', { name: 'Lock-delay' })).toHaveCount(0);
  const next = await api.openSession('successor', 30_000);
  const got = await api.http.post(acquirePath(route), { data: { session_id: next.sessionId, request_id: randomUUID(), ttl_ms: 30_000 } });
  expect(got.status(), await got.text()).toBe(200);
  await expect(detail.field('Owner')).toContainText('successor', { timeout: 15_000 });
});
