// The console's sign-in and its leases page against the real server: login
// and logout, wildcard browsing across pages, live rows, the countdown, a
// read-only token's denied selector, and the 5,000-lease figures.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_TOKEN, API_URL, expect, test as base, type LeaseholdApi } from './fixtures';
import { LeasesPage } from './pages/leases-page';
import { LoginPage } from './pages/login-page';

const test = base.extend<{ loginPage: LoginPage; leasesPage: LeasesPage }>({
  loginPage: async ({ page }, use) => {
    await use(new LoginPage(page));
  },
  leasesPage: async ({ page }, use) => {
    await use(new LeasesPage(page));
  },
});

/**
 * `count` routes `lease://acme/<area>/r0001…`, all held by one new session
 * (closed by the api fixture afterwards). The acquisitions go through Node's
 * own fetch, 16 at a time: thousands of them through Playwright's request
 * context take a minute, and seeding is not what is measured.
 */
async function holdMany(api: LeaseholdApi, baseURL: string, area: string, count: number, ttlMs = 300_000): Promise<string[]> {
  const session = await api.openSession(`${area}-worker`, ttlMs);
  const routes = Array.from({ length: count }, (_, i) => `lease://acme/${area}/r${String(i + 1).padStart(4, '0')}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < routes.length) {
        const route = routes[next++]!;
        const res = await fetch(`${API_URL ?? baseURL}/api/v1/leases/${route.slice('lease://'.length)}/acquire`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ session_id: session.sessionId, request_id: randomUUID(), ttl_ms: ttlMs }),
        });
        expect(res.ok, `acquire ${route}: ${res.status}`).toBe(true);
      }
    }),
  );
  return routes;
}

test('signing in shows the token’s family and grants, and signing out ends the console session', async ({ page, loginPage, leasesPage, consoleErrors, screenshots }) => {
  await page.goto('/leases');
  await expect(page, 'signed out, the console sends the reader to login').toHaveURL(/\/login\?next=%2Fleases/);

  await loginPage.login('lh_not_a_real_token_at_all_000000');
  await expect(loginPage.alert).toContainText('Sign-in failed');
  await expect(loginPage.alert).toContainText('correlation id');

  await loginPage.login(ADMIN_TOKEN);
  await expect(loginPage.signedIn).toBeVisible();
  await expect(page.getByText('default', { exact: true })).toBeVisible();
  await expect(loginPage.grants).toContainText('lease://**#admin');
  await screenshots(page, 'login-signed-in');
  await loginPage.continue.click();

  await expect(page).toHaveURL(/\/leases$/);
  await expect(leasesPage.heading).toBeVisible();
  await expect(leasesPage.nav.getByRole('link')).toHaveText(['Leases', 'Sessions', 'Metrics', 'Audit', 'Tokens', 'Policies']);

  await leasesPage.signOut.click();
  await expect(page).toHaveURL(/\/login$/);
  await expect(loginPage.token).toBeVisible();
  await screenshots(page, 'login');
  const whoami = await page.request.get('/api/v1/auth/whoami');
  expect(whoami.status(), 'the cookie no longer authenticates').toBe(401);
  await page.goto('/leases');
  await expect(page).toHaveURL(/\/login\?next=/);
  expect(consoleErrors.filter((e) => !e.includes('401'))).toEqual([]);
});

test('a wildcard selector pages through three pages and back, with the view in the URL', async ({ page, api, signIn, leasesPage, baseURL }) => {
  const area = `browse-${randomUUID().slice(0, 8)}`;
  const routes = await holdMany(api, baseURL!, area, 60);
  await signIn(page);
  await leasesPage.goto(`lease://acme/${area}/*`, { limit: 25 });

  await expect(leasesPage.rows).toHaveCount(25);
  expect(await leasesPage.routes()).toEqual(routes.slice(0, 25));
  await expect(leasesPage.previous).toBeDisabled();

  await leasesPage.next.click();
  await expect(leasesPage.row(routes[25]!)).toBeVisible();
  expect(await leasesPage.routes()).toEqual(routes.slice(25, 50));
  await expect(page).toHaveURL(/cursor=/);
  const secondPage = page.url();

  await leasesPage.next.click();
  await expect(leasesPage.row(routes[50]!)).toBeVisible();
  expect(await leasesPage.routes()).toEqual(routes.slice(50));
  await expect(leasesPage.next, 'the last page has no next').toBeDisabled();

  await leasesPage.previous.click();
  await expect(leasesPage.row(routes[25]!)).toBeVisible();
  expect(await leasesPage.routes()).toEqual(routes.slice(25, 50));
  await leasesPage.previous.click();
  await expect(leasesPage.row(routes[0]!)).toBeVisible();
  await expect(leasesPage.previous).toBeDisabled();

  // A shared link opens the same page.
  await page.goto(secondPage);
  await expect(leasesPage.row(routes[25]!)).toBeVisible();
  await expect(leasesPage.rows).toHaveCount(25);
  await expect(leasesPage.selector).toHaveValue(`lease://acme/${area}/*`);

  // Paging adds history entries (the browser's own, which Next's router follows): Back returns to the page before.
  await leasesPage.next.click();
  await expect(leasesPage.row(routes[50]!)).toBeVisible();
  await page.goBack();
  await expect(page).toHaveURL(secondPage);
  await expect(leasesPage.row(routes[25]!)).toBeVisible();
  expect(await leasesPage.routes()).toEqual(routes.slice(25, 50));
});

