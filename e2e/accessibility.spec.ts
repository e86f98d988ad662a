// docs/console.md "Accessibility": axe-core's WCAG 2.0/2.1 A and AA rules find nothing on any
// console page, in the light theme and in the dark one, including the states
// an on-call engineer meets (dialogs, the close-session preview, lock-delay,
// form errors). Each theme is the reader's colour-scheme preference, which
// the console's pre-paint script follows, so every page loads in its final
// colours and no transition is caught half-way.
import { randomUUID } from 'node:crypto';
import type { Page } from '@playwright/test';
import { axeViolations, expectTheme, THEMES } from './axe';
import { expect, test as base, type LeaseholdApi, STORE_INDEPENDENT } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';
import { LeasesPage } from './pages/leases-page';
import { CHARTS, latencyChart, MetricsPage } from './pages/metrics-page';
import { TokensPage } from './pages/tokens-page';

const test = base.extend<{ leaseDetail: LeaseDetailPage; found: string[] }>({
  leaseDetail: async ({ page }, use) => {
    await use(new LeaseDetailPage(page));
  },
  // What axe found in the test, asserted empty at the end so one run reports every page.
  found: async ({}, use) => {
    const found: string[] = [];
    await use(found);
    expect(found).toEqual([]);
  },
});

// axe over whole pages, on a shared two-core machine.
test.describe.configure({ timeout: 90_000 });

const REASON = 'rolling the fleet, please hand over';
const apiPath = (route: string, action: string) => `/api/v1/leases/${route.slice('lease://'.length)}/${action}`;

async function askToRelease(api: LeaseholdApi, route: string, fencingToken: number): Promise<void> {
  const res = await api.http.post(apiPath(route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: fencingToken } });
  expect(res.ok(), await res.text()).toBe(true);
}

