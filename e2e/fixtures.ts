import { test as base, expect, type Page } from '@playwright/test';
import { LandingPage } from './pages/landing-page';

type Fixtures = {
  /** Console errors and uncaught exceptions seen on `page` so far; a test asserts it stays empty. */
  consoleErrors: string[];
  landingPage: LandingPage;
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
  consoleErrors: async ({ page }, use) => {
    await use(collectErrors(page));
  },
  landingPage: async ({ page }, use) => {
    await use(new LandingPage(page));
  },
});

export { expect };
