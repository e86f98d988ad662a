import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { expectTheme, preferTheme, THEMES } from './axe';
import { expect, test, STORE_INDEPENDENT } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';
import { TIME_FACTOR } from './time';

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
  // Long enough for the page to catch it on a loaded machine (× the time factor).
  await form.getByRole('spinbutton', { name: 'Lock-delay (ms)' }).fill(String(4_000 * TIME_FACTOR));
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
  await expect(delay).toContainText('In lock-delay', { timeout: 15_000 * TIME_FACTOR });
  await expect(delay).toContainText(/\d+ s/);

  const waiter = await api.openSession('new-primary', 30_000);
  const waiting = api.http.post(acquirePath(route), { data: { session_id: waiter.sessionId, request_id: randomUUID(), ttl_ms: 30_000, wait_ms: 30_000 } });
  await expect(detail.field('Owner')).toContainText('new-primary', { timeout: 15_000 * TIME_FACTOR });
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

test.describe('the policies table reads like the rest of the console', STORE_INDEPENDENT, () => {
  // A zone that is not the server's and a locale whose default clock is 12 h: the console's one 24 h format regardless.
  test.use({ timezoneId: 'Asia/Kolkata', locale: 'en-US' });

  test('spans in human units, the update time in the 24 h format with the ISO instant on hover, who updated each policy, and a selector filter kept in the URL', async ({
    api,
    page,
    signIn,
    consoleErrors,
  }) => {
    const realm = `polh-${randomUUID().slice(0, 8)}`;
    const selector = `lease://${realm}/db/**`;
    const other = `lease://${realm}/jobs/**`;
    const put = async (data: object) => {
      const res = await api.http.put('/api/v1/policies', { data });
      expect(res.status(), await res.text()).toBe(200);
    };
    await put({ selector, reason: REASON, ttl_min_ms: 1_500, ttl_max_ms: 600_000, ttl_default_ms: 30_000, max_lifetime_ms: 3_600_000, lock_delay_ms: 250, max_waiters: 8 });
    await put({ selector: other, reason: REASON, ttl_default_ms: 90_000 });
    const whoami = await api.http.get('/api/v1/auth/whoami');
    const tokenId = ((await whoami.json()) as { token_id: string }).token_id;

    await signIn(page);
    await page.goto('/policies');
    const table = page.getByRole('table', { name: 'Policies' });
    await expect(table.getByRole('columnheader', { name: 'Updated by' })).toBeVisible();
    const row = table.getByRole('row').filter({ has: page.getByRole('cell', { name: selector, exact: true }) });
    await expect(row).toBeVisible();
    const cells = row.getByRole('cell');
    await expect(cells.nth(1)).toHaveText('1.5s / 10m');
    await expect(cells.nth(2)).toHaveText('30s');
    await expect(cells.nth(3)).toHaveText('1h');
    await expect(cells.nth(4)).toHaveText('250 ms');
    await expect(cells.nth(5)).toHaveText('8');
    // The exact milliseconds stay on hover.
    await expect(cells.nth(3).getByText('1h', { exact: true })).toHaveAttribute('title', '3,600,000 ms');
    await expect(row).not.toContainText('3600000');

    // Updated: the 24 h clock (today) in the browser's zone, never AM/PM; the ISO instant on hover.
    const updated = cells.nth(6).locator('time');
    await expect(updated).toHaveText(/^\d{2}:\d{2}:\d{2}$/);
    const iso = await updated.getAttribute('title');
    expect(iso).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(await updated.getAttribute('datetime')).toBe(iso);
    // Updated by: the token that set it, shortened, whole on hover and copyable.
    await expect(cells.nth(7).getByTitle(tokenId, { exact: true })).toBeVisible();
    await expect(cells.nth(7).getByRole('button', { name: 'Copy token id' })).toBeVisible();

    // The filter narrows by selector text, as typed, and lives in the URL.
    const filter = page.getByRole('searchbox', { name: 'Filter by selector' });
    await filter.fill(`${realm}/jobs`);
    await expect(table.getByRole('row')).toHaveCount(2);
    await expect(table).toContainText(other);
    await expect(table).not.toContainText(selector);
    await expect(page).toHaveURL((url) => url.searchParams.get('selector') === `${realm}/jobs`);
    await expect(table.getByRole('row').nth(1).getByRole('cell').nth(2)).toHaveText('1m 30s');
    await page.reload();
    await expect(filter).toHaveValue(`${realm}/jobs`);
    await expect(table.getByRole('row')).toHaveCount(2);
    await filter.fill(realm.toUpperCase());
    await expect(table.getByRole('row')).toHaveCount(3);
    await filter.fill(`${realm}/nothing-here`);
    await expect(page.getByText('No matching policies')).toBeVisible();
    await page.getByRole('button', { name: 'Show every policy' }).click();
    await expect(filter).toHaveValue('');
    await expect(page).toHaveURL((url) => !url.searchParams.has('selector'));
    await expect(row).toBeVisible();

    // A link from lease detail ("Open in Policies"): the policy's selector filters, the route is explained.
    await page.goto(`/policies?selector=${encodeURIComponent(other)}&route=${encodeURIComponent(`lease://${realm}/jobs/nightly`)}`);
    await expect(filter).toHaveValue(other);
    await expect(table.getByRole('row')).toHaveCount(2);
    await expect(page.getByRole('textbox', { name: 'Route' })).toHaveValue(`lease://${realm}/jobs/nightly`);
    await expect(page.getByRole('definition').filter({ hasText: other })).toBeVisible();
    await page.goto('/policies');

    // The form keeps milliseconds, and says beside each what they read as.
    await row.getByRole('button', { name: `Edit ${selector}` }).click();
    const form = page.getByRole('form', { name: 'Policy' });
    const lifetime = form.getByRole('spinbutton', { name: 'Maximum lifetime (ms)' });
    await expect(lifetime).toHaveValue('3600000');
    await expect(lifetime).toHaveAccessibleDescription(/= 1h/);
    await lifetime.fill('5400000');
    await expect(form.getByText('= 1h 30m', { exact: true })).toBeVisible();
    await expect(form.getByRole('spinbutton', { name: 'Lock-delay (ms)' })).toHaveAccessibleDescription(/= 250 ms/);
    expect(consoleErrors).toEqual([]);
  });

  test('pictures of the policies page for docs/console.md, light and dark', async ({ api, page, signIn }, testInfo) => {
    const realm = `polp-${randomUUID().slice(0, 8)}`;
    for (const [area, data] of [
      ['db', { ttl_min_ms: 5_000, ttl_max_ms: 120_000, ttl_default_ms: 30_000, max_lifetime_ms: 3_600_000, lock_delay_ms: 10_000, max_waiters: 16 }],
      ['jobs', { ttl_default_ms: 60_000, lock_delay_ms: 250 }],
      ['cache', { ttl_max_ms: 15_000, max_waiters: 0 }],
    ] as const) {
      const res = await api.http.put('/api/v1/policies', { data: { selector: `lease://${realm}/${area}/**`, reason: REASON, ...data } });
      expect(res.status(), await res.text()).toBe(200);
    }
    await signIn(page);
    // LEASEHOLD_DOCS_SCREENSHOTS=1 writes into docs/img/, else into the test's output.
    const dir = process.env.LEASEHOLD_DOCS_SCREENSHOTS ? join(process.cwd(), 'docs', 'img') : testInfo.outputPath();
    for (const theme of THEMES) {
      await preferTheme(page, theme);
      // Filtered to this test's policies, so the picture does not depend on what other tests left.
      await page.goto(`/policies?selector=${encodeURIComponent(`lease://${realm}/`)}`);
      await expectTheme(page, theme);
      await expect(page.getByRole('table', { name: 'Policies' }).getByRole('row')).toHaveCount(4);
      await page.getByRole('button', { name: `Edit lease://${realm}/db/**` }).click();
      await expect(page.getByRole('form', { name: 'Policy' })).toBeVisible();
      await page.screenshot({ path: join(dir, `policies-${theme}.png`), fullPage: true, animations: 'disabled' });
    }
  });
});
