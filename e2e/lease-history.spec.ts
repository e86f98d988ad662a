// docs/console.md "The lease history": the lease history tells the truth. A tenure ended by
// closing its session ends where the audit trail says (an event on its
// route), not at "now", and stays there on reload; the view fits the
// tenures; lock-delay gaps are shaded; focusing a force-released tenure
// shows the operator's reason; expired and force-released differ by shape
// and pattern, not by colour alone; every time is 24 h in the operator's
// zone with the ISO instant on hover. LEASEHOLD_DOCS_SCREENSHOTS=1 writes
// the pictures docs/console.md shows into docs/img/ (otherwise into the
// test's output).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Locator } from '@playwright/test';
import { axeViolations, expectTheme, preferTheme, THEMES } from './axe';
import { expect, test, type LeaseholdApi, STORE_INDEPENDENT } from './fixtures';
import { LeaseDetailPage } from './pages/lease-detail-page';

// A zone that is not the server's, with a half-hour offset, and a locale whose default clock is 12 h.
const ZONE = 'Asia/Kolkata';
test.use({ timezoneId: ZONE, locale: 'en-US', viewport: { width: 1280, height: 900 } });
test.describe.configure({ timeout: 90_000 });

const OPERATOR_REASON = 'renderer wedged after deploy, freeing it';
const leasePath = (route: string, action?: string) => `/api/v1/leases/${route.slice('lease://'.length)}${action ? `/${action}` : ''}`;
/** The 24-hour clock in the browser's zone, as the console must write it. */
const clockIn = (iso: string) => new Intl.DateTimeFormat('en-US', { timeZone: ZONE, hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(new Date(iso));

interface Ev {
  time: string;
  event_type: string;
  result: string;
  fencing_token: number | null;
}

/**
 * The route's audit events, oldest first, once `ready` holds: read on the
 * instance that made them (a read there flushes its buffer), so the console's
 * instance finds them in the store.
 */
async function trailOf(api: LeaseholdApi, route: string, ready: (events: Ev[]) => boolean): Promise<Ev[]> {
  let events: Ev[] = [];
  await expect
    .poll(async () => {
      const res = await api.http.get(`/api/v1/audit?route=${encodeURIComponent(route)}&order=oldest&limit=1000`);
      expect(res.ok()).toBe(true);
      events = ((await res.json()) as { items: Ev[] }).items;
      return ready(events);
    })
    .toBe(true);
  return events;
}

async function forceRelease(api: LeaseholdApi, route: string, token: number): Promise<void> {
  const res = await api.http.post(leasePath(route, 'force-release'), { data: { request_id: randomUUID(), reason: OPERATOR_REASON, expected_fencing_token: token } });
  expect(res.ok(), await res.text()).toBe(true);
}

/** A lease of a one-second TTL, ended by its deadline (inspect settles it). */
async function letExpire(api: LeaseholdApi, route: string, owner: string): Promise<number> {
  const held = await api.acquire(route, await api.openSession(owner), { ttlMs: 1_000 });
  await expect.poll(() => api.inspect(route), { message: 'the one-second lease to expire' }).toBeUndefined();
  return held.fencingToken;
}

/** Acquire under a new session, waiting in the route's queue (through a lock-delay) until granted. */
async function acquireWaiting(api: LeaseholdApi, route: string, owner: string): Promise<{ fencingToken: number; sessionId: string }> {
  const s = await api.openSession(owner);
  const res = await api.http.post(leasePath(route, 'acquire'), { data: { session_id: s.sessionId, request_id: randomUUID(), ttl_ms: 60_000, wait_ms: 20_000 } });
  expect(res.ok(), await res.text()).toBe(true);
  return { fencingToken: ((await res.json()) as { lease: { fencing_token: number } }).lease.fencing_token, sessionId: s.sessionId };
}

async function setLockDelay(api: LeaseholdApi, selector: string, ms: number): Promise<void> {
  const res = await api.http.put('/api/v1/policies', { data: { selector, reason: 'lease history e2e: lock-delay', lock_delay_ms: ms } });
  expect(res.ok(), await res.text()).toBe(true);
}

test('a tenure ended by closing its session ends where the trail says, at a fixed 24-hour time that does not move on reload', async ({ api, page, signIn }) => {
  const route = `lease://acme/history-e2e/closed-${randomUUID().slice(0, 8)}`;
  const held = await api.hold(route, 'closing-worker');
  await api.closeSession(held.sessionId);
  const trail = await trailOf(api, route, (evs) => evs.some((e) => e.result === 'session_closed'));
  const closed = trail.find((e) => e.result === 'session_closed')!;
  expect([closed.event_type, closed.fencing_token], 'the close is recorded on the route').toEqual(['lease_release', held.fencingToken]);

  await signIn(page);
  const detail = new LeaseDetailPage(page);
  for (const load of ['first visit', 'reload']) {
    if (load === 'first visit') await detail.goto(route);
    else await page.reload();
    const tenures = detail.tenures;
    await expect(tenures, load).toHaveCount(1);
    const tenure = tenures.first();
    await expect(tenure).toContainText('closing-worker, token');
    await expect(tenure).toContainText('session closed');
    await expect(tenure).not.toContainText('still held');
    const end = tenure.locator('time').nth(1);
    await expect(end, `${load}: the end is the recorded close, as an ISO instant on hover`).toHaveAttribute('datetime', closed.time);
    await expect(end).toHaveAttribute('title', closed.time);
    await expect(end, `${load}: in the operator's zone, 24 h`).toContainText(clockIn(closed.time));
    await expect(detail.tenureBar(/^closing-worker, token \d+;/)).toHaveAttribute('data-end', 'session_closed');
  }
});

test("a lock-delay gap is shaded, and hovering or focusing a force-released tenure shows the operator's reason", async ({ api, page, signIn }) => {
  const realm = `hist-${randomUUID().slice(0, 8)}`;
  const route = `lease://${realm}/db/primary`;
  await setLockDelay(api, `lease://${realm}/**`, 30_000);
  const held = await api.hold(route, 'wedged-worker');
  await forceRelease(api, route, held.fencingToken);
  await trailOf(api, route, (evs) => evs.some((e) => e.result === 'lease_force_released'));

  await signIn(page);
  const detail = new LeaseDetailPage(page);
  await detail.goto(route);
  const status = detail.tenureDetails;
  const gap = detail.history.getByRole('img', { name: /^Lock-delay after wedged-worker's lease/ });
  await expect(gap).toBeVisible();
  await expect(gap).toHaveAccessibleName(/\(30s\)$/);
  expect((await gap.boundingBox())!.width, 'the 30 s delay is drawn as a span, not a hairline').toBeGreaterThan(20);

  const bar = detail.tenureBar(/^wedged-worker, token \d+;.*force-released by tk_[\w-]+: “renderer wedged after deploy, freeing it”; lock-delay until /);
  await expect(bar).toHaveAttribute('data-end', 'force_released');
  await bar.hover();
  await expect(status).toContainText(`force-released by`);
  await expect(status).toContainText(OPERATOR_REASON);
  await page.mouse.move(0, 0);
  await expect(status).not.toContainText(OPERATOR_REASON);
  await bar.focus();
  await expect(status).toContainText(OPERATOR_REASON);
  await expect(status).toContainText('lock-delay until');
});

test('expired and force-released tenures differ by marker shape and fill pattern, not only colour; the view fits them; every time on the page is 24 h', STORE_INDEPENDENT, async ({ api, page, signIn }) => {
  const route = `lease://acme/history-e2e/kinds-${randomUUID().slice(0, 8)}`;
  await letExpire(api, route, 'sleepy-worker');
  const forced = await api.hold(route, 'stuck-worker');
  await forceRelease(api, route, forced.fencingToken);
  await trailOf(api, route, (evs) => evs.some((e) => e.result === 'lease_expired') && evs.some((e) => e.result === 'lease_force_released'));

  await signIn(page);
  const detail = new LeaseDetailPage(page);
  await detail.goto(route);
  const tenures = detail.tenures;
  await expect(tenures).toHaveCount(2);
  const expired = detail.tenureBar(/^sleepy-worker, token \d+;.*; expired;/);
  const force = detail.tenureBar(/^stuck-worker, token \d+;.*; force-released by/);
  const look = (bar: Locator) =>
    bar.evaluate((el) => {
      const css = getComputedStyle(el);
      const marker = el.parentElement!.querySelector('svg[data-shape]');
      return { shape: el.getAttribute('data-shape'), pattern: css.backgroundImage, marker: marker?.getAttribute('data-shape') ?? null, colour: css.backgroundColor, width: el.getBoundingClientRect().width };
    });
  const [a, b] = [await look(expired), await look(force)];
  expect(a.shape, 'each bar names its end shape').not.toBeNull();
  expect(a.shape).not.toBe(b.shape);
  expect(a.marker, 'a marker of that shape is drawn at the end').toBe(a.shape);
  expect(b.marker).toBe(b.shape);
  expect(a.pattern).not.toBe('none');
  expect(b.pattern).not.toBe('none');
  expect(a.pattern, 'different fill patterns').not.toBe(b.pattern);
  expect(a.colour).not.toBe(b.colour);
  // Two tenures within seconds of each other, in a view fitted to them (not the hour read): the
  // one-second tenure is a bar, not a 2 px sliver at the edge of an hour.
  const shown = await detail.history.getByText(/^Showing/).locator('time').evaluateAll((ts) => ts.map((t) => Date.parse(t.getAttribute('datetime')!)));
  expect(shown).toHaveLength(2);
  expect(shown[1]! - shown[0]!, 'the view spans the tenures, under a minute').toBeLessThan(60_000);
  expect(a.width).toBeGreaterThan(40);

  const text = await page.getByRole('main').innerText();
  expect(text, 'no 12-hour times anywhere on the page').not.toMatch(/\d\s?(AM|PM|am|pm)\b/);
  await expect(tenures.first()).toContainText(/\b([01]\d|2[0-3]):[0-5]\d:[0-5]\d\b/);
  const start = tenures.first().locator('time').first();
  const iso = (await start.getAttribute('datetime'))!;
  await expect(start).toHaveAttribute('title', iso);
  await expect(start).toContainText(clockIn(iso));
});

test('lease detail with its history passes axe in light and dark, and its pictures are taken', STORE_INDEPENDENT, async ({ api, page, signIn }, testInfo) => {
  const realm = `hist-${randomUUID().slice(0, 8)}`;
  const route = `lease://${realm}/renderers/doc-7`;
  await setLockDelay(api, `lease://${realm}/**`, 3_000);
  // Released after a release request; expired (a lock-delay follows); its session closed; force-released (a lock-delay follows); held.
  const first = await api.hold(route, 'renderer-1');
  const asked = await api.http.post(leasePath(route, 'release-request'), { data: { request_id: randomUUID(), reason: 'deploying renderer v2, please let go', expected_fencing_token: first.fencingToken } });
  expect(asked.ok()).toBe(true);
  await api.release(first);
  await letExpire(api, route, 'renderer-2');
  const third = await acquireWaiting(api, route, 'renderer-3');
  await api.closeSession(third.sessionId);
  const fourth = await api.hold(route, 'renderer-4');
  await forceRelease(api, route, fourth.fencingToken);
  await acquireWaiting(api, route, 'renderer-5');
  await trailOf(api, route, (evs) => evs.some((e) => e.result === 'session_closed') && evs.filter((e) => e.result === 'lease_acquired').length === 5);

  await signIn(page);
  const detail = new LeaseDetailPage(page);
  const dir = process.env.LEASEHOLD_DOCS_SCREENSHOTS ? join(process.cwd(), 'docs', 'img') : testInfo.outputPath();
  const found: string[] = [];
  for (const theme of THEMES) {
    await preferTheme(page, theme);
    await detail.goto(route);
    await expectTheme(page, theme);
    await expect(detail.tenures).toHaveCount(5);
    await expect(detail.lockDelayGaps()).toHaveCount(2);
    // One bar focused, so the picture shows its panel.
    await detail.tenureBar(/force-released by/).focus();
    await expect(detail.tenureDetails).toContainText(OPERATOR_REASON);
    found.push(...(await axeViolations(page, `lease detail with history ${theme}`)));
    await page.getByRole('region', { name: 'Lease history' }).screenshot({ path: join(dir, `lease-history-${theme}.png`), animations: 'disabled' });
    await page.screenshot({ path: join(dir, `lease-detail-${theme}.png`), fullPage: true, animations: 'disabled' });
  }
  expect(found).toEqual([]);
});
