// docs/console.md "The inventory widget at 390 px": the embed widget at a phone's 390 px. Routes are one line,
// truncated with an ellipsis, their full text in a title and shown on focus;
// the columns fold under the route so Expires is never cut off; nothing
// scrolls sideways. LEASEHOLD_DOCS_SCREENSHOTS=1 writes the pictures that
// docs/console.md shows into docs/img/ (otherwise into the test's output).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Locator, Page } from '@playwright/test';
import { axeViolations, expectTheme, preferTheme, THEMES } from './axe';
import { expect, test, type Held, type LeaseholdApi, STORE_INDEPENDENT } from './fixtures';

test.describe.configure({ timeout: 60_000 });
test.use({ viewport: { width: 390, height: 844 } });

const embedPath = (selector: string, token: string, theme?: string) =>
  `/embed/inventory?selector=${encodeURIComponent(selector)}${theme ? `&theme=${theme}` : ''}#token=${encodeURIComponent(token)}`;

/** How many lines the element's text takes (distinct line boxes of its text). */
function lineCount(el: Locator): Promise<number> {
  return el.evaluate((node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    return tops.size;
  });
}

const overflows = (el: Locator) => el.evaluate((node) => node.scrollWidth > node.clientWidth + 1);

/** The page scrolls sideways: something is wider than the viewport. */
const scrollsSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);

async function seed(api: LeaseholdApi): Promise<{ selector: string; token: string; held: Held[] }> {
  const area = `narrow-${randomUUID().slice(0, 8)}`;
  const selector = `lease://acme/${area}/*`;
  const held = [
    await api.hold(`lease://acme/${area}/invoice-renderer-eu-west-1-shard-0042`, 'renderer-eu-west-1a-7f9c'),
    await api.hold(`lease://acme/${area}/nightly-ledger-reconciliation`, 'ledger-cron'),
    await api.hold(`lease://acme/${area}/doc-7`, 'renderer-9'),
  ];
  return { selector, token: await api.createEmbedToken(selector), held };
}

test('at 390 px the widget folds its columns: routes are one truncated line with their full text on hover and focus, Expires stays in view', STORE_INDEPENDENT, async ({
  api,
  page,
  consoleErrors,
}) => {
  const { selector, token, held } = await seed(api);
  await page.goto(embedPath(selector, token));
  const widget = page.getByRole('region', { name: 'Inventory' });
  const table = widget.getByRole('table', { name: 'Inventory' });
  await expect(widget.getByRole('status')).toHaveText('Live');
  await expect(widget.getByText(/^\d+ held/)).toHaveText('3 held');

  const long = held[0]!.route;
  const routeCell = table.getByRole('rowheader', { name: long, exact: true });
  await expect(routeCell).toBeVisible();
  await expect(routeCell, 'the full route on hover').toHaveAttribute('title', long);
  expect(await lineCount(routeCell), 'one line, not one character a line').toBe(1);
  expect(await overflows(routeCell), 'truncated with an ellipsis').toBe(true);
  expect(await routeCell.evaluate((n) => getComputedStyle(n).textOverflow)).toBe('ellipsis');

  // Keyboard: focus shows the whole route.
  await routeCell.focus();
  await expect(routeCell).toBeFocused();
  expect(await overflows(routeCell), 'the focused route shows in full').toBe(false);
  await routeCell.blur();

  // Every row's columns are on screen: the route on top, owner, token and expiry folded under it.
  for (const h of held) {
    const row = table.getByRole('row').filter({ has: page.getByRole('rowheader', { name: h.route, exact: true }) });
    await expect(row).toContainText(String(h.fencingToken));
    const expiry = row.locator('time');
    await expect(expiry).toHaveText(/^\d+m \d+s$|^\d+s$/);
    await expect(expiry).toBeInViewport({ ratio: 1 });
    const box = (await expiry.boundingBox())!;
    expect(box.x + box.width, `${h.route}: Expires is not cut off`).toBeLessThanOrEqual(390);
  }
  expect(await scrollsSideways(page), 'nothing scrolls sideways at 390 px').toBe(false);
  // Still a table to assistive technology, with its column headers.
  await expect(table.getByRole('columnheader')).toHaveText(['Route', 'Owner', 'Fencing token', 'Expires in']);
  expect(consoleErrors).toEqual([]);
});

test('at 390 px the widget passes axe in light and dark, and its pictures are taken', STORE_INDEPENDENT, async ({ api, page }, testInfo) => {
  const { selector, token, held } = await seed(api);
  const dir = process.env.LEASEHOLD_DOCS_SCREENSHOTS ? join(process.cwd(), 'docs', 'img') : testInfo.outputPath();
  const found: string[] = [];
  for (const theme of THEMES) {
    await preferTheme(page, theme);
    // A URL of its own per theme: a change of fragment alone would not load the page again.
    await page.goto(embedPath(selector, token, theme));
    await expectTheme(page, theme);
    const widget = page.getByRole('region', { name: 'Inventory' });
    await expect(widget.getByRole('status')).toHaveText('Live');
    await expect(widget.getByRole('rowheader')).toHaveCount(held.length);
    found.push(...(await axeViolations(page, `embed 390 px ${theme}`)));
    await widget.screenshot({ path: join(dir, `embed-390-${theme}.png`), animations: 'disabled' });
  }
  expect(found).toEqual([]);
});
