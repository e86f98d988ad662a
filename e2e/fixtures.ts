import { test as base, expect, request as apiRequest, type APIRequestContext, type Page } from '@playwright/test';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LandingPage } from './pages/landing-page';

/** The shared server's bootstrap root token (playwright.config.ts sets it). */
export const ADMIN_TOKEN = process.env.LEASEHOLD_E2E_ADMIN_TOKEN ?? '';
/**
 * Where the tests' own API calls go: instance B when the suite runs on
 * PostgreSQL (two instances; the console is on A, `baseURL`), else undefined
 * (the one server at `baseURL`). playwright.config.ts sets it.
 */
export const API_URL: string | undefined = process.env.LEASEHOLD_E2E_API_URL;
/** The PostgreSQL pass (two instances), set by playwright.config.ts's caller. */
const POSTGRES = process.env.LEASEHOLD_E2E_STORE === 'postgres';

/**
 * The tag of a test whose subject is the page itself (axe, the CSP, layout
 * and formatting, headers, the packaged widget), not data that reached the
 * console through the store: the PostgreSQL pass leaves it out
 * (playwright.config.ts), as it would check the same page twice
 * (docs/design.md "How the CI time splits").
 */
export const STORE_INDEPENDENT = { tag: '@store-independent' } as const;

export interface Held {
  route: string;
  sessionId: string;
  holderIncarnation: string;
  leaseId: string;
  fencingToken: number;
}

export interface OpenedSession {
  sessionId: string;
  holderIncarnation: string;
}

/**
 * Seeding through the real API with the admin token. Everything a test
 * opens through it (sessions, tokens) is closed or revoked after the test,
 * whether it passed or not.
 */
export interface LeaseholdApi {
  http: APIRequestContext;
  openSession(ownerId: string, ttlMs?: number): Promise<OpenedSession>;
  acquire(route: string, session: OpenedSession, opts?: { ttlMs?: number; metadata?: Record<string, string | number | boolean> }): Promise<Held>;
  release(held: Held): Promise<void>;
  /** Acquire `route` under a new session of `ownerId`. */
  hold(route: string, ownerId: string, opts?: { ttlMs?: number }): Promise<Held>;
  inspect(route: string): Promise<Record<string, any> | undefined>;
  closeSession(sessionId: string): Promise<void>;
  /** A new token (not root) with these grants; returns its secret. */
  createToken(name: string, grants: string[]): Promise<{ tokenId: string; token: string }>;
  createEmbedToken(selector: string): Promise<string>;
}

type Fixtures = {
  /**
   * Where `api` sends its calls: `other` is instance B when there are two
   * (API_URL), `console` the console's own instance. A spec about what is
   * per process (metrics) uses `test.use({ apiOn: 'console' })`.
   */
  apiOn: 'other' | 'console';
  /** Console errors and uncaught exceptions seen on `page` so far; a test asserts it stays empty. */
  consoleErrors: string[];
  landingPage: LandingPage;
  api: LeaseholdApi;
  /** Log `page`'s browser context in with `token` (the admin token by default), through the API, as the login page does. */
  signIn: (page: Page, token?: string) => Promise<void>;
  /** Write `<name>-light.png` and `<name>-dark.png` of the page to test-results/screenshots (in the SQLite pass only). */
  screenshots: (page: Page, name: string) => Promise<void>;
};

function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(`console: ${msg.text()} (${msg.location().url})`);
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  return errors;
}

