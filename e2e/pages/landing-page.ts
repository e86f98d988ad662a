import type { Locator, Page } from '@playwright/test';

/** The public landing page at `/`. */
export class LandingPage {
  readonly heading: Locator;
  readonly health: Locator;
  readonly healthStatus: Locator;
  readonly darkModeToggle: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Leasehold — fenced leases for your fleet' });
    this.health = page.getByRole('region', { name: 'Service health' });
    this.healthStatus = this.health.getByRole('status');
    this.darkModeToggle = page.getByRole('button', { name: 'Dark mode' });
  }

  async goto(): Promise<void> {
    await this.page.goto('/');
  }
}
