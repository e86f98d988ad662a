// The built SDK package (dist/sdk, from `npm run build`) in a third-party
// app: a scratch folder with `node_modules/leasehold` copied from dist/sdk,
// bundled by esbuild through the package's exports map, served from its own
// loopback origin, talking to a real Leasehold server on another origin with
// an embed token (so CORS is exercised). The server is this spec's own: the
// shared one cannot be told the scratch app's origin for LEASEHOLD_CORS_ORIGINS.
import { request as apiRequest } from '@playwright/test';
import { build, type BuildFailure, type Metafile } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, sep } from 'node:path';
import { ROOT, SERVER, spawnListening, stopServer, type ServerProcess } from '../server/testing/process';
import { expect, test as base, STORE_INDEPENDENT } from './fixtures';
import { InventoryWidgetPage } from './pages/inventory-widget-page';

const SDK = join(ROOT, 'dist', 'sdk');
const SELECTOR = 'lease://acme/renderers/*';

interface ScratchApp {
  /** The scratch app's dir (package.json, main.tsx, node_modules/leasehold). */
  dir: string;
  /** Where the static server serves the app: another origin than the API's. */
  origin: string;
  apiUrl: string;
  adminToken: string;
  metafile: Metafile;
  /** The bundled main.js. */
  bundle: string;
}

interface Held {
  route: string;
  sessionId: string;
  leaseId: string;
  fencingToken: number;
}

/** Seeding through the API with the admin token; what it opens is closed after the test. */
interface ScratchApi {
  createEmbedToken(selector: string): Promise<string>;
  acquire(route: string, ownerId: string): Promise<Held>;
  release(held: Held): Promise<void>;
}

const test = base.extend<{ scratchApi: ScratchApi; widgetPage: InventoryWidgetPage }, { scratch: ScratchApp }>({
  scratch: [
    async ({}, use) => {
      for (const [path, what] of [
        [join(SDK, 'package.json'), 'the SDK package (dist/sdk)'],
        [SERVER, 'the server (dist/server.mjs)'],
      ]) {
        if (!existsSync(path)) throw new Error(`${what} is not built: run \`npm run build\` first`);
      }
      const tmp = mkdtempSync(join(tmpdir(), 'leasehold-sdk-widget-'));
      const dir = join(tmp, 'app');
      const dataDir = join(tmp, 'data');
      mkdirSync(dataDir);
      const statics = await serveStatic(join(dir, 'public'));
      const adminToken = `lh_e2e_widget_${randomBytes(16).toString('hex')}`;
      let server: ServerProcess | undefined;
      try {
        server = await spawnListening('leasehold', [SERVER], {
          LEASEHOLD_DATA_DIR: dataDir,
          LEASEHOLD_BOOTSTRAP_TOKEN: adminToken,
          LEASEHOLD_CORS_ORIGINS: statics.origin,
          NEXT_TELEMETRY_DISABLED: '1',
        });
        writeScratchApp(dir, server.url);
        const result = await build({
          absWorkingDir: dir,
          entryPoints: ['main.tsx'],
          outdir: 'public/out',
          bundle: true,
          format: 'esm',
          platform: 'browser',
          target: 'es2022',
          jsx: 'automatic',
          define: { 'process.env.NODE_ENV': '"production"' },
          metafile: true,
          logLevel: 'silent',
        });
        const bundle = readFileSync(join(dir, 'public', 'out', 'main.js'), 'utf8');
        await use({ dir, origin: statics.origin, apiUrl: server.url, adminToken, metafile: result.metafile, bundle });
      } finally {
        if (server) await stopServer(server.proc);
        await statics.close();
        rmSync(tmp, { recursive: true, force: true });
      }
    },
    { scope: 'worker', timeout: 60_000 },
  ],

  scratchApi: async ({ scratch }, use) => {
    const http = await apiRequest.newContext({ baseURL: scratch.apiUrl, extraHTTPHeaders: { Authorization: `Bearer ${scratch.adminToken}` } });
    const sessions: string[] = [];
    const tokens: string[] = [];
    const post = async (path: string, body: object): Promise<Record<string, any>> => {
      const res = await http.post(path, { data: body });
      expect(res.ok(), `POST ${path}: ${res.status()} ${await res.text()}`).toBe(true);
      return (await res.json()) as Record<string, any>;
    };
    await use({
      async createEmbedToken(selector) {
        const answer = await post('/api/v1/embed-tokens', { selector, ttl_ms: 600_000 });
        tokens.push(answer.token_id);
        return answer.token as string;
      },
      async acquire(route, ownerId) {
        const opened = await post('/api/v1/sessions', { owner_id: ownerId, ttl_ms: 60_000 });
        const sessionId = opened.session.session_id as string;
        sessions.push(sessionId);
        const { lease } = await post(`${leasePath(route)}/acquire`, { session_id: sessionId, request_id: randomUUID(), ttl_ms: 60_000 });
        return { route, sessionId, leaseId: lease.lease_id, fencingToken: lease.fencing_token };
      },
      async release(held) {
        await post(`${leasePath(held.route)}/release`, {
          session_id: held.sessionId,
          request_id: randomUUID(),
          lease_id: held.leaseId,
          fencing_token: held.fencingToken,
        });
      },
    });
    for (const id of sessions) await http.post('/api/v1/sessions/close', { data: { session_id: id } });
    for (const id of tokens) await http.delete(`/api/v1/tokens/${encodeURIComponent(id)}`);
    await http.dispose();
  },

  widgetPage: async ({ page, scratch }, use) => {
    await use(new InventoryWidgetPage(page, `${scratch.origin}/`));
  },
});

