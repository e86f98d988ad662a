// The embeddable inventory (`/embed/inventory?selector=…#token=…`) framed by
// a page on another origin, against the real server: live rows as the test
// acquires and releases through the API, the token only ever in the
// fragment and the Authorization header, the framing and referrer headers,
// and the states of a page that is not set up or whose token is refused.
import type { Request } from '@playwright/test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, test as base, STORE_INDEPENDENT } from './fixtures';
import { EmbeddedInventory, EmbedHostPage } from './pages/embed-host-page';

const test = base.extend<{ host: EmbedHostPage }>({
  // The host page's own little server, on another origin and site than the console's.
  host: async ({ page }, use) => {
    let html = '';
    const server = createServer((req, res) => {
      res.writeHead(req.url === '/' ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(req.url === '/' ? html : '');
    });
    await new Promise<void>((resolve) => server.listen(0, resolve));
    const { port } = server.address() as AddressInfo;
    await use(new EmbedHostPage(page, `http://localhost:${port}`, (h) => (html = h)));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  },
});

const SELECTOR = 'lease://acme/embed-e2e/*';
const FRAME = 'Lease inventory';

function embedUrl(baseURL: string, selector: string | undefined, token: string | undefined): string {
  const query = selector === undefined ? '' : `?selector=${encodeURIComponent(selector)}`;
  const fragment = token === undefined ? '' : `#token=${encodeURIComponent(token)}`;
  return `${baseURL}/embed/inventory${query}${fragment}`;
}

test('a page on another origin frames the inventory, which follows leases acquired and released through the API', async ({
  page,
  api,
  host,
  baseURL,
  screenshots,
  consoleErrors,
}) => {
  const token = await api.createEmbedToken(SELECTOR);
  const toServer: Request[] = [];
  page.on('request', (r) => {
    if (r.url().startsWith(baseURL!)) toServer.push(r);
  });
  await host.open([{ title: FRAME, src: embedUrl(baseURL!, SELECTOR, token) }]);
  const inventory = new EmbeddedInventory(host.frame(FRAME));

  await expect(inventory.status).toHaveText('Live');
  await expect(inventory.table).toContainText('No leases held.');

  const outside = await api.hold('lease://acme/embed-e2e-other/doc', 'outsider');
  const first = await api.hold('lease://acme/embed-e2e/doc-1', 'renderer-1');
  await expect(inventory.row(first.route)).toContainText('renderer-1');
  await expect(inventory.row(first.route)).toContainText(String(first.fencingToken));
  const second = await api.hold('lease://acme/embed-e2e/doc-2', 'renderer-2');
  await expect(inventory.row(second.route)).toContainText('renderer-2');
  await expect(inventory.count).toHaveText('2 held');
  await expect(inventory.row(outside.route), 'a lease outside the selector never shows').toHaveCount(0);

  await api.release(first);
  await expect(inventory.row(first.route)).toHaveCount(0);
  await expect(inventory.count).toHaveText('1 held');
  await expect(inventory.row(second.route)).toBeVisible();

  // No console chrome inside the frame.
  const frame = host.frame(FRAME);
  await expect(frame.getByRole('button', { name: 'Sign out' })).toHaveCount(0);
  await expect(frame.getByRole('navigation', { name: 'Main' })).toHaveCount(0);

  // The token travelled in the fragment and as a bearer token only: never in a query string, never with a Referer.
  const apiCalls = toServer.filter((r) => new URL(r.url()).pathname.startsWith('/api/'));
  expect(apiCalls.length).toBeGreaterThan(0);
  for (const r of toServer) expect(new URL(r.url()).search, r.url()).not.toContain(token);
  for (const r of apiCalls) {
    const headers = await r.allHeaders();
    expect(headers.authorization, r.url()).toBe(`Bearer ${token}`);
    expect(headers.referer, r.url()).toBeUndefined();
  }

  // The widget alone, light and dark.
  await page.goto(embedUrl(baseURL!, SELECTOR, token));
  await expect(page.getByRole('table', { name: 'Inventory' }).getByRole('rowheader', { name: second.route })).toBeVisible();
  await screenshots(page, 'embed');
  expect(consoleErrors).toEqual([]);
});

test('console pages refuse framing while the embed may be framed; both send no referrer', STORE_INDEPENDENT, async ({ page, api, host, request, baseURL }) => {
  for (const path of ['/leases', '/login', '/metrics']) {
    const headers = (await request.get(path)).headers();
    expect(headers['content-security-policy'], path).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options'], path).toBe('DENY');
    expect(headers['referrer-policy'], path).toBe('no-referrer');
  }
  const embed = await request.get(`/embed/inventory?selector=${encodeURIComponent(SELECTOR)}`);
  expect(embed.status()).toBe(200);
  expect(embed.headers()['x-frame-options']).toBeUndefined();
  expect(embed.headers()['content-security-policy'] ?? '').not.toContain('frame-ancestors');
  expect(embed.headers()['referrer-policy']).toBe('no-referrer');

  const token = await api.createEmbedToken(SELECTOR);
  await host.open([
    { title: 'Console page', src: `${baseURL}/leases` },
    { title: FRAME, src: embedUrl(baseURL!, SELECTOR, token) },
  ]);
  const inventory = new EmbeddedInventory(host.frame(FRAME));
  await expect(inventory.table).toBeVisible();
  await expect(inventory.status).toHaveText('Live');
  // The browser refused to render the console in a frame: its error page stands in for it.
  await expect.poll(() => page.frame({ name: 'Console page' })?.url()).toMatch(/^chrome-error:/);
  const consoleFrame = host.frame('Console page');
  await expect(consoleFrame.getByRole('textbox', { name: 'Token' })).toHaveCount(0);
  await expect(consoleFrame.getByRole('navigation', { name: 'Main' })).toHaveCount(0);
});

test('the embed says what is missing without a token or a selector, and shows a refused token as the widget’s error', STORE_INDEPENDENT, async ({
  page,
  baseURL,
}) => {
  await page.goto(embedUrl(baseURL!, SELECTOR, undefined));
  const problem = page.getByRole('alert').filter({ hasText: 'not set up' });
  await expect(problem).toContainText('#token=');
  await expect(page.getByRole('table', { name: 'Inventory' })).toHaveCount(0);

  await page.goto(embedUrl(baseURL!, undefined, 'lh_whatever'));
  await expect(problem).toContainText('?selector=');
  await expect(problem).not.toContainText('#token=');

  await page.goto(embedUrl(baseURL!, 'lease://acme', 'lh_whatever'));
  await expect(problem).toContainText('is not valid');

  // A token the server refuses: the widget's own error state, with the API's message.
  await page.goto(embedUrl(baseURL!, SELECTOR, 'lh_not_a_real_token_000000000000'));
  const widget = page.getByRole('region', { name: 'Inventory' });
  await expect(widget.getByRole('status')).toContainText('Error');
  await expect(widget.getByRole('table', { name: 'Inventory' })).toContainText('token was refused');
});
