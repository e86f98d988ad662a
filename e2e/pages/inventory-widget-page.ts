import type { Locator, Page } from '@playwright/test';

/** A third-party page that renders `<InventoryWidget>` from the built `leasehold` package. */
export class InventoryWidgetPage {
  readonly widget: Locator;
  readonly table: Locator;
  readonly status: Locator;
  readonly count: Locator;

  constructor(
    readonly page: Page,
    readonly url: string,
  ) {
    this.widget = page.getByRole('region', { name: 'Inventory' });
    this.table = this.widget.getByRole('table', { name: 'Inventory' });
    this.status = this.widget.getByRole('status');
    this.count = this.widget.getByText(/^\d+ held/);
  }

  /** Open the page with an embed token in the fragment (never sent to a server, as on the console's embed page). */
  async goto(token: string): Promise<void> {
    await this.page.goto(`${this.url}#token=${encodeURIComponent(token)}`);
  }

  /** The table row of `route` (its row header is the route). */
  row(route: string): Locator {
    return this.table.getByRole('row').filter({ has: this.page.getByRole('rowheader', { name: route, exact: true }) });
  }
}
