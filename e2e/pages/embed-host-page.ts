import type { FrameLocator, Locator, Page } from '@playwright/test';

export interface Framed {
  /** The iframe's title (its accessible name) and its name. */
  title: string;
  /** Absolute URL of the framed page. */
  src: string;
}

/**
 * A third-party page that frames console pages: served by a server of the
 * test's own on `origin` (`http://localhost:<port>`, another site than the
 * console's `127.0.0.1`; a loopback address, so the browser lets it frame a
 * loopback server). `serve` sets the HTML it answers with.
 */
export class EmbedHostPage {
  constructor(
    readonly page: Page,
    readonly origin: string,
    private readonly serve: (html: string) => void,
  ) {}

  /** Serve a page framing `frames` and open it. */
  async open(frames: Framed[]): Promise<void> {
    const iframes = frames
      .map((f) => `<iframe title="${escapeHtml(f.title)}" name="${escapeHtml(f.title)}" src="${escapeHtml(f.src)}" style="width:640px;height:320px;border:0"></iframe>`)
      .join('\n');
    this.serve(`<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Host page</title></head>
<body style="margin:24px;font-family:system-ui;background:#f4f4f5"><h1>Host page</h1>${iframes}</body></html>`);
    await this.page.goto(`${this.origin}/`);
  }

  iframe(title: string): Locator {
    return this.page.getByTitle(title, { exact: true });
  }

  frame(title: string): FrameLocator {
    return this.iframe(title).contentFrame();
  }
}

/** The embed widget inside a frame. */
export class EmbeddedInventory {
  readonly widget: Locator;
  readonly table: Locator;
  readonly status: Locator;
  readonly count: Locator;

  constructor(readonly frame: FrameLocator) {
    this.widget = frame.getByRole('region', { name: 'Inventory' });
    this.table = this.widget.getByRole('table', { name: 'Inventory' });
    this.status = this.widget.getByRole('status');
    this.count = this.widget.getByText(/^\d+ held/);
  }

  row(route: string): Locator {
    return this.table.getByRole('row').filter({ has: this.frame.getByRole('rowheader', { name: route, exact: true }) });
  }
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
