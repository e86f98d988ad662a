import { randomUUID } from 'node:crypto';
import { expect, test as base, STORE_INDEPENDENT } from './fixtures';
import { AuditPage } from './pages/audit-page';
import { SessionsPage } from './pages/sessions-page';
import { TokensPage } from './pages/tokens-page';

const test = base.extend<{
  sessionsPage: SessionsPage;
  auditPage: AuditPage;
  tokensPage: TokensPage;
  /** Revoke, after the test, a token the test created through the console (a no-op if the test revoked it already). */
  revokeAfter: (name: string) => void;
}>({
  sessionsPage: async ({ page }, use) => {
    await use(new SessionsPage(page));
  },
  auditPage: async ({ page }, use) => {
    await use(new AuditPage(page));
  },
  tokensPage: async ({ page }, use) => {
    await use(new TokensPage(page));
  },
  revokeAfter: async ({ api }, use) => {
    const names = new Set<string>();
    await use((name) => names.add(name));
    if (names.size === 0) return;
    const listed = (await (await api.http.get('/api/v1/tokens')).json()) as { items: Array<{ token_id: string; name: string }> };
    for (const t of listed.items) if (names.has(t.name)) await api.http.delete(`/api/v1/tokens/${t.token_id}`);
  },
});


/** Routes and names unique to this file and this run: the server is shared by every spec. */
const run = () => randomUUID().slice(0, 8);

test('the audit page shows an operator force release with its reason, filtered by route and type in the URL', async ({
  page,
  api,
  signIn,
  auditPage,
  screenshots,
  consoleErrors,
}) => {
  test.setTimeout(60_000); // a long journey with two pairs of full-page screenshots, on a shared machine
  const id = run();
  const resource = `audit-${id}`;
  const route = `lease://acme/pages-e2e/${resource}`;
  const held = await api.hold(route, `audit-worker-${id}`);
  const reason = `Renderer ${id} stuck after a deploy; freed by on-call`;
  const freed = await api.http.post(`/api/v1/leases/acme/pages-e2e/${resource}/force-release`, {
    data: { request_id: randomUUID(), reason, expected_fencing_token: held.fencingToken },
  });
  expect(freed.status(), await freed.text()).toBe(200);
  expect(await api.inspect(route), 'the force release really freed the route').toBeUndefined();

  await signIn(page);
  await auditPage.goto();
  await expect(auditPage.heading).toBeVisible();

  // The grammar speaks inline, before anything is asked of the server.
  await auditPage.routeFilter.fill('lease://acme/pages-e2e');
  await expect(auditPage.routeFilter).toHaveAttribute('aria-invalid', 'true');
  await expect(auditPage.routeFilter).toHaveAccessibleDescription(/must have exactly three segments/);

  await auditPage.filterByRoute(route);
  await expect(auditPage.routeFilter).not.toHaveAttribute('aria-invalid', 'true');
  await auditPage.eventType.selectOption('lease_force_release');
  await expect(page).toHaveURL((url) => url.searchParams.get('route') === route && url.searchParams.get('type') === 'lease_force_release');

  const row = auditPage.row(reason);
  await expect(row).toBeVisible();
  await expect(auditPage.rows()).toHaveCount(1);
  await expect(row).toContainText('Force release');
  await expect(row).toContainText(`audit-worker-${id}`);
  await expect(row).toContainText(String(held.fencingToken));
  await expect(row.getByRole('link', { name: route })).toHaveAttribute('href', `/leases/acme/pages-e2e/${resource}`);

  // The view is in the URL: a reload (or a shared link) shows the same rows.
  await page.reload();
  await expect(auditPage.row(reason)).toBeVisible();
  await expect(auditPage.eventType).toHaveValue('lease_force_release');
  await expect(auditPage.routeFilter).toHaveValue(route);

  // Other event types of the same route are there too once the type filter is cleared.
  await auditPage.eventType.selectOption('');
  await expect(auditPage.rows().filter({ hasText: 'Acquire' })).toHaveCount(1);
  await expect(auditPage.row(reason)).toBeVisible();
  await screenshots(page, 'audit');

  await auditPage.eventType.selectOption('lease_force_release');
  await expect(auditPage.rows()).toHaveCount(1);
  expect(consoleErrors).toEqual([]);
});

