import { defineConfig, devices } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Waits scale under CI=true, as the unit tests' do (server/testing/wait.ts; docs/design.md "Flake hunting").
import { TIME_FACTOR } from './e2e/time';

/**
 * Asks the OS for a free port. Synchronous, because the config is evaluated
 * by the runner and again by every worker: the first evaluation stores the
 * port (and the data dir) in process.env, which workers inherit, so all of
 * them talk to the one server the runner started.
 */
function freePort(): string {
  return execFileSync(
    process.execPath,
    ['-e', "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"],
    { encoding: 'utf8' },
  ).trim();
}

process.env.LEASEHOLD_E2E_PORT ??= freePort();
// The shared server's bootstrap root token, known to the tests (e2e/fixtures.ts).
process.env.LEASEHOLD_E2E_ADMIN_TOKEN ??= `lh_e2e_admin_${randomBytes(16).toString('hex')}`;
if (!process.env.LEASEHOLD_E2E_DATA_DIR) {
  // Only the runner gets here (workers inherit the variable). It removes the
  // directory on exit, after the web server has been stopped.
  const dataDir = mkdtempSync(join(tmpdir(), 'leasehold-e2e-'));
  process.env.LEASEHOLD_E2E_DATA_DIR = dataDir;
  process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
}

/**
 * LEASEHOLD_E2E_STORE=postgres: the second run of `npm test`. Two servers on
 * one fresh PostgreSQL database: the console (and `baseURL`) on instance A,
 * and instance B (API only) for every API call the tests make
 * (LEASEHOLD_E2E_API_URL, read by e2e/fixtures.ts), so what the console
 * shows reached it through the shared store and its notifications.
 */
const postgres = process.env.LEASEHOLD_E2E_STORE === 'postgres';
if (postgres) {
  process.env.LEASEHOLD_E2E_PORT_B ??= freePort();
  if (!process.env.LEASEHOLD_E2E_DATABASE_URL) {
    const db = execFileSync(process.execPath, ['scripts/test-database.mjs', 'create'], { encoding: 'utf8' }).trim();
    process.env.LEASEHOLD_E2E_DATABASE_URL = db;
    const dataDirB = mkdtempSync(join(tmpdir(), 'leasehold-e2e-b-'));
    process.env.LEASEHOLD_E2E_DATA_DIR_B = dataDirB;
    process.on('exit', () => {
      rmSync(dataDirB, { recursive: true, force: true });
      execFileSync(process.execPath, ['scripts/test-database.mjs', 'drop', db]);
    });
  }
  process.env.LEASEHOLD_E2E_API_URL ??= `http://127.0.0.1:${process.env.LEASEHOLD_E2E_PORT_B}`;
}

const port = process.env.LEASEHOLD_E2E_PORT;
const baseURL = `http://127.0.0.1:${port}`;

const serverEnv = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  LEASEHOLD_BOOTSTRAP_TOKEN: process.env.LEASEHOLD_E2E_ADMIN_TOKEN!,
  // Short heartbeats, so a silent stream is noticed within the test's patience.
  LEASEHOLD_FEED_HEARTBEAT_MS: '5000',
  // Stop at once when the run ends (no balancer to drain from).
  LEASEHOLD_DRAIN_MS: '0',
  NEXT_TELEMETRY_DISABLED: '1',
  ...(postgres ? { LEASEHOLD_DATABASE_URL: process.env.LEASEHOLD_E2E_DATABASE_URL! } : {}),
};
const server = (env: Record<string, string>, url: string) => ({
  // The server's own command, not `npm start`: killing npm would orphan the server.
  command: 'node dist/server.mjs',
  url: `${url}/api/v1/health`,
  env: { ...serverEnv, ...env },
  reuseExistingServer: false,
  timeout: 60_000,
  stdout: 'pipe' as const,
  stderr: 'pipe' as const,
  gracefulShutdown: { signal: 'SIGTERM' as const, timeout: 5_000 },
});
const serverA = server({ PORT: port!, LEASEHOLD_DATA_DIR: process.env.LEASEHOLD_E2E_DATA_DIR! }, baseURL);

/**
 * Which run this is (scripts/test.sh runs the SQLite and PostgreSQL passes
 * side by side, then the time-budget test alone): each run has its own JSON
 * report and output folder, so runs at once never clear each other's.
 */
const run = process.env.LEASEHOLD_E2E_RUN ?? (postgres ? 'postgres' : 'sqlite');


export default defineConfig({
  testDir: 'e2e',
  outputDir: `test-results/${run}`,
  fullyParallel: false,
  workers: 1,
  forbidOnly: !!process.env.CI,
  // A test of the page itself runs once, in the SQLite pass (e2e/fixtures.ts STORE_INDEPENDENT).
  grepInvert: postgres ? /@store-independent/ : undefined,
  retries: 0,
  timeout: 30_000 * TIME_FACTOR,
  expect: { timeout: 10_000 * TIME_FACTOR },
  reporter: [['list'], ['json', { outputFile: `playwright-report/results-${run}.json` }]],
  use: {
    baseURL,
    colorScheme: 'light',
    // A failed test keeps its trace (DOM snapshots of every action) but no
    // screencast: recording one frame stream per test made Chromium's GPU and
    // browser processes a third of the run's CPU (docs/design.md "How the
    // CI time splits"); the failure's own screenshot is still taken.
    trace: { mode: 'retain-on-failure', screenshots: false, snapshots: true },
    screenshot: 'only-on-failure',
    launchOptions: {
      // Debian's chromium; Playwright never downloads a browser here.
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  projects: [{ name: 'chromium', use: { ...devices['Desktop Chrome'] } }],
  webServer: postgres
    ? [serverA, server({ PORT: process.env.LEASEHOLD_E2E_PORT_B!, LEASEHOLD_DATA_DIR: process.env.LEASEHOLD_E2E_DATA_DIR_B!, LEASEHOLD_CONSOLE: 'off' }, process.env.LEASEHOLD_E2E_API_URL!)]
    : serverA,
});
