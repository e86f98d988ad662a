import { expect, type Locator, type Page } from '@playwright/test';

export const CHARTS = {
  throughput: 'Acquisitions, conflicts and releases per second',
  leases: 'Active leases',
  sessions: 'Active sessions',
  waiters: 'Waiters',
  fanout: 'Notification fanout and drops per second',
} as const;

/** The chosen operation's charts, under the latency table. */
export const latencyChart = (operation: string) => `Latency of ${operation}`;
export const loadChart = (operation: string) => `Requests and errors of ${operation} per second`;

export type ChartName = (typeof CHARTS)[keyof typeof CHARTS] | ReturnType<typeof latencyChart> | ReturnType<typeof loadChart>;

export const LATENCY_COLUMNS = ['Operation', 'Requests', 'Errors', 'p50', 'p99'] as const;

/** The console's /metrics page: one figure per chart, its values as text. */
export class MetricsPage {
  readonly heading: Locator;
  readonly windowChoice: Locator;
  /** Request latency by operation: one row per operation. */
  readonly latencyTable: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Metrics' });
    this.windowChoice = page.getByRole('group', { name: 'Time window' });
    this.latencyTable = page.getByRole('table', { name: 'Operations by latency' });
  }

  /** The table's column header (its sort button inside). */
  column(name: (typeof LATENCY_COLUMNS)[number]): Locator {
    return this.latencyTable.getByRole('columnheader').filter({ has: this.page.getByRole('button', { name: new RegExp(`^${name}\\b`) }) });
  }

  /** The button that chooses an operation (its row's first cell). */
  operation(name: string): Locator {
    return this.latencyTable.getByRole('button', { name, exact: true });
  }

  /** The row of an operation. */
  operationRow(name: string): Locator {
    return this.latencyTable.getByRole('row').filter({ has: this.page.getByRole('button', { name, exact: true }) });
  }

  /**
   * Waits until an operation's row is in view. The table shows the top ten by
   * p99 until "Show all" is pressed, and an operation's rank moves with every
   * second's latencies (on a loaded machine the console's own calls outrank
   * an acquire), so this presses "Show all" whenever it is offered.
   */
  async revealOperation(name: string): Promise<void> {
    const showAll = this.page.getByRole('button', { name: /^Show all \d+ operations$/ });
    await expect(async () => {
      if (await showAll.isVisible()) await showAll.click();
      await expect(this.operationRow(name)).toBeVisible({ timeout: 1_000 });
    }).toPass();
  }

  /** Every row's cells as text, in the table's order (header excluded). */
  async rows(): Promise<string[][]> {
    // Read in one go: the table is redrawn every second.
    const bodyRows = this.latencyTable.getByRole('row').filter({ has: this.page.getByRole('cell') });
    return bodyRows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
  }

  async goto(window?: '1m' | '5m' | '15m'): Promise<void> {
    await this.page.goto(window ? `/metrics?window=${window}` : '/metrics');
  }

  chart(name: ChartName): Locator {
    return this.page.getByRole('figure', { name, exact: true });
  }

  /** The chart's drawing (a canvas inside a role=img element). */
  drawing(name: ChartName): Locator {
    return this.chart(name).getByRole('img');
  }

  /** The readout of one series (a group named by it): "12 /s, peak 30". */
  readout(chart: ChartName, series: string): Locator {
    return this.chart(chart).getByRole('group', { name: series, exact: true });
  }

  /** The series' latest value in the window, as shown (NaN for "—"). */
  async latest(chart: ChartName, series: string): Promise<number> {
    return toNumber(await this.readout(chart, series).getByText(/^([\d.,]+|—)$/).innerText());
  }

  /** The series' peak in the window, as shown (NaN for "—"). */
  async peak(chart: ChartName, series: string): Promise<number> {
    const m = /peak\s+([\d.,]+|—)/.exec(await this.readout(chart, series).getByText(/peak/).innerText());
    return toNumber(m?.[1] ?? '—');
  }

  /** Unix ms of the newest second the chart shows. */
  async lastAt(chart: ChartName): Promise<number> {
    return Number(await this.chart(chart).getAttribute('data-last-at'));
  }

  windowOption(label: '1 min' | '5 min' | '15 min'): Locator {
    return this.windowChoice.getByRole('radio', { name: label, exact: true });
  }
}

function toNumber(text: string): number {
  return /^[\d.,]+$/.test(text.trim()) ? Number(text.trim().replace(/,/g, '')) : Number.NaN;
}
