// docs/console.md "On-call: badges and dialogs that tell the truth": revoke with "Also close the holder's session" previews
// every lease the close would end, page by page, with the count the server
// then ends (the session's lease_count), not the first LIST page's.
import { randomUUID } from 'node:crypto';
import { expect, test as base, type LeaseholdApi, type OpenedSession } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';

const test = base.extend<{ leaseDetail: LeaseDetailPage }>({
  leaseDetail: async ({ page }, use) => {
    await use(new LeaseDetailPage(page));
  },
});

test.describe.configure({ timeout: 90_000 });

/** Acquire every one of `routes` under `session`. */
async function acquireAll(api: LeaseholdApi, session: OpenedSession, routes: readonly string[]): Promise<void> {
  for (const route of routes) await api.acquire(route, session, { ttlMs: 120_000 });
}

async function listRoutes(api: LeaseholdApi, selector: string): Promise<string[]> {
  const routes: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await api.http.get('/api/v1/leases', { params: { selector, limit: 1000, ...(cursor ? { cursor } : {}) } });
    expect(res.ok()).toBe(true);
    const body = (await res.json()) as { items: Array<{ route: string }>; next_cursor: string | null };
    routes.push(...body.items.map((l) => l.route));
    cursor = body.next_cursor;
  } while (cursor);
  return routes;
}

test('with 120 other leases the close-session preview lists all 120, page by page, and confirming ends exactly those and the revoked one', async ({
  api,
  page,
  signIn,
  leaseDetail,
}) => {
  const area = `preview-e2e-${randomUUID().slice(0, 8)}`;
  const routes = Array.from({ length: 121 }, (_, i) => `lease://acme/${area}/doc-${String(i).padStart(3, '0')}`);
  const session = await api.openSession('fleet-worker', 120_000);
  await acquireAll(api, session, routes);
  // The revoked lease sorts in the middle, so it is dropped from inside a page, not at its edge.
  const target = routes[60]!;
  const others = routes.filter((r) => r !== target);
  // Another session's lease in the same area: not the holder's, never listed, never ended.
  const bystander = await api.hold(`lease://acme/${area}/zz-bystander`, 'bystander');

  await signIn(page);
  await leaseDetail.goto(target);
  await expect(leaseDetail.field('Owner')).toContainText('fleet-worker');
  await leaseDetail.revokeButton.click();
  const dialog = leaseDetail.revokeDialog;
  await leaseDetail.closeSessionCheckbox(dialog).check();
  const preview = leaseDetail.sessionPreview(dialog);
  await expect(preview).toContainText('These 120 other leases would also end');
  await expect(preview).toContainText('121 with this one');

  // Every page of the preview: the summary says where it is, the pages add up to the 120.
  const listed: string[] = [];
  const summary = preview.getByText(/^\d+–\d+ of 120$/);
  const next = preview.getByRole('button', { name: 'Next leases' });
  for (let first = 1; ; ) {
    await expect(summary).toHaveText(new RegExp(`^${first}–\\d+ of 120$`));
    const [, a, b] = /^(\d+)–(\d+)/.exec((await summary.textContent()) ?? '')!.map(Number);
    const items = await preview.getByRole('listitem').allTextContents();
    expect(items).toHaveLength(b! - a! + 1);
    listed.push(...items);
    if (b === 120) break;
    await next.click();
    first = b! + 1;
  }
  await expect(next).toBeDisabled();
  expect(listed.sort()).toEqual(others);

  // Back again: Previous returns to the first page.
  const previous = preview.getByRole('button', { name: 'Previous leases' });
  while (await previous.isEnabled()) await previous.click();
  await expect(summary).toHaveText(/^1–\d+ of 120$/);

  await leaseDetail.reason(dialog).fill('worker credentials leaked, INC-9120');
  await leaseDetail.resourceConfirmation(dialog).fill(target.split('/').pop()!);
  await leaseDetail.confirmRevoke().click();
  await expect(dialog).toBeHidden();
  await expect(leaseDetail.notice).toContainText('session was closed');

  // What the preview said is what ended: all 121 of the session, and nothing else.
  expect(await listRoutes(api, `lease://acme/${area}/*`)).toEqual([bystander.route]);
});

test('the preview of a session with no other lease says so, and one other lease is named', async ({ api, page, signIn, leaseDetail }) => {
  const area = `preview-e2e-${randomUUID().slice(0, 8)}`;
  const alone = await api.hold(`lease://acme/${area}/alone`, 'solo-worker');
  const session = await api.openSession('pair-worker');
  await acquireAll(api, session, [`lease://acme/${area}/a`, `lease://acme/${area}/b`]);
  await signIn(page);

  await leaseDetail.goto(alone.route);
  await leaseDetail.revokeButton.click();
  await leaseDetail.closeSessionCheckbox(leaseDetail.revokeDialog).check();
  await expect(leaseDetail.sessionPreview(leaseDetail.revokeDialog)).toContainText('No other lease of this session would end');
  await leaseDetail.cancel(leaseDetail.revokeDialog).click();

  await leaseDetail.goto(`lease://acme/${area}/a`);
  await leaseDetail.revokeButton.click();
  await leaseDetail.closeSessionCheckbox(leaseDetail.revokeDialog).check();
  const preview = leaseDetail.sessionPreview(leaseDetail.revokeDialog);
  await expect(preview).toContainText('This other lease would also end');
  await expect(preview.getByRole('listitem')).toHaveText([`lease://acme/${area}/b`]);
  await expect(preview.getByRole('button', { name: 'Next leases' })).toHaveCount(0);
});
