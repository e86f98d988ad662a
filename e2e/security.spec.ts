import { randomUUID } from 'node:crypto';
import { expect, test, STORE_INDEPENDENT } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';

/**
 * The console's security (docs/console.md "Security headers") in a real
 * browser: every page carries a full content-security
 * policy with a fresh nonce and the console still works under it (no
 * violation on any page); the login page's `next` never leaves the origin;
 * the revoke dialog says which other leases closing the session would end;
 * /tokens lists embed tokens and revokes a token with what it minted.
 */

test.describe.configure({ timeout: 90_000 });

/** Record CSP violations as the page reports them (the listener is installed before any page script). */
async function watchViolations(page: import('@playwright/test').Page): Promise<() => Promise<string[]>> {
  await page.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
  });
  return () => page.evaluate(() => (window as unknown as { __csp: string[] }).__csp);
}

test('every console page and the embed widget run under a nonce CSP with no violation', STORE_INDEPENDENT, async ({ page, api, signIn, consoleErrors }) => {
  const violations = await watchViolations(page);
  const route = `lease://acme/csp-e2e/r-${randomUUID().slice(0, 8)}`;
  await api.hold(route, 'csp-owner');
  const nonces = new Set<string>();
  const check = async (path: string, framable: boolean) => {
    const res = await page.goto(path);
    const csp = res?.headers()['content-security-policy'] ?? '';
    const policy = csp.split(',').map((p) => p.trim()).find((p) => p.includes('script-src')) ?? '';
    expect(policy, `${path} policy`).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]+' 'strict-dynamic'/);
    expect(policy).toContain("object-src 'none'");
    expect(policy).toContain("base-uri 'self'");
    if (framable) expect(policy).not.toContain('frame-ancestors');
    else expect(csp).toContain("frame-ancestors 'none'");
    nonces.add(/'nonce-([^']+)'/.exec(policy)![1]!);
    expect(res?.headers()['strict-transport-security'], 'no HSTS over plain http').toBeUndefined();
  };

  await check('/login', false);
  await signIn(page);
  await check('/leases', false);
  await expect(page.getByRole('table').getByText(route)).toBeVisible();
  for (const path of ['/sessions', '/audit', '/tokens', '/metrics']) {
    await check(path, false);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  }
  await check(`/leases/${route.slice('lease://'.length)}`, false);
  await expect(page.getByRole('heading', { name: route })).toBeVisible();
  const embedToken = await api.createEmbedToken('lease://acme/csp-e2e/*');
  await check(`/embed/inventory?selector=${encodeURIComponent('lease://acme/csp-e2e/*')}#token=${encodeURIComponent(embedToken)}`, true);
  await expect(page.getByText(route)).toBeVisible();
  expect(nonces.size, 'a fresh nonce per page').toBe(8);
  expect(await violations()).toEqual([]);
  expect(consoleErrors.filter((e) => !e.includes('Failed to load resource'))).toEqual([]);
});

test('login next that would leave the origin goes to /leases instead', STORE_INDEPENDENT, async ({ page, signIn }) => {
  await signIn(page);
  for (const next of ['/\\evil.example/x', '/\\\t/evil.example', '//evil.example', 'https://evil.example']) {
    await page.goto(`/login?next=${encodeURIComponent(next)}`);
    const go = page.getByRole('link', { name: /continue/i });
    await expect(go).toHaveAttribute('href', '/leases');
    await go.click();
    await expect(page).toHaveURL(/^http:\/\/127\.0\.0\.1:\d+\/leases/);
  }
});

test('the revoke dialog lists the other leases closing the session would end, and warns a route admin', async ({ page, api, signIn }) => {
  const tag = randomUUID().slice(0, 8);
  const s = await api.openSession('compromised-e2e');
  const a = await api.acquire(`lease://acme/rv-${tag}/a`, s);
  await api.acquire(`lease://acme/rv-${tag}/b`, s);
  await api.acquire(`lease://other/rv-${tag}/c`, s);
  const detail = new LeaseDetailPage(page);

  await signIn(page);
  await detail.goto(a.route);
  await detail.revokeButton.click();
  await detail.closeSessionCheckbox(detail.revokeDialog).check();
  const list = detail.revokeDialog.getByTestId('session-leases');
  await expect(list).toContainText('These 2 other leases would also end');
  await expect(list).toContainText(`lease://acme/rv-${tag}/b`);
  await expect(list).toContainText(`lease://other/rv-${tag}/c`);
  await page.keyboard.press('Escape');

  // An admin of lease://acme/** sees what it may, and is told the server will refuse.
  const { token } = await api.createToken('acme admin', ['lease://acme/**#admin']);
  await page.context().clearCookies();
  await signIn(page, token);
  await detail.goto(a.route);
  await detail.revokeButton.click();
  await detail.closeSessionCheckbox(detail.revokeDialog).check();
  await expect(list).toContainText(`lease://acme/rv-${tag}/b`);
  await expect(list).not.toContainText(`lease://other/rv-${tag}/c`);
  await expect(list).toContainText('needs admin on every route it holds');
});

test('/tokens lists embed tokens and revokes a token together with what it minted', async ({ page, api, signIn }) => {
  const parent = await api.createToken(`parent ${randomUUID().slice(0, 6)}`, ['lease://acme/**#read']);
  const res = await page.request.post('/api/v1/embed-tokens', { data: { selector: 'lease://acme/**' }, headers: { Authorization: `Bearer ${parent.token}` } });
  expect(res.status()).toBe(201);
  const embed = (await res.json()) as { token_id: string; token: string };
  await signIn(page);
  await page.goto('/tokens');
  await expect(page.getByRole('table', { name: 'Tokens' })).toContainText('embed');
  const parentRow = page.getByRole('row').filter({ has: page.getByRole('button', { name: /^Revoke parent/ }) });
  await parentRow.getByRole('button', { name: /^Revoke parent/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke token' });
  await expect(dialog.getByTestId('revoke-minted')).toContainText('(embed)');
  await dialog.getByRole('button', { name: 'Revoke token' }).click();
  await expect(dialog).toBeHidden();
  const who = await page.request.get('/api/v1/auth/whoami', { headers: { Authorization: `Bearer ${embed.token}` } });
  expect(who.status(), 'the embed token died with its creator').toBe(401);
});
