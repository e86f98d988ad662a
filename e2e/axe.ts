import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { expect, type Page } from '@playwright/test';

/**
 * axe-core (already a devDependency, docs/console.md "Accessibility"), run in
 * the page with the WCAG 2.0 and 2.1 A/AA rules. Its source is evaluated
 * through the DevTools protocol rather than added as a <script>, so the
 * console's nonce-based CSP does not refuse it.
 */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] as const;

interface AxeResult {
  violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown[]; failureSummary?: string }> }>;
}

/** Every WCAG A/AA violation on the page as it is now, one line per element (empty when clean). */
export async function axeViolations(page: Page, label: string): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async (tags) => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<AxeResult> } }).axe;
    return axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
  }, [...WCAG_TAGS]);
  return result.violations.flatMap((v) => v.nodes.map((n) => `${label}: ${v.id} (${v.help}) at ${n.target.join(' ')}: ${(n.failureSummary ?? '').replace(/\s+/g, ' ')}`));
}

export type Theme = 'light' | 'dark';
export const THEMES: readonly Theme[] = ['light', 'dark'];

/**
 * Switch the reader's colour-scheme preference, which the console's pre-paint
 * script and the embed widget follow on the next load, and check the page
 * took it (so a dark pass really looked at dark colours). Call before
 * navigating: a load paints in the final theme with no transition running.
 */
export async function preferTheme(page: Page, theme: Theme): Promise<void> {
  await page.emulateMedia({ colorScheme: theme });
}

export async function expectTheme(page: Page, theme: Theme): Promise<void> {
  if (theme === 'dark') await expect(page.locator('html')).toHaveClass(/\bdark\b/);
  else await expect(page.locator('html')).not.toHaveClass(/\bdark\b/);
}
