import type { Locator, Page } from '@playwright/test';

/** `/leases`: the live, paginated table of held leases. */
export class LeasesPage {
  readonly heading: Locator;
  readonly selector: Locator;
  readonly owner: Locator;
  readonly pageSize: Locator;
  readonly show: Locator;
  readonly table: Locator;
  readonly rows: Locator;
  readonly next: Locator;
  readonly previous: Locator;
  readonly feed: Locator;
  readonly signOut: Locator;
  readonly nav: Locator;
  readonly alert: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Leases' });
    this.selector = page.getByRole('textbox', { name: 'Selector' });
    this.owner = page.getByRole('textbox', { name: 'Owner' });
    this.pageSize = page.getByRole('combobox', { name: 'Page size' });
    this.show = page.getByRole('button', { name: 'Show leases' });
    this.table = page.getByRole('table', { name: 'Leases' });
    // Data rows only: the header row has column headers, not cells.
    this.rows = this.table.getByRole('row').filter({ has: page.getByRole('cell') });
    this.next = page.getByRole('button', { name: 'Next page' });
    this.previous = page.getByRole('button', { name: 'Previous page' });
    this.feed = page.getByRole('status', { name: 'Feed' });
    this.signOut = page.getByRole('button', { name: 'Sign out' });
    this.nav = page.getByRole('navigation', { name: 'Main' });
    // Inside main: Next's route announcer is an alert too.
    this.alert = page.getByRole('main').getByRole('alert');
  }

  /** An on-call filter's toggle ("Expiring soon", "With waiters", "Release requested", "In lock-delay"). */
  filter(name: string): Locator {
    return this.page.getByRole('group', { name: 'On-call filters' }).getByRole('button', { name, exact: true });
  }

  /** The "Expiring soon" window. */
  get expiringWindow(): Locator {
    return this.page.getByRole('combobox', { name: 'within' });
  }

  /** The view's count of matching leases and its owners. */
  get counts(): Locator {
    return this.page.getByRole('region', { name: 'Lease counts' });
  }

  /** The owner's count in the per-owner list, a button that filters by that owner. */
  ownerCount(owner: string): Locator {
    return this.counts.getByRole('button', { name: new RegExp(`^${owner.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\d`) });
  }

  /** The free routes in lock-delay ("In lock-delay"). */
  get lockDelayTable(): Locator {
    return this.page.getByRole('table', { name: 'Routes in lock-delay' });
  }

  /** Open the table on `selector`, with an optional page size, and wait for the feed to be live. */
  async goto(selector: string, opts: { limit?: number } = {}): Promise<void> {
    const q = new URLSearchParams({ selector });
    if (opts.limit) q.set('limit', String(opts.limit));
    await this.page.goto(`/leases?${q}`);
  }

  /** The row whose route cell is `route`. */
  row(route: string): Locator {
    return this.rows.filter({ has: this.page.getByRole('link', { name: route, exact: true }) });
  }

  /** The route links of the rows, in table order. */
  async routes(): Promise<string[]> {
    return this.table.getByRole('link').allTextContents();
  }

  /** The "Expires in" cell of `route`'s row. */
  expiresIn(route: string): Locator {
    return this.row(route).getByRole('cell').nth(4);
  }
}