test('the app resolves leasehold/client, leasehold/react and leasehold/widget.css through the exports map, with one copy of the client', STORE_INDEPENDENT, async ({
  scratch,
}) => {
  const inputs = Object.keys(scratch.metafile.inputs);
  expect(inputs).toEqual(
    expect.arrayContaining(['node_modules/leasehold/react/index.js', 'node_modules/leasehold/client/index.js', 'node_modules/leasehold/widget.css']),
  );
  expect(inputs.filter((p) => /\blib\/(client|react)\//.test(p)), 'nothing from the sources, only the package').toEqual([]);
  // String literals survive minification and renaming: each appears once when leasehold/react shares leasehold/client.
  expect(scratch.bundle.match(/"LeaseholdError"/g), 'one LeaseholdError class').toHaveLength(1);
  expect(scratch.bundle.match(/no fetch implementation/g), 'one client transport').toHaveLength(1);

  // A path the exports map does not list is refused: resolution goes through the map.
  const failure = await build({
    absWorkingDir: scratch.dir,
    stdin: { contents: "import 'leasehold/client/index.js';", resolveDir: scratch.dir },
    bundle: true,
    write: false,
    logLevel: 'silent',
  }).then(
    () => undefined,
    (e: BuildFailure) => e,
  );
  expect(failure?.errors.flatMap((e) => e.notes.map((n) => n.text)).join('\n')).toContain('is not exported by package "leasehold"');
});

test('the package type-checks in the app under NodeNext and renders the widget on a Node server', STORE_INDEPENDENT, async ({ scratch }) => {
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(scratch.dir, 'tsconfig.json')], { encoding: 'utf8' });
  } catch (e) {
    throw new Error(`tsc failed on the scratch app:\n${(e as { stdout?: string }).stdout ?? String(e)}`);
  }
  const ssr = JSON.parse(execFileSync(process.execPath, ['ssr-check.mjs'], { cwd: scratch.dir, encoding: 'utf8' })) as Record<string, unknown>;
  expect(ssr).toEqual({ connecting: true, region: true });
});

