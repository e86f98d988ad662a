import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Page } from '@playwright/test';
import { LeaseholdClient } from '../lib/client';
import { ADMIN_TOKEN, expect, test, STORE_INDEPENDENT } from './fixtures';

// A shared two-core machine: the axe passes in two themes take a while.
test.describe.configure({ timeout: 90_000 });

function uniqueRoute(name: string): string {
  return `lease://acme/rr-e2e/${name}-${randomUUID().slice(0, 8)}`;
}
const detailPath = (route: string) => `/leases/${route.slice('lease://'.length)}`;
const apiPath = (route: string, action: string) => `/api/v1/leases/${route.slice('lease://'.length)}/${action}`;
const REASON = 'deploying renderer v2, please finish and let go';

/**
 * axe-core (the accessibility engine, from npm; see docs/release-requests.md)
 * injected into the page: the colour-contrast rule, WCAG AA 4.5:1.
 */
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
async function contrastViolations(page: Page, dark: boolean): Promise<string[]> {
  await page.evaluate((on) => document.documentElement.classList.toggle('dark', on), dark);
  // The theme's colours transition: measure once none is running (a finished transition leaves getAnimations()).
  await page.waitForFunction(() => !document.getAnimations().some((a) => a instanceof CSSTransition));
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: Array<{ id: string; nodes: Array<{ target: string[]; failureSummary?: string }> }> }> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'rule', values: ['color-contrast'] } });
    return r.violations.flatMap((v) => v.nodes.map((n) => `${v.id} ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
  });
  return violations.map((v) => `${dark ? 'dark' : 'light'}: ${v}`);
}

test('asking the holder (an SDK worker) to release: the dialog, the pending request, then the page goes live to free', async ({ page, signIn, baseURL }) => {
  const route = uniqueRoute('ask');
  const client = new LeaseholdClient({ baseUrl: baseURL!, token: ADMIN_TOKEN });
  const session = await client.openSession({ ownerId: 'renderer-9', ttlMs: 30_000 });
  const handle = await session.acquire(route, { ttlMs: 3_000 });
  // The worker: when asked, it finishes (here: at once), checkpoints and releases.
  const released = new Promise<void>((resolve, reject) =>
    handle.addEventListener('releaseRequested', () => void handle.checkpoint({ done: true }).then(() => handle.release()).then(resolve, reject), { once: true }),
  );
  try {
    await signIn(page);
    await page.goto(detailPath(route));
    await expect(page.getByRole('status', { name: 'Feed' })).toContainText('live');
    await expect(page.getByRole('button', { name: 'Force release', exact: true })).toBeVisible();

    await page.getByRole('button', { name: 'Ask holder to release' }).click();
    const dialog = page.getByRole('dialog', { name: 'Ask holder to release' });
    await expect(dialog).toBeVisible();
    await expect(dialog).toContainText(String(handle.fencingToken));
    const send = dialog.getByRole('button', { name: 'Send request' });
    await expect(send).toBeDisabled();
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('too short');
    await expect(send).toBeDisabled();
    await dialog.getByRole('textbox', { name: 'Reason' }).fill(REASON);
    await expect(dialog).toContainText(`${REASON.length} / 500`);
    await send.click();

    // The request is pending (if the page is quick enough to see it before the worker lets go), then the route is free, live.
    await released;
    await expect(page.getByText('Nobody holds this route')).toBeVisible();
    await expect(page.getByRole('status').filter({ hasText: 'let go of the lease' })).toBeVisible();
    expect(handle.releaseRequest?.reason).toBe(REASON);
    expect(handle.state).toBe('released');
  } finally {
    await session.close();
  }
});

test('the pending request shows its age and Force release stays available', async ({ page, signIn, api }) => {
  const route = uniqueRoute('pending');
  const held = await api.hold(route, 'stubborn-worker');
  const asked = await api.http.post(apiPath(route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: held.fencingToken } });
  expect(asked.ok()).toBe(true);
  await signIn(page);
  await page.goto(detailPath(route));
  const pending = page.getByRole('region', { name: 'Pending release request' });
  await expect(pending).toContainText(/Release requested \d+s ago/);
  await expect(pending).toContainText(REASON);
  await expect(page.getByRole('button', { name: 'Force release', exact: true })).toBeEnabled();
});

test('the timeline shows three tenures with the right end kinds, reachable by keyboard', async ({ page, signIn, api }) => {
  const route = uniqueRoute('history');
  const first = await api.hold(route, 'first-worker');
  await api.http.post(apiPath(route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: first.fencingToken } });
  await api.release(first);
  const second = await api.hold(route, 'second-worker');
  const forced = await api.http.post(apiPath(route, 'force-release'), { data: { request_id: randomUUID(), reason: 'stuck worker, freeing it', expected_fencing_token: second.fencingToken } });
  expect(forced.ok()).toBe(true);
  const third = await api.hold(route, 'third-worker');

  await signIn(page);
  await page.goto(detailPath(route));
  const figure = page.getByRole('figure', { name: 'Lease history' });
  await expect(figure).toBeVisible();
  const items = figure.getByRole('list', { name: 'Tenures' }).getByRole('listitem');
  await expect(items).toHaveCount(3);
  await expect(items.nth(0)).toContainText(`first-worker, token ${first.fencingToken}`);
  await expect(items.nth(0)).toContainText('released');
  await expect(items.nth(0)).toContainText(`release requested at`);
  await expect(items.nth(1)).toContainText(`second-worker, token ${second.fencingToken}`);
  await expect(items.nth(1)).toContainText('force-released');
  await expect(items.nth(2)).toContainText(`third-worker, token ${third.fencingToken}`);
  await expect(items.nth(2)).toContainText('still held');
  const bars = figure.locator('button[data-end]');
  await expect(bars).toHaveCount(3);
  expect(await bars.evaluateAll((b) => b.map((x) => x.getAttribute('data-end')))).toEqual(['released', 'force_released', 'held']);

  // Keyboard: Tab reaches a bar, and focusing it shows its times, renewals and reasons.
  await page.locator('body').click({ position: { x: 1, y: 1 } });
  let reached = false;
  for (let i = 0; i < 80 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.hasAttribute('data-end') === true);
  }
  expect(reached, 'a timeline bar takes keyboard focus').toBe(true);
  await expect(figure.getByRole('status')).toContainText(/first-worker, token \d+; from .*; released; \d+ renewals?; release requested at/);
});

test('lease detail, audit and the dialogs pass the contrast check in light and dark', STORE_INDEPENDENT, async ({ page, signIn, api }) => {
  const route = uniqueRoute('contrast');
  const held = await api.hold(route, 'contrast-worker');
  await api.http.post(apiPath(route, 'release-request'), { data: { request_id: randomUUID(), reason: REASON, expected_fencing_token: held.fencingToken } });
  await signIn(page);
  const found: string[] = [];

  await page.goto(detailPath(route));
  await expect(page.getByRole('region', { name: 'Pending release request' })).toBeVisible();
  await expect(page.getByRole('figure', { name: 'Lease history' }).getByRole('listitem')).toHaveCount(1);
  for (const dark of [false, true]) found.push(...(await contrastViolations(page, dark)));

  for (const [button, dialogName] of [
    ['Ask holder to release', 'Ask holder to release'],
    ['Force release', 'Force release lease'],
  ] as const) {
    await page.getByRole('button', { name: button, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: dialogName });
    await expect(dialog).toBeVisible();
    await dialog.getByRole('textbox', { name: 'Reason' }).fill('short');
    for (const dark of [false, true]) found.push(...(await contrastViolations(page, dark)).map((v) => `${dialogName}: ${v}`));
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  }

  await page.goto('/audit');
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  await expect(page.getByText(REASON).first()).toBeVisible();
  for (const dark of [false, true]) found.push(...(await contrastViolations(page, dark)).map((v) => `audit: ${v}`));

  expect(found).toEqual([]);
});