test('the selector box checks the grammar as it is typed and filters by owner', async ({ page, api, signIn, leasesPage }) => {
  const area = `filter-${randomUUID().slice(0, 8)}`;
  await api.hold(`lease://acme/${area}/one`, 'alice');
  await api.hold(`lease://acme/${area}/two`, 'bob');
  await signIn(page);
  await leasesPage.goto(`lease://acme/${area}/*`);
  await expect(leasesPage.rows).toHaveCount(2);

  await leasesPage.selector.fill('lease://acme/*x/y');
  await expect(leasesPage.selector).toHaveAttribute('aria-invalid', 'true');
  await expect(page.getByText(/^Not a selector:/)).toBeVisible();
  await expect(leasesPage.show).toBeDisabled();

  await leasesPage.selector.fill(`lease://acme/${area}/*`);
  await leasesPage.owner.fill('bob');
  await leasesPage.show.click();
  await expect(page).toHaveURL(/owner=bob/);
  await expect(leasesPage.rows).toHaveCount(1);
  await expect(leasesPage.row(`lease://acme/${area}/two`)).toBeVisible();
});

test('a lease acquired and released through the API appears and disappears live, with a ticking countdown', async ({ page, api, signIn, leasesPage, screenshots }) => {
  const area = `live-${randomUUID().slice(0, 8)}`;
  const first = await api.hold(`lease://acme/${area}/anchor`, 'worker-anchor', { ttlMs: 120_000 });
  await signIn(page);
  await leasesPage.goto(`lease://acme/${area}/*`);
  await expect(leasesPage.feed).toContainText('live');
  await expect(leasesPage.rows).toHaveCount(1);

  const route = `lease://acme/${area}/render-7`;
  const held = await api.hold(route, 'worker-7', { ttlMs: 30_000 });
  await expect(leasesPage.row(route), 'the new lease appears without a reload').toBeVisible();
  await expect(leasesPage.row(route)).toContainText('worker-7');
  await expect(leasesPage.row(route)).toContainText(String(held.fencingToken));

  // The countdown ticks: the seconds left go down while the page stays put.
  const seconds = async () => Number((await leasesPage.expiresIn(route).textContent())?.match(/^(\d+)s$/)?.[1] ?? NaN);
  const start = await seconds();
  expect(start).toBeGreaterThan(20);
  // The tab's shared clock ticks once a second, so the first reading may be up to a second behind.
  expect(start).toBeLessThanOrEqual(31);
  await expect.poll(seconds, { message: 'the countdown goes down' }).toBeLessThan(start);
  await screenshots(page, 'leases');

  await api.release(held);
  await expect(leasesPage.row(route), 'the released lease disappears without a reload').toHaveCount(0);
  await expect(leasesPage.rows).toHaveCount(1);
  await api.release(first);
  await expect(leasesPage.rows).toHaveCount(0);
  await expect(page.getByText('No held leases match')).toBeVisible();
  await screenshots(page, 'leases-empty');
});

test('a read-only token is told which selector it may not read, and offered the ones it may', async ({ page, api, signIn, leasesPage, screenshots }) => {
  const area = `ro-${randomUUID().slice(0, 8)}`;
  await api.hold(`lease://acme/${area}/one`, 'worker-ro');
  const viewer = await api.createToken('viewer', ['lease://acme/**#read']);
  await signIn(page, viewer.token);

  await leasesPage.goto('lease://**');
  await expect(leasesPage.alert).toContainText('Access denied');
  await expect(leasesPage.alert).toContainText('lease://**');
  await expect(leasesPage.table).toHaveCount(0);
  await screenshots(page, 'leases-denied');

  await page.getByRole('link', { name: 'lease://acme/**', exact: true }).click();
  await expect(leasesPage.row(`lease://acme/${area}/one`)).toBeVisible();
});