export const test = base.extend<Fixtures>({
  apiOn: ['other', { option: true }],
  consoleErrors: async ({ page }, use) => {
    await use(collectErrors(page));
  },
  landingPage: async ({ page }, use) => {
    await use(new LandingPage(page));
  },

  api: async ({ baseURL, apiOn }, use) => {
    const http = await apiRequest.newContext({ baseURL: apiOn === 'other' ? (API_URL ?? baseURL) : baseURL, extraHTTPHeaders: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    const sessions = new Set<string>();
    const tokens = new Set<string>();
    const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<Record<string, any>> => {
      const res = await http.fetch(path, { method, data: body });
      expect(res.ok(), `${method} ${path}: ${res.status()} ${await res.text()}`).toBe(true);
      return (await res.json()) as Record<string, any>;
    };
    const openSession = async (ownerId: string, ttlMs = 60_000): Promise<OpenedSession> => {
      const { session } = await call('POST', '/api/v1/sessions', { owner_id: ownerId, ttl_ms: ttlMs });
      sessions.add(session.session_id);
      return { sessionId: session.session_id, holderIncarnation: session.holder_incarnation };
    };
    const acquire: LeaseholdApi['acquire'] = async (route, s, opts = {}) => {
      const { lease } = await call('POST', `/api/v1/leases/${route.slice('lease://'.length)}/acquire`, {
        session_id: s.sessionId,
        request_id: randomUUID(),
        ttl_ms: opts.ttlMs ?? 60_000,
        metadata: opts.metadata,
      });
      return { route, sessionId: s.sessionId, holderIncarnation: s.holderIncarnation, leaseId: lease.lease_id, fencingToken: lease.fencing_token };
    };
    await use({
      http,
      openSession,
      acquire,
      async release(held) {
        await call('POST', `/api/v1/leases/${held.route.slice('lease://'.length)}/release`, {
          session_id: held.sessionId,
          request_id: randomUUID(),
          lease_id: held.leaseId,
          fencing_token: held.fencingToken,
        });
      },
      async hold(route, ownerId, opts = {}) {
        return acquire(route, await openSession(ownerId, Math.max(opts.ttlMs ?? 60_000, 1_000)), opts);
      },
      async inspect(route) {
        const res = await http.get(`/api/v1/leases/${route.slice('lease://'.length)}`);
        if (res.status() === 404) return undefined;
        expect(res.ok(), `inspect ${route}: ${res.status()}`).toBe(true);
        return ((await res.json()) as Record<string, any>).lease;
      },
      async closeSession(sessionId) {
        sessions.delete(sessionId);
        await call('POST', '/api/v1/sessions/close', { session_id: sessionId });
      },
      async createToken(name, grants) {
        const created = await call('POST', '/api/v1/tokens', { name, grants });
        tokens.add(created.token_id);
        return { tokenId: created.token_id, token: created.token };
      },
      async createEmbedToken(selector) {
        const created = await call('POST', '/api/v1/embed-tokens', { selector, ttl_ms: 600_000 });
        return created.token as string;
      },
    });
    // Cleanup after use(): runs whether the test passed or failed.
    for (const id of sessions) await http.post('/api/v1/sessions/close', { data: { session_id: id } });
    for (const id of tokens) await http.delete(`/api/v1/tokens/${id}`);
    await http.dispose();
  },

  signIn: async ({}, use) => {
    await use(async (page, token = ADMIN_TOKEN) => {
      const res = await page.request.post('/api/v1/auth/login', { data: { token } });
      expect(res.ok(), `login: ${res.status()} ${await res.text()}`).toBe(true);
    });
  },

  screenshots: async ({}, use, testInfo) => {
    const dir = join(testInfo.project.outputDir, 'screenshots');
    mkdirSync(dir, { recursive: true });
    await use(async (page, name) => {
      // The docs' pictures are of the SQLite pass; the PostgreSQL pass would draw the same pages again.
      if (POSTGRES) return;
      const dark = () => page.evaluate(() => document.documentElement.classList.contains('dark'));
      const setDark = (on: boolean) => page.evaluate((v) => document.documentElement.classList.toggle('dark', v), on);
      const was = await dark();
      await setDark(false);
      await page.screenshot({ path: join(dir, `${name}-light.png`), fullPage: true });
      await setDark(true);
      await page.screenshot({ path: join(dir, `${name}-dark.png`), fullPage: true });
      await setDark(was);
    });
  },
});

export { expect };
