/**
 * Builds unit test files into plain ES modules for scripts/test-unit.sh, so
 * node's runner loads JavaScript instead of compiling TypeScript in every
 * test process: through `node --import tsx` a test process spent about
 * 1.5 s of CPU loading the harness and the engine, as a bundle 0.5 s
 * (docs/design.md "How the CI time splits").
 *
 * `node scripts/build-tests.mjs OUTDIR FILE…` writes OUTDIR/<FILE without
 * .ts/.tsx>.mjs for each FILE, with the code they share in chunks. OUTDIR
 * must lie inside the repository, so the bundles find node_modules as the
 * sources do. Packages stay external; the project's own modules (and the
 * tsconfig `paths` aliases) are bundled. Each module's `import.meta.url`,
 * `.filename` and `.dirname` are its source file's, so a test that finds a
 * file beside itself still does. Source maps are linked: run with
 * `--enable-source-maps` and a failure's stack names the .ts lines.
 */

import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every module keeps its source location in `import.meta` (see above). */
const sourceLocation = {
  name: 'source-location',
  setup(b) {
    b.onLoad({ filter: /\.tsx?$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      let contents = await readFile(args.path, 'utf8');
      if (contents.includes('import.meta')) {
        contents = contents
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll('import.meta.filename', JSON.stringify(args.path))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)));
      }
      return { contents, loader: extname(args.path).slice(1) };
    });
  },
};

export async function buildTests(outdir, files) {
  await build({
    absWorkingDir: root,
    entryPoints: files.map((f) => resolve(root, f)),
    outdir: resolve(outdir),
    outbase: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    plugins: [sourceLocation],
    logLevel: 'warning',
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [outdir, ...files] = process.argv.slice(2);
  if (!outdir || files.length === 0) {
    console.error('usage: node scripts/build-tests.mjs OUTDIR FILE…');
    process.exit(2);
  }
  await buildTests(outdir, files);
}