test('the widget from the built package shows leases live across origins, in light and dark', async ({ widgetPage, scratchApi: api, consoleErrors, scratch }, testInfo) => {
  const shots = join(testInfo.project.outputDir, 'screenshots');
  const page = widgetPage.page;
  expect(new URL(scratch.apiUrl).origin, 'the API is on another origin than the page').not.toBe(scratch.origin);

  await widgetPage.goto(await api.createEmbedToken(SELECTOR));
  await expect(widgetPage.status).toHaveText('Live');
  await expect(widgetPage.table.getByRole('cell')).toHaveText(['No leases held.']);
  await expect(widgetPage.count).toHaveText('0 held');

  // Outside the selector: must never show.
  await api.acquire('lease://acme/encoders/clip-9', 'encoder-1');
  const doc = await api.acquire('lease://acme/renderers/doc-1', 'renderer-7');
  const frame = await api.acquire('lease://acme/renderers/frame-0042', 'renderer-3');

  const docRow = widgetPage.row(doc.route);
  await expect(docRow.getByRole('cell')).toHaveText(['renderer-7', String(doc.fencingToken), /^(1m 00s|\d{1,2}s)$/]);
  await expect(widgetPage.row(frame.route).getByRole('cell')).toHaveText(['renderer-3', String(frame.fencingToken), /^(1m 00s|\d{1,2}s)$/]);
  await expect(widgetPage.count).toHaveText('2 held');
  await expect(widgetPage.table.getByRole('rowheader')).toHaveText([doc.route, frame.route]);

  // The countdown ticks on its own.
  const expiry = docRow.getByRole('cell').nth(2);
  const before = await expiry.textContent();
  await expect(expiry).not.toHaveText(before ?? '');

  await expect(widgetPage.widget).toHaveCSS('background-color', 'rgb(255, 255, 255)');
  await page.screenshot({ path: join(shots, 'sdk-widget-light.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await expect(widgetPage.widget).toHaveCSS('background-color', 'rgb(24, 24, 27)');
  await page.screenshot({ path: join(shots, 'sdk-widget-dark.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });

  await api.release(doc);
  await expect(docRow).toHaveCount(0);
  await expect(widgetPage.count).toHaveText('1 held');
  await expect(widgetPage.row(frame.route)).toBeVisible();
  await expect(widgetPage.status).toHaveText('Live');

  expect(consoleErrors).toEqual([]);
});

test('the widget says why when the server refuses its token', async ({ widgetPage }) => {
  await widgetPage.goto('lh_not_a_real_token_0000000000000000');
  await expect(widgetPage.status).toHaveText(/^Error: \S.*\(correlation id \S+\)$/);
  await expect(widgetPage.table.getByRole('cell')).toHaveText([/token was refused/]);
  await expect(widgetPage.count).toHaveCount(0);
});

function leasePath(route: string): string {
  return `/api/v1/leases/${route.slice('lease://'.length)}`;
}

/** The scratch app: the built package copied in, React linked from this project, no other CSS. */
function writeScratchApp(dir: string, apiUrl: string): void {
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '@types'), { recursive: true });
  mkdirSync(join(dir, 'public'), { recursive: true });
  cpSync(SDK, join(modules, 'leasehold'), { recursive: true });
  for (const name of ['react', 'react-dom', '@types/react', '@types/react-dom']) {
    symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
  }
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'scratch-widget-app', private: true, type: 'module' }, null, 2),
    'main.tsx': `import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { InventoryWidget } from 'leasehold/react';
import 'leasehold/widget.css';

// The embed token travels in the fragment, as on the console's embed page.
const token = new URLSearchParams(location.hash.slice(1)).get('token') ?? undefined;

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <main className="page">
      <h1>Render farm</h1>
      <InventoryWidget baseUrl=${JSON.stringify(apiUrl)} token={token} selector=${JSON.stringify(SELECTOR)} />
    </main>
  </StrictMode>,
);
`,
    // Compiled by tsc only: the declarations as a consumer sees them.
    'types-check.ts': `import { LeaseholdClient, LeaseholdError, isLeaseholdError, type LeaseView } from 'leasehold/client';
import { InventoryWidget, LeaseholdProvider, useLeaseInventory, useLeaseholdClient, type InventoryWidgetProps, type LeaseInventory } from 'leasehold/react';

const client = new LeaseholdClient({ baseUrl: 'http://127.0.0.1:3000', token: 'secret' });
export const props: InventoryWidgetProps = { selector: 'lease://acme/renderers/*', client, theme: 'dark' };
// @ts-expect-error the selector is required
export const missing: InventoryWidgetProps = { client };
export function routes(inventory: LeaseInventory): string[] {
  const items: readonly LeaseView[] = inventory.items;
  return items.map((lease) => lease.route);
}
export const code = (e: unknown): string | undefined => (isLeaseholdError(e) ? e.code : e instanceof LeaseholdError ? 'never' : undefined);
export const exported = [InventoryWidget, LeaseholdProvider, useLeaseInventory, useLeaseholdClient];
`,
    'tsconfig.json': JSON.stringify(
      {
        compilerOptions: {
          target: 'es2022',
          lib: ['es2022', 'esnext.disposable', 'dom', 'dom.iterable'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          jsx: 'react-jsx',
          strict: true,
          noEmit: true,
          types: [],
        },
        files: ['main.tsx', 'types-check.ts'],
      },
      null,
      2,
    ),
    'ssr-check.mjs': `import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { LeaseholdClient } from 'leasehold/client';
import { InventoryWidget } from 'leasehold/react';

// A server render opens nothing: the observer starts in an effect, in the browser.
const client = new LeaseholdClient({ baseUrl: 'http://127.0.0.1:9' });
const html = renderToString(createElement(InventoryWidget, { selector: 'lease://acme/renderers/*', client }));
console.log(JSON.stringify({
  connecting: html.includes('Connecting…'),
  region: /<section class="lh-widget"[^>]*data-state="connecting"/.test(html),
}));
`,
    'public/index.html': `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Render farm</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="/out/main.css" />
    <style>
      body { margin: 0; font-family: Georgia, serif; background: #f8f7f4; color: #222; }
      .page { max-width: 760px; margin: 0 auto; padding: 32px 24px; }
      h1 { font-weight: 400; margin: 0 0 20px; }
      @media (prefers-color-scheme: dark) { body { background: #0b0b0d; color: #eee; } }
    </style>
  </head>
  <body>
    <div id="root"></div>
    <script type="module" src="/out/main.js"></script>
  </body>
</html>
`,
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** A tiny static file server on a free loopback port: the scratch app's own origin. */
async function serveStatic(root: string): Promise<{ origin: string; close(): Promise<void> }> {
  const types: Record<string, string> = {
    '.html': 'text/html; charset=utf-8',
    '.js': 'text/javascript; charset=utf-8',
    '.css': 'text/css; charset=utf-8',
    '.map': 'application/json',
  };
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://scratch').pathname);
    const file = normalize(join(root, path === '/' ? 'index.html' : path));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-store' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
