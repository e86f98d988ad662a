import { expect, type Locator, type Page } from '@playwright/test';

/** The console's `/tokens` page: create, list and revoke tokens, make embed tokens. */
export class TokensPage {
  readonly heading: Locator;
  readonly nameBox: Locator;
  readonly grantsBox: Locator;
  readonly createButton: Locator;
  readonly secret: Locator;
  readonly secretValue: Locator;
  readonly copySecret: Locator;
  readonly doneButton: Locator;
  readonly table: Locator;
  readonly revokeDialog: Locator;
  readonly embedSelector: Locator;
  readonly embedTtl: Locator;
  readonly makeEmbedButton: Locator;
  readonly embedToken: Locator;
  readonly snippet: Locator;
  readonly copySnippet: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { level: 1, name: 'Tokens' });
    const create = page.getByRole('region', { name: 'Create a token' });
    this.nameBox = create.getByRole('textbox', { name: 'Name' });
    this.grantsBox = create.getByRole('textbox', { name: 'Grants' });
    this.createButton = create.getByRole('button', { name: 'Create token' });
    this.secret = create.getByRole('region', { name: /^Token “.+” created$/ });
    this.secretValue = this.secret.getByRole('textbox', { name: 'Token secret' });
    this.copySecret = this.secret.getByRole('button', { name: 'Copy token', exact: true });
    this.doneButton = this.secret.getByRole('button', { name: 'Done, I have copied it' });
    this.table = page.getByRole('table', { name: 'Tokens' });
    this.revokeDialog = page.getByRole('dialog', { name: 'Revoke token' });
    const embed = page.getByRole('region', { name: 'Make embed token' });
    this.embedSelector = embed.getByRole('textbox', { name: 'Selector' });
    this.embedTtl = embed.getByRole('spinbutton', { name: 'TTL (minutes)' });
    this.makeEmbedButton = embed.getByRole('button', { name: 'Make embed token' });
    this.embedToken = embed.getByRole('textbox', { name: 'Embed token' });
    this.snippet = embed.getByRole('textbox', { name: 'Iframe snippet' });
    this.copySnippet = embed.getByRole('button', { name: 'Copy snippet' });
  }

  async goto(): Promise<void> {
    await this.page.goto('/tokens');
  }

  async create(name: string, grants: string[]): Promise<void> {
    await this.nameBox.fill(name);
    await this.grantsBox.fill(grants.join('\n'));
    await this.createButton.click();
  }

  /** The list row of the token named `name`. */
  row(name: string): Locator {
    return this.table.getByRole('row').filter({ has: this.page.getByRole('button', { name: `Revoke ${name}`, exact: true }) });
  }

  /**
   * Revokes and waits until the dialog has closed: while the revoke is in
   * flight the modal keeps the rest of the page inert, and a `fill` there
   * types nowhere (Playwright checks a field is editable, not that it can
   * take focus), so the next form would be submitted empty.
   */
  async revoke(name: string): Promise<void> {
    await this.row(name).getByRole('button', { name: `Revoke ${name}`, exact: true }).click();
    await this.revokeDialog.getByRole('button', { name: 'Revoke token' }).click();
    await expect(this.revokeDialog, `the revoke of ${name} has ended`).toBeHidden();
    await expect(this.row(name), `${name} has left the list`).toHaveCount(0);
  }

  async makeEmbedToken(selector: string, ttlMinutes: number): Promise<void> {
    await this.embedSelector.fill(selector);
    await this.embedTtl.fill(String(ttlMinutes));
    await this.makeEmbedButton.click();
  }
}
