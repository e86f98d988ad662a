import type { Locator, Page } from '@playwright/test';

/** The lease detail page `/leases/{realm}/{area}/{resource}` and its guarded operator dialogs. */
export class LeaseDetailPage {
  readonly feed: Locator;
  readonly holder: Locator;
  readonly checkpoint: Locator;
  /** The "Applying policy" panel: the route's policy and bounds, with a link to the policies page. */
  readonly applyingPolicy: Locator;
  readonly checkpointValue: Locator;
  readonly auditTrail: Locator;
  readonly forceReleaseButton: Locator;
  readonly revokeButton: Locator;
  readonly forceReleaseDialog: Locator;
  readonly revokeDialog: Locator;
  readonly askButton: Locator;
  readonly askDialog: Locator;
  /** The badges beside the heading: Held or Free or "Lock-delay N s", "Release requested", "N waiting". */
  readonly statusBadges: Locator;
  /** The success notice after an operator action. */
  readonly notice: Locator;
  /** The "Lease history" timeline, its text list of tenures, and the panel hover and focus fill. */
  readonly history: Locator;
  readonly tenures: Locator;
  readonly tenureDetails: Locator;

  constructor(readonly page: Page) {
    this.feed = page.getByRole('status', { name: 'Feed' });
    this.holder = page.getByRole('region', { name: 'Holder' });
    this.checkpoint = page.getByRole('region', { name: 'Checkpoint' });
    this.applyingPolicy = page.getByRole('region', { name: 'Applying policy' });
    this.checkpointValue = this.checkpoint.getByRole('figure', { name: 'Value' });
    this.auditTrail = page.getByRole('table', { name: 'Audit trail' });
    this.forceReleaseButton = page.getByRole('button', { name: 'Force release', exact: true });
    this.revokeButton = page.getByRole('button', { name: 'Revoke', exact: true });
    this.forceReleaseDialog = page.getByRole('dialog', { name: 'Force release lease' });
    this.revokeDialog = page.getByRole('dialog', { name: 'Revoke lease' });
    this.askButton = page.getByRole('button', { name: 'Ask holder to release' });
    this.askDialog = page.getByRole('dialog', { name: 'Ask holder to release' });
    this.statusBadges = page.getByRole('list', { name: 'Route status' }).getByRole('listitem');
    this.notice = page.getByRole('status').filter({ hasText: /^Lease (force-released|revoked)/ });
    this.history = page.getByRole('figure', { name: 'Lease history' });
    this.tenures = this.history.getByRole('list', { name: 'Tenures' }).getByRole('listitem');
    this.tenureDetails = this.history.getByRole('status');
  }

  async goto(route: string): Promise<void> {
    await this.page.goto(`/leases/${route.slice('lease://'.length)}`);
  }

  /** A tenure's bar on the timeline, by (the start of) its description: "owner, token N; from …; how it ended; …". */
  tenureBar(name: RegExp): Locator {
    return this.history.getByRole('button', { name });
  }

  /** The shaded lock-delay gaps on the timeline. */
  lockDelayGaps(): Locator {
    return this.history.getByRole('img', { name: /^Lock-delay after/ });
  }

  heading(route: string): Locator {
    return this.page.getByRole('heading', { level: 1, name: route });
  }

  /**
   * The value of a field of the holder's lease, by its label ("Fencing token",
   * "Owner", …): each <dd> is labelled by its <dt> (Playwright computes no
   * accessible name for role definition, so by label rather than by role).
   */
  field(label: string): Locator {
    return this.holder.getByLabel(label, { exact: true });
  }

  checkpointField(label: string): Locator {
    return this.checkpoint.getByLabel(label, { exact: true });
  }

  /** The audit rows that contain all of `texts`. */
  auditRow(...texts: string[]): Locator {
    let rows = this.auditTrail.getByRole('row');
    for (const t of texts) rows = rows.filter({ hasText: t });
    return rows;
  }

  reason(dialog: Locator): Locator {
    return dialog.getByRole('textbox', { name: 'Reason' });
  }

  resourceConfirmation(dialog: Locator): Locator {
    return dialog.getByRole('textbox', { name: 'Type the resource name to confirm' });
  }

  closeSessionCheckbox(dialog: Locator): Locator {
    return dialog.getByRole('checkbox', { name: "Also close the holder's session" });
  }

  skipLockDelay(dialog: Locator): Locator {
    return dialog.getByRole('checkbox', { name: 'Skip lock-delay' });
  }

  /** The revoke dialog's list of the other leases that closing the session would end, with its pager. */
  sessionPreview(dialog: Locator): Locator {
    return dialog.getByRole('region', { name: 'Other leases of this session' });
  }

  confirmForceRelease(): Locator {
    return this.forceReleaseDialog.getByRole('button', { name: 'Confirm force release' });
  }

  confirmRevoke(): Locator {
    return this.revokeDialog.getByRole('button', { name: 'Confirm revoke' });
  }

  cancel(dialog: Locator): Locator {
    return dialog.getByRole('button', { name: 'Cancel' });
  }

  alert(dialog: Locator): Locator {
    return dialog.getByRole('alert');
  }
}