test('tokens: a bad grant is caught inline; a created token shows its secret once, works, and stops working once revoked; an embed token comes with its iframe snippet', async ({
  page,
  request,
  signIn,
  tokensPage,
  revokeAfter,
  screenshots,
  consoleErrors,
}) => {
  test.setTimeout(60_000); // a long journey with two pairs of full-page screenshots, on a shared machine
  const id = run();
  const name = `pages-e2e-${id}`;
  revokeAfter(name);
  const created: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && new URL(r.url()).pathname === '/api/v1/tokens') created.push(r.url());
  });
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);

  await signIn(page);
  await tokensPage.goto();
  await expect(tokensPage.heading).toBeVisible();
  await expect(tokensPage.table).toBeVisible();

  // A grant outside the grammar: an inline error, focus back on the box, nothing sent.
  await tokensPage.create(name, ['lease://acme/pages-e2e/*#read', 'lease://acme/pages-e2e/*#delete']);
  await expect(tokensPage.grantsBox).toHaveAttribute('aria-invalid', 'true');
  await expect(tokensPage.grantsBox).toHaveAccessibleDescription(/Line 2: permission must be read, write or admin/);
  await expect(tokensPage.grantsBox).toBeFocused();
  expect(created, 'no token request is sent while a grant fails the grammar').toEqual([]);

  await tokensPage.grantsBox.fill('lease://acme/pages-e2e/*#read');
  await expect(tokensPage.grantsBox).not.toHaveAttribute('aria-invalid', 'true');
  await tokensPage.createButton.click();

  await expect(tokensPage.secret).toBeVisible();
  await expect(tokensPage.secret).toContainText("won't be shown again");
  const secret = await tokensPage.secretValue.inputValue();
  expect(secret.length).toBeGreaterThan(16);
  expect(created).toHaveLength(1);

  await tokensPage.copySecret.click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

  // The secret is a working token with the grants asked for.
  const who = await request.get('/api/v1/auth/whoami', { headers: { Authorization: `Bearer ${secret}` } });
  expect(who.status()).toBe(200);
  expect(await who.json()).toMatchObject({ name, grants: ['lease://acme/pages-e2e/*#read'], root: false });

  await expect(tokensPage.row(name)).toBeVisible();
  await expect(tokensPage.row(name)).toContainText('lease://acme/pages-e2e/*#read');
  await screenshots(page, 'tokens-secret-shown');

  // Shown once: gone when dismissed, and not shown again after a reload.
  await tokensPage.doneButton.click();
  await expect(tokensPage.secret).toHaveCount(0);
  await page.reload();
  await expect(tokensPage.row(name)).toBeVisible();
  await expect(page.getByText(secret)).toHaveCount(0);
  await expect(tokensPage.secret).toHaveCount(0);

  // An embed token: the selector is checked inline, then the token and a ready-to-paste iframe.
  await tokensPage.makeEmbedToken('lease://acme', 30);
  await expect(tokensPage.embedSelector).toHaveAccessibleDescription(/must have exactly three segments/);
  await tokensPage.makeEmbedToken('lease://acme/pages-e2e/*', 30);
  await expect(tokensPage.snippet).toBeVisible();
  const embedToken = await tokensPage.embedToken.inputValue();
  const snippet = await tokensPage.snippet.inputValue();
  expect(snippet).toContain('<iframe src="');
  expect(snippet).toContain(`/embed/inventory?selector=${encodeURIComponent('lease://acme/pages-e2e/*')}#token=`);
  expect(snippet).toContain(`#token=${encodeURIComponent(embedToken)}`);
  const reads = await request.get(`/api/v1/leases?selector=${encodeURIComponent('lease://acme/pages-e2e/*')}`, { headers: { Authorization: `Bearer ${embedToken}` } });
  expect(reads.status(), 'the embed token reads its selector').toBe(200);
  await screenshots(page, 'tokens');

  // Revoke, confirmed in a dialog: gone from the list, and refused by the API.
  await tokensPage.revoke(name);
  await expect(tokensPage.revokeDialog).toBeHidden();
  await expect(tokensPage.row(name)).toHaveCount(0);
  const after = await request.get('/api/v1/auth/whoami', { headers: { Authorization: `Bearer ${secret}` } });
  expect(after.status()).toBe(401);
  expect(await after.json()).toMatchObject({ code: 'invalid_credential' });

  expect(consoleErrors).toEqual([]);
});

