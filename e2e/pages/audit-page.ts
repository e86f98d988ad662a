import type { Locator, Page } from '@playwright/test';

/** The console's `/audit` page. */
export class AuditPage {
  readonly heading: Locator;
  readonly routeFilter: Locator;
  readonly eventType: Locator;
  readonly since: Locator;
  readonly until: Locator;
  readonly applyButton: Locator;
  readonly table: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Audit' });
    this.routeFilter = page.getByRole('textbox', { name: 'Route or selector' });
    this.eventType = page.getByRole('combobox', { name: 'Event type' });
    this.since = page.getByLabel('Since');
    this.until = page.getByLabel('Until');
    this.applyButton = page.getByRole('button', { name: 'Apply filters' });
    this.table = page.getByRole('table', { name: 'Audit events' });
  }

  async goto(query = ''): Promise<void> {
    await this.page.goto(`/audit${query}`);
  }

  async filterByRoute(routeOrSelector: string): Promise<void> {
    await this.routeFilter.fill(routeOrSelector);
    await this.applyButton.click();
  }

  /** Data rows (the header row excluded). */
  rows(): Locator {
    return this.table.getByRole('row').filter({ has: this.page.getByRole('cell') });
  }

  /** The data row that mentions `text` (a reason, a route, a correlation id). */
  row(text: string): Locator {
    return this.rows().filter({ hasText: text });
  }
}
