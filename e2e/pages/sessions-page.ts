import type { Locator, Page } from '@playwright/test';

/** The console's `/sessions` page. */
export class SessionsPage {
  readonly heading: Locator;
  readonly ownerFilter: Locator;
  readonly filterButton: Locator;
  readonly refreshButton: Locator;
  readonly table: Locator;
  readonly nextPage: Locator;
  readonly previousPage: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Sessions' });
    this.ownerFilter = page.getByRole('searchbox', { name: 'Owner' });
    this.filterButton = page.getByRole('button', { name: 'Filter', exact: true });
    this.refreshButton = page.getByRole('button', { name: 'Refresh' });
    this.table = page.getByRole('table', { name: 'Sessions' });
    this.nextPage = page.getByRole('button', { name: 'Next page' });
    this.previousPage = page.getByRole('button', { name: 'Previous page' });
  }

  async goto(query = ''): Promise<void> {
    await this.page.goto(`/sessions${query}`);
  }

  async filterByOwner(owner: string): Promise<void> {
    await this.ownerFilter.fill(owner);
    await this.filterButton.click();
  }

  /** The row of the session whose owner cell is `owner`. */
  row(owner: string): Locator {
    return this.table.getByRole('row').filter({ has: this.page.getByRole('cell', { name: owner, exact: true }) });
  }

  /** The "N leases" link of a row. */
  leasesLink(row: Locator): Locator {
    return row.getByRole('link', { name: /^\d+ leases?$/ });
  }

  /** A row's cell under the column named `column` (the table's header, e.g. "Last batched renewal"). */
  async cell(row: Locator, column: string): Promise<Locator> {
    const headers = await this.table.getByRole('columnheader').allInnerTexts();
    const i = headers.findIndex((h) => h.trim().toLowerCase() === column.toLowerCase());
    if (i < 0) throw new Error(`no column ${column} among ${headers.join(', ')}`);
    return row.getByRole('cell').nth(i);
  }

  emptyState(): Locator {
    return this.page.getByText('No open sessions', { exact: true });
  }
}