test('a revoke the API refuses keeps the dialog open with the API’s message and correlation id', STORE_INDEPENDENT, async ({ page, api, signIn, tokensPage }) => {
  const name = `pages-e2e-gone-${run()}`;
  const { tokenId } = await api.createToken(name, ['lease://acme/pages-e2e/*#read']);
  await signIn(page);
  await tokensPage.goto();
  await tokensPage.row(name).getByRole('button', { name: `Revoke ${name}`, exact: true }).click();
  await expect(tokensPage.revokeDialog).toBeVisible();
  await expect(tokensPage.revokeDialog).toContainText(tokenId);

  // Someone else revokes it first; this console's confirm then meets the API's not_found.
  const gone = await api.http.delete(`/api/v1/tokens/${tokenId}`);
  expect(gone.status()).toBe(200);
  await tokensPage.revokeDialog.getByRole('button', { name: 'Revoke token' }).click();
  const alert = tokensPage.revokeDialog.getByRole('alert');
  await expect(alert).toContainText('This token is already gone');
  await expect(alert).toContainText('no such token');
  await expect(alert).toContainText(/correlation id c_\S+/);
  await expect(tokensPage.row(name), 'the list is read again after the attempt').toHaveCount(0);
  await expect(tokensPage.revokeDialog.getByRole('button', { name: 'Revoke token' }), 'nothing left to confirm').toHaveCount(0);

  await tokensPage.revokeDialog.getByRole('button', { name: 'Close' }).click();
  await expect(tokensPage.revokeDialog).toBeHidden();
});

test('sessions: an open session shows its owner and lease count, links to its leases, and leaves the list once closed', async ({
  page,
  api,
  signIn,
  sessionsPage,
  screenshots,
  consoleErrors,
}) => {
  test.setTimeout(60_000); // a pair of full-page screenshots and a page load of a page built elsewhere, on a shared machine
  const id = run();
  const owner = `sessions-e2e-${id}`;
  const session = await api.openSession(owner, 120_000);
  await api.acquire(`lease://acme/pages-e2e/sess-${id}-a`, session);
  await api.acquire(`lease://acme/pages-e2e/sess-${id}-b`, session);

  await signIn(page);
  await sessionsPage.goto();
  await expect(sessionsPage.heading).toBeVisible();
  await sessionsPage.filterByOwner(owner);
  await expect(page).toHaveURL((url) => url.searchParams.get('owner') === owner);

  const row = sessionsPage.row(owner);
  await expect(row).toBeVisible();
  await expect(sessionsPage.leasesLink(row)).toHaveText('2 leases');
  await expect(row.getByRole('button', { name: 'Copy incarnation' })).toBeVisible();
  await expect(row).toContainText(session.holderIncarnation.slice(0, 8));
  await expect(row).toContainText('2m');
  await expect(row).toContainText(/in \d/);
  await screenshots(page, 'sessions');
  expect(consoleErrors).toEqual([]);

  // The lease count leads to LIST filtered by this holder incarnation.
  await sessionsPage.leasesLink(row).click();
  await expect(page).toHaveURL(
    (url) => url.pathname === '/leases' && url.searchParams.get('selector') === 'lease://**' && url.searchParams.get('holder') === session.holderIncarnation,
  );

  // Not live (sessions are not in the feed): Refresh shows the session gone once it is closed.
  await page.goBack();
  await expect(sessionsPage.row(owner)).toBeVisible();
  await api.closeSession(session.sessionId);
  await sessionsPage.refreshButton.click();
  await expect(sessionsPage.emptyState()).toBeVisible();
  await expect(sessionsPage.table).toHaveCount(0);
});