for (const theme of THEMES) {
  test.describe(`${theme} theme`, STORE_INDEPENDENT, () => {
    test.use({ colorScheme: theme });

    /** Check the page's theme, then collect what axe finds on it now. */
    async function check(page: Page, found: string[], label: string): Promise<void> {
      await expectTheme(page, theme);
      // A settled page: a client navigation (a view kept in the URL) streams the new <title> after the URL changes.
      await expect(page).toHaveTitle(/\S/);
      found.push(...(await axeViolations(page, `${label} (${theme})`)));
    }

    test('signed out: the landing page and login, with a refused token', async ({ page, found }) => {
      await page.goto('/');
      await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
      await expect(page.getByText(/^(Operational|Store unavailable|Unreachable)/).first()).toBeVisible();
      await check(page, found, 'landing');

      await page.goto('/login');
      await expect(page.getByRole('textbox', { name: 'Token' })).toBeVisible();
      await check(page, found, 'login');
      await page.getByRole('textbox', { name: 'Token' }).fill('lh_not_a_real_token_0000000000000000');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.getByRole('main').getByRole('alert')).toBeVisible();
      await check(page, found, 'login refused');
    });

    test('the leases table (with badges) and the sessions page', async ({ page, api, signIn, found }) => {
      const area = `a11y-${randomUUID().slice(0, 8)}`;
      const held = await api.hold(`lease://acme/${area}/asked`, 'a11y-worker');
      await api.hold(`lease://acme/${area}/quiet`, 'a11y-worker-2');
      await askToRelease(api, held.route, held.fencingToken);
      await signIn(page);

      const leases = new LeasesPage(page);
      await leases.goto(`lease://acme/${area}/*`);
      await expect(leases.rows).toHaveCount(2);
      await expect(leases.feed).toContainText('live');
      await expect(leases.counts).toContainText('2 matching leases');
      await check(page, found, '/leases');
      await leases.filter('Expiring soon').click();
      await expect(leases.expiringWindow).toBeVisible();
      await leases.filter('Release requested').click();
      await expect(leases.rows).toHaveCount(0);
      await expect(page.getByText('No held leases match')).toBeVisible();
      await check(page, found, '/leases with on-call filters and nothing matching');
      await leases.filter('Expiring soon').click();
      await expect(leases.rows).toHaveCount(1);
      await expect(leases.counts).toContainText('1 matching lease');
      await check(page, found, '/leases filtered to a release request');
      await leases.filter('In lock-delay').click();
      await expect(page.getByText('No route is in lock-delay')).toBeVisible();
      await check(page, found, '/leases in lock-delay, none');
      await leases.goto(`lease://acme/${area}/*`);
      await expect(leases.rows).toHaveCount(2);
      await leases.selector.fill('lease://acme');
      await expect(leases.selector).toHaveAttribute('aria-invalid', 'true');
      await check(page, found, '/leases with a selector error');

      await page.goto('/sessions');
      await expect(page.getByRole('table', { name: 'Sessions' }).getByRole('row').nth(1)).toBeVisible();
      await check(page, found, '/sessions');

      // A session with a batched renewal (one item lost): its counts and time in the row.
      const renew = await api.http.post('/api/v1/sessions/renew', {
        data: { session_id: held.sessionId, request_id: randomUUID(), leases: [{ route: held.route, lease_id: held.leaseId, fencing_token: held.fencingToken + 1_000 }] },
      });
      expect(renew.ok(), await renew.text()).toBe(true);
      await page.goto('/sessions?owner=a11y-worker');
      await expect(page.getByRole('table', { name: 'Sessions' })).toContainText('0 renewed · 1 lost');
      await check(page, found, '/sessions with a batched renewal');
    });

    test('lease detail: held with a pending request and its history, the three dialogs and the close-session preview', async ({ page, api, signIn, leaseDetail, found }) => {
      const area = `a11y-${randomUUID().slice(0, 8)}`;
      const session = await api.openSession('a11y-holder');
      const held = await api.acquire(`lease://acme/${area}/doc`, session);
      await api.acquire(`lease://acme/${area}/doc-2`, session);
      await askToRelease(api, held.route, held.fencingToken);
      await signIn(page);

      await leaseDetail.goto(held.route);
      await expect(leaseDetail.field('Fencing token')).toHaveText(String(held.fencingToken));
      await expect(page.getByRole('figure', { name: 'Lease history' }).getByRole('listitem')).toHaveCount(1);
      await expect(leaseDetail.auditTrail.getByRole('row').nth(1)).toBeVisible();
      await expect(leaseDetail.applyingPolicy.getByLabel('Policy', { exact: true })).toBeVisible();
      await check(page, found, 'lease detail');

      await leaseDetail.askButton.click();
      await leaseDetail.reason(leaseDetail.askDialog).fill('short');
      await check(page, found, 'ask dialog');
      await leaseDetail.cancel(leaseDetail.askDialog).click();

      await leaseDetail.forceReleaseButton.click();
      await leaseDetail.reason(leaseDetail.forceReleaseDialog).fill('short');
      await expect(leaseDetail.forceReleaseDialog).toContainText('Lock-delay');
      await check(page, found, 'force-release dialog');
      await leaseDetail.cancel(leaseDetail.forceReleaseDialog).click();

      await leaseDetail.revokeButton.click();
      const revoke = leaseDetail.revokeDialog;
      await leaseDetail.resourceConfirmation(revoke).fill('wrong');
      await leaseDetail.closeSessionCheckbox(revoke).check();
      await expect(leaseDetail.sessionPreview(revoke).getByRole('listitem')).toHaveCount(1);
      await check(page, found, 'revoke dialog with the close-session preview');
      await leaseDetail.cancel(revoke).click();
    });

    test('lease detail: a free route in lock-delay', async ({ page, api, signIn, leaseDetail, found }) => {
      const realm = `a11y-${randomUUID().slice(0, 8)}`;
      const route = `lease://${realm}/db/primary`;
      const set = await api.http.put('/api/v1/policies', { data: { selector: `lease://${realm}/**`, reason: 'a11y lock-delay policy', lock_delay_ms: 60_000 } });
      expect(set.ok()).toBe(true);
      const held = await api.hold(route, 'a11y-primary');
      const forced = await api.http.post(apiPath(route, 'force-release'), { data: { request_id: randomUUID(), reason: 'freeing it for the a11y test', expected_fencing_token: held.fencingToken } });
      expect(forced.ok()).toBe(true);
      await signIn(page);
      await leaseDetail.goto(route);
      await expect(page.getByRole('status', { name: 'Lock-delay' })).toBeVisible();
      await expect(page.getByRole('figure', { name: 'Lease history' }).getByRole('listitem')).toHaveCount(1);
      await expect(leaseDetail.applyingPolicy.getByLabel('Policy', { exact: true })).toHaveText(`lease://${realm}/**`);
      await check(page, found, 'lease detail in lock-delay');
      const leases = new LeasesPage(page);
      await page.goto(`/leases?selector=${encodeURIComponent(`lease://${realm}/**`)}&lock_delay=1`);
      await expect(leases.lockDelayTable.getByRole('row').filter({ has: page.getByRole('cell') })).toHaveCount(1);
      await check(page, found, '/leases in lock-delay');
    });

    test('metrics and audit', async ({ page, signIn, found }) => {
      await signIn(page);
      const metrics = new MetricsPage(page);
      await metrics.goto();
      await expect(metrics.drawing(CHARTS.throughput)).toBeVisible();
      await expect(metrics.readout(CHARTS.leases, 'Active leases')).toBeVisible();
      await expect(metrics.latencyTable).toBeVisible();
      await check(page, found, '/metrics');
      // The latency table sorted by another column, with a chosen operation charted (the page's own polling is one).
      await metrics.column('Requests').getByRole('button').click();
      await metrics.operation('metrics_summary').click();
      await expect(page).toHaveURL((url) => url.searchParams.get('op') === 'metrics_summary');
      await expect(metrics.drawing(latencyChart('metrics_summary'))).toBeVisible();
      await check(page, found, '/metrics with a chosen operation, sorted by requests');

      await page.goto('/audit');
      await expect(page.getByRole('table').getByRole('row').nth(1)).toBeVisible();
      await check(page, found, '/audit');
    });

    test('policies: the table, a form with errors, and the route box valid and invalid', async ({ page, api, signIn, found }) => {
      const realm = `a11y-${randomUUID().slice(0, 8)}`;
      const set = await api.http.put('/api/v1/policies', { data: { selector: `lease://${realm}/**`, reason: 'a11y policy row', lock_delay_ms: 1_000, max_waiters: 8 } });
      expect(set.ok()).toBe(true);
      await signIn(page);
      await page.goto('/policies');
      await expect(page.getByRole('table', { name: 'Policies' })).toContainText(`lease://${realm}/**`);
      await check(page, found, '/policies');
      // The filter: narrowed to this row, then matching nothing.
      const filter = page.getByRole('searchbox', { name: 'Filter by selector' });
      await filter.fill(realm);
      await expect(page.getByRole('table', { name: 'Policies' }).getByRole('row')).toHaveCount(2);
      await check(page, found, '/policies filtered');
      await filter.fill(`${realm}-none`);
      await expect(page.getByText('No matching policies')).toBeVisible();
      await check(page, found, '/policies filtered to nothing');
      await filter.fill('');

      await page.getByRole('button', { name: 'New policy' }).click();
      const form = page.getByRole('form', { name: 'Policy' });
      await form.getByRole('textbox', { name: 'Selector' }).fill('lease://nope');
      // A span typed, with its reading beside it.
      await form.getByRole('spinbutton', { name: 'Maximum lifetime (ms)' }).fill('3600000');
      await expect(form.getByText('= 1h', { exact: true })).toBeVisible();
      await form.getByRole('button', { name: 'Save policy' }).click();
      await expect(form.getByRole('textbox', { name: 'Selector' })).toHaveAttribute('aria-invalid', 'true');
      await check(page, found, '/policies form with errors');
      await form.getByRole('button', { name: 'Cancel' }).click();

      const routeBox = page.getByRole('textbox', { name: 'Route' });
      await routeBox.fill('lease://nope');
      await expect(routeBox, 'the route box says it is invalid').toHaveAttribute('aria-invalid', 'true');
      await expect(routeBox).toHaveAccessibleDescription(/Not a route/);
      await check(page, found, '/policies with an invalid route');
      await routeBox.fill(`lease://${realm}/db/primary`);
      await expect(routeBox).not.toHaveAttribute('aria-invalid', 'true');
      await page.getByRole('button', { name: 'Explain' }).click();
      await expect(page.getByRole('definition').filter({ hasText: `lease://${realm}/**` })).toBeVisible();
      await check(page, found, '/policies with an explained route');
    });

    test('tokens: the list with grant chips, a new secret and an embed token', async ({ page, api, signIn, found }) => {
      const name = `a11y-${randomUUID().slice(0, 8)}`;
      await api.createToken(`${name}-listed`, ['lease://acme/**#read', 'lease://acme/jobs/*#write', 'lease://acme/db/*#admin']);
      await signIn(page);
      const tokens = new TokensPage(page);
      await tokens.goto();
      await expect(tokens.row(`${name}-listed`)).toBeVisible();
      await check(page, found, '/tokens');

      await tokens.create(name, ['lease://acme/a11y/*#read']);
      await expect(tokens.secretValue).toBeVisible();
      await check(page, found, '/tokens with a new secret');
      await tokens.doneButton.click();
      await tokens.revoke(name);

      await tokens.makeEmbedToken('lease://acme/a11y/*', 10);
      await expect(tokens.snippet).toBeVisible();
      await check(page, found, '/tokens with an embed token');
    });

    test('the embed widget', async ({ page, api, found }) => {
      const area = `a11y-${randomUUID().slice(0, 8)}`;
      const selector = `lease://acme/${area}/*`;
      await api.hold(`lease://acme/${area}/doc-1`, 'a11y-renderer');
      const token = await api.createEmbedToken(selector);
      await page.goto(`/embed/inventory?selector=${encodeURIComponent(selector)}#token=${encodeURIComponent(token)}`);
      const widget = page.getByRole('region', { name: 'Inventory' });
      await expect(widget.getByRole('status')).toHaveText('Live');
      await expect(widget.getByRole('rowheader')).toHaveCount(1);
      await check(page, found, '/embed/inventory');
    });
  });
}
