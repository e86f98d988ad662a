/**
 * Builds the `leasehold` command line (cli/main.ts) to one ES module for
 * Node 20+: the SDK and commander bundled in, so the package's `bin` needs no
 * dependency at run time. `node scripts/build-cli.mjs OUTFILE` builds one
 * file (the CLI tests do); scripts/build-sdk.mjs calls `buildCli`.
 */

import { build } from 'esbuild';
import { chmodSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildCli(outfile) {
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'cli', 'main.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // commander is CommonJS: give its require() calls of Node built-ins a require.
    banner: { js: "#!/usr/bin/env node\nimport { createRequire as __leaseholdRequire } from 'node:module';\nconst require = __leaseholdRequire(import.meta.url);" },
    define: { LEASEHOLD_VERSION: JSON.stringify(version) },
    logLevel: 'warning',
  });
  chmodSync(outfile, 0o755);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: node scripts/build-cli.mjs OUTFILE');
    process.exit(2);
  }
  await buildCli(resolve(out));
}