test('sessions: each session shows its last batched renewal (when, renewed, lost) and its last all-or-nothing acquire, and never before the first', async ({
  page,
  api,
  signIn,
  sessionsPage,
  consoleErrors,
}) => {
  test.setTimeout(60_000);
  const id = run();
  const owner = `batch-e2e-${id}`;
  const idle = `batch-idle-e2e-${id}`;
  const session = await api.openSession(owner, 120_000);
  await api.openSession(idle, 120_000);
  const post = async (path: string, data: object) => {
    const res = await api.http.post(path, { data });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Record<string, any>;
  };
  // All or nothing: three routes in one request.
  const routes = ['a', 'b', 'c'].map((r) => `lease://acme/pages-e2e/batch-${id}-${r}`);
  const acquired = await post('/api/v1/sessions/acquire', { session_id: session.sessionId, request_id: randomUUID(), leases: routes.map((route) => ({ route })) });
  const leases = acquired.leases as Array<{ route: string; lease_id: string; fencing_token: number }>;
  // One batched renewal: two leases renewed, one presented with a stale token (lost).
  const items = leases.map((l, i) => ({ route: l.route, lease_id: l.lease_id, fencing_token: i === 1 ? l.fencing_token + 1_000 : l.fencing_token }));
  const renewed = await post('/api/v1/sessions/renew', { session_id: session.sessionId, request_id: randomUUID(), leases: items });
  expect((renewed.results as Array<{ code: string }>).map((r) => r.code)).toEqual(['lease_renewed', 'lease_lost', 'lease_renewed']);

  await signIn(page);
  await sessionsPage.goto(`?owner=${encodeURIComponent(owner)}`);
  const row = sessionsPage.row(owner);
  await expect(row).toBeVisible();
  await expect(sessionsPage.leasesLink(row)).toHaveText('3 leases');
  const renewal = await sessionsPage.cell(row, 'Last batched renewal');
  await expect(renewal).toContainText('2 renewed · 1 lost');
  // When: the console's one time format, the ISO instant on hover, and how long ago.
  const at = renewal.locator('time');
  await expect(at).toHaveText(/^\d{2}:\d{2}:\d{2}$/);
  expect(await at.getAttribute('title')).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  await expect(renewal).toContainText(/\d+[smhd] ago/);
  await expect(await sessionsPage.cell(row, 'Last batch acquire')).toContainText('3 leases');

  // A later renewal replaces it: every item renewed.
  await post('/api/v1/sessions/renew', { session_id: session.sessionId, request_id: randomUUID(), leases: [items[0], items[2]] });
  await sessionsPage.refreshButton.click();
  await expect(renewal).toContainText('2 renewed · 0 lost');

  // A session that never batched says so.
  await sessionsPage.goto(`?owner=${encodeURIComponent(idle)}`);
  const idleRow = sessionsPage.row(idle);
  await expect(idleRow).toBeVisible();
  await expect(await sessionsPage.cell(idleRow, 'Last batched renewal')).toHaveText('never');
  await expect(await sessionsPage.cell(idleRow, 'Last batch acquire')).toHaveText('never');
  expect(consoleErrors).toEqual([]);
});

test('a token without admin meets access-denied panels on audit, sessions and tokens, and can still make embed tokens', async ({
  page,
  api,
  signIn,
  auditPage,
  sessionsPage,
  tokensPage,
  consoleErrors,
}) => {
  const { token } = await api.createToken(`pages-e2e-reader-${run()}`, ['lease://acme/pages-e2e/*#read']);
  await signIn(page, token);
  // Next's route announcer is an alert too; the panel is the one that says why.
  const denied = page.getByRole('alert').filter({ hasText: 'Access denied' });

  await auditPage.goto();
  await expect(denied).toContainText('Access denied: your token cannot read the audit trail');
  await expect(denied).toContainText(/Correlation id c_\S+/);

  await sessionsPage.goto();
  await expect(denied).toContainText('Access denied: your token cannot list sessions');

  await tokensPage.goto();
  await expect(denied).toContainText('Access denied: your token cannot list tokens');
  await expect(page.getByText('Your token has no admin grant, so it cannot create tokens.')).toBeVisible();
  await expect(tokensPage.createButton).toHaveCount(0);

  // Reading its own selector is allowed, so it may hand that view to an embedded widget.
  await tokensPage.makeEmbedToken('lease://acme/pages-e2e/*', 15);
  await expect(tokensPage.snippet).toBeVisible();
  // The refusals above are answers the page expected (403s it shows as panels), not page errors.
  expect(consoleErrors.filter((e) => !e.includes('status of 403'))).toEqual([]);
});

test('sessions page through cursors: Next page carries the cursor in the URL, Previous page comes back', async ({ page, api, signIn, sessionsPage }) => {
  test.setTimeout(60_000);
  const owner = `sessions-paging-${run()}`;
  // One page is 50 sessions: 52 make a second page of two.
  for (let i = 0; i < 52; i++) await api.openSession(owner, 120_000);

  await signIn(page);
  await sessionsPage.goto(`?owner=${owner}`);
  const rows = sessionsPage.table.getByRole('row').filter({ has: page.getByRole('cell') });
  await expect(rows).toHaveCount(50);
  await expect(page.getByText('Page 1 · 50 sessions')).toBeVisible();
  await expect(sessionsPage.previousPage).toBeDisabled();

  await sessionsPage.nextPage.click();
  await expect(rows).toHaveCount(2);
  await expect(page).toHaveURL((url) => url.searchParams.get('owner') === owner && (url.searchParams.get('cursor') ?? '') !== '');
  await expect(page.getByText('Page 2 · 2 sessions')).toBeVisible();
  await expect(sessionsPage.nextPage).toBeDisabled();

  // A shared link to page 2 shows the same page.
  await page.reload();
  await expect(rows).toHaveCount(2);

  await sessionsPage.previousPage.click();
  await expect(rows).toHaveCount(50);
  await expect(page).toHaveURL((url) => url.searchParams.get('owner') === owner && !url.searchParams.has('cursor'));
  await expect(sessionsPage.previousPage).toBeDisabled();
});
