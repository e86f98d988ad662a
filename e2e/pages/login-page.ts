import type { Locator, Page } from '@playwright/test';

/** `/login`: paste a token, see its family and grants. */
export class LoginPage {
  readonly token: Locator;
  readonly signIn: Locator;
  readonly signedIn: Locator;
  readonly grants: Locator;
  readonly continue: Locator;
  readonly alert: Locator;

  constructor(readonly page: Page) {
    this.token = page.getByRole('textbox', { name: 'Token' });
    this.signIn = page.getByRole('button', { name: 'Sign in' });
    this.signedIn = page.getByRole('status').filter({ hasText: 'Signed in as' });
    this.grants = page.getByRole('list', { name: 'Grants' });
    this.continue = page.getByRole('link', { name: 'Continue to the console' });
    // Inside main: Next's route announcer is an alert too.
    this.alert = page.getByRole('main').getByRole('alert');
  }

  async goto(): Promise<void> {
    await this.page.goto('/login');
  }

  async login(token: string): Promise<void> {
    await this.token.fill(token);
    await this.signIn.click();
  }
}