test('with 5,000 held leases the first page shows within 2 s and paging has no long task over 200 ms', async ({ page, api, signIn, leasesPage, baseURL }, testInfo) => {
  test.setTimeout(240_000);
  const area = `perf-${randomUUID().slice(0, 8)}`;
  const seedStart = Date.now();
  const routes = await holdMany(api, baseURL!, area, 5_000);
  const seedMs = Date.now() - seedStart;
  await page.addInitScript(() => {
    const w = window as unknown as { __longTasks: number[] };
    w.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.__longTasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  await signIn(page);
  // The production build at the default page size, as an operator opens it:
  // navigation, hydration, whoami and the first LIST in parallel, the
  // stream. The table marks `leasehold:leases-rows` when rows
  // are first on screen; that mark's time is measured from navigation start.
  // Waits use text, not roles: role queries over hundreds of cells are the
  // test's own main-thread work and would be counted as the page's long tasks.
  const limit = 50;
  const url = `/leases?selector=${encodeURIComponent(`lease://acme/${area}/*`)}`;
  const rowsMark = () => page.evaluate(() => Math.round(performance.getEntriesByName('leasehold:leases-rows')[0]?.startTime ?? Infinity));
  // Cold: the tab's first visit (every script fetched). Warm: the same URL
  // loaded again, as an operator's browser does on any later visit (the
  // console's scripts are immutable and cached).
  let t0 = Date.now();
  await page.goto(url);
  await expect(page.getByText(routes[0]!, { exact: true })).toBeVisible();
  const coldWallMs = Date.now() - t0;
  const coldMs = await rowsMark();
  t0 = Date.now();
  await page.reload();
  await expect(page.getByText(routes[0]!, { exact: true })).toBeVisible();
  const wallMs = Date.now() - t0;
  const firstPageMs = await rowsMark();
  await expect(leasesPage.rows).toHaveCount(limit);
  const loadTasks = await page.evaluate(() => (window as unknown as { __longTasks: number[] }).__longTasks.splice(0));

  const pageMs: number[] = [];
  for (let p = 1; p <= 20; p++) {
    const t = Date.now();
    await leasesPage.next.click();
    await expect(page.getByText(routes[p * limit]!, { exact: true })).toBeVisible();
    pageMs.push(Date.now() - t);
  }
  for (let p = 19; p >= 17; p--) {
    await leasesPage.previous.click();
    await expect(page.getByText(routes[p * limit]!, { exact: true })).toBeVisible();
  }
  const pagingTasks = await page.evaluate(() => (window as unknown as { __longTasks: number[] }).__longTasks.splice(0));
  const figures = {
    leases: routes.length,
    seedMs,
    pageSize: limit,
    firstPageMs,
    firstPageWallMs: wallMs,
    coldFirstPageMs: coldMs,
    coldFirstPageWallMs: coldWallMs,
    pageTurnMs: pageMs,
    longTasksDuringLoadMs: loadTasks.map(Math.round),
    longTasksWhilePagingMs: pagingTasks.map(Math.round),
    maxLongTaskWhilePagingMs: Math.round(Math.max(0, ...pagingTasks)),
  };
  console.log(`leases page at 5,000 leases: ${JSON.stringify(figures)}`);
  writeFileSync(join(testInfo.project.outputDir, 'leases-perf.json'), `${JSON.stringify(figures, null, 2)}\n`);
  await testInfo.attach('leases-perf', { body: JSON.stringify(figures, null, 2), contentType: 'application/json' });

  // The time budgets are checked in the SQLite run. In the PostgreSQL run
  // (playwright.config.ts: the same machine also runs instance B and the
  // database) this test checks that 5,000 leases seeded through B page
  // correctly on A, and prints its figures (docs/benchmarks.md).
  if (API_URL !== undefined) return;
  expect(coldMs, 'first visit: first page on screen within 2 s of navigation start').toBeLessThan(2_000);
  expect(firstPageMs, 'later visit (scripts cached): first page on screen within 2 s').toBeLessThan(2_000);
  expect(figures.maxLongTaskWhilePagingMs, 'no main-thread task over 200 ms while paging').toBeLessThanOrEqual(200);
});
