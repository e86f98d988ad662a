import { join } from 'node:path';
import { expect, test, STORE_INDEPENDENT } from './fixtures';

/** The store the suite runs on (playwright.config.ts: LEASEHOLD_E2E_STORE). */
const STORE = process.env.LEASEHOLD_E2E_STORE === 'postgres' ? 'postgres' : 'sqlite';

test('the landing page shows live health from its store and switches to dark mode', async ({
  landingPage,
  consoleErrors,
}, testInfo) => {
  const shots = join(testInfo.project.outputDir, 'screenshots');
  await landingPage.goto();

  await expect(landingPage.heading).toBeVisible();
  await expect(landingPage.healthStatus).toHaveText('Operational');
  await expect(landingPage.health).toMatchAriaSnapshot(`
    - term: Store
    - definition: ${STORE}
  `);
  await expect(landingPage.darkModeToggle).toHaveAttribute('aria-pressed', 'false');
  await landingPage.page.screenshot({ path: join(shots, 'landing-light.png'), fullPage: true });

  await landingPage.darkModeToggle.click();
  await expect(landingPage.darkModeToggle).toHaveAttribute('aria-pressed', 'true');
  await expect
    .poll(() => landingPage.page.evaluate(() => document.documentElement.classList.contains('dark')))
    .toBe(true);
  await landingPage.page.screenshot({ path: join(shots, 'landing-dark.png'), fullPage: true });

  await landingPage.page.reload();
  await expect(landingPage.darkModeToggle, 'the choice survives a reload').toHaveAttribute('aria-pressed', 'true');

  expect(consoleErrors).toEqual([]);
});

test('pages refuse framing and send no referrer', STORE_INDEPENDENT, async ({ request }) => {
  const res = await request.get('/');
  expect(res.status()).toBe(200);
  expect(res.headers()['x-frame-options']).toBe('DENY');
  expect(res.headers()['referrer-policy']).toBe('no-referrer');
  expect(res.headers()['x-content-type-options']).toBe('nosniff');
});

test('the icons a browser asks for exist: /favicon.ico and every icon the page declares', STORE_INDEPENDENT, async ({ page, request }) => {
  // A browser that has not seen a <link rel="icon"> yet (or ignores it) asks for
  // /favicon.ico; a 404 there is a console error on every page of the console.
  const ico = await request.get('/favicon.ico');
  expect(ico.status()).toBe(200);
  expect(ico.headers()['content-type']).toMatch(/^image\/(x-icon|vnd\.microsoft\.icon)/);
  expect((await ico.body()).subarray(0, 4), 'an ICO header (reserved 0, type 1)').toEqual(Buffer.from([0, 0, 1, 0]));

  await page.goto('/login');
  const hrefs = await page.locator('link[rel~="icon"]').evaluateAll((links) => links.map((l) => (l as HTMLLinkElement).href));
  expect(hrefs.length).toBeGreaterThan(0);
  for (const href of hrefs) {
    const res = await request.get(href);
    expect(res.status(), href).toBe(200);
    expect(res.headers()['content-type'], href).toMatch(/^image\//);
  }
});
