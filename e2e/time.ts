/**
 * The end-to-end tests' time factor: LEASEHOLD_TEST_TIME_FACTOR, else 2
 * under CI=true, else 1 (docs/design.md "Flake hunting"). Playwright's
 * timeouts are scaled by it (playwright.config.ts); a test whose scenario
 * runs on real time (a lock-delay it must catch, a TTL) scales its own
 * durations by it too.
 */
export const TIME_FACTOR = Number(process.env.LEASEHOLD_TEST_TIME_FACTOR ?? '') || (process.env.CI ? 2 : 1);
