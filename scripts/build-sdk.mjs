/**
 * Builds dist/sdk/, the installable `leasehold` package (docs/sdk.md "Installing it"):
 *
 *   leasehold/client      lib/client/index.ts bundled to one ES module
 *   leasehold/react       lib/react/index.ts, importing react and leasehold/client
 *   leasehold/widget.css  the widget's stylesheet (and widget.css.d.ts)
 *   bin `leasehold`       cli.mjs, the command line (docs/cli.md); also
 *                         copied to dist/cli.mjs for use inside the project
 *
 * with its README, LICENSE and third-party notices. esbuild writes the
 * JavaScript; tsc (tsconfig.sdk.json) writes the declarations under types/.
 * Run with `npm run build:sdk`; `npm pack dist/sdk` makes the tarball, and
 * `npm publish dist/sdk` publishes it.
 */

import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCli } from './build-cli.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'sdk');
const clientDir = join(root, 'lib', 'client');
const reactDir = join(root, 'lib', 'react');
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/**
 * The package's `files`: every entry this script writes to dist/sdk (a
 * folder with a trailing slash), and nothing else. npm adds package.json.
 */
const SHIPPED = ['client/', 'react/', 'types/', 'widget.css', 'widget.css.d.ts', 'cli.mjs', 'README.md', 'LICENSE', 'THIRD-PARTY-NOTICES.md'];

/** `files` must cover exactly what was built: a new output not listed would silently stay out of the tarball. */
function checkShipped() {
  const built = readdirSync(out, { withFileTypes: true }).map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).filter((n) => n !== 'package.json').sort();
  const listed = [...SHIPPED].sort();
  if (JSON.stringify(built) !== JSON.stringify(listed)) {
    console.error(`build-sdk: dist/sdk holds ${built.join(', ')}, but files lists ${listed.join(', ')}`);
    process.exit(1);
  }
}

const started = Date.now();
rmSync(out, { recursive: true, force: true });

const common = {
  absWorkingDir: root,
  bundle: true,
  format: 'esm',
  // Neutral: the client runs in browsers and in Node 20+, so a Node built-in
  // (or a browser-only shim) reaching the bundle fails the build.
  platform: 'neutral',
  mainFields: ['module', 'main'],
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
};

// eventsource-parser is bundled into leasehold/client rather than listed as a
// dependency: it is small (about 3 KB) with no dependencies of its own, the
// SSE framing it parses is part of the feed's correctness, so the package
// ships the exact version its tests ran against, and a package without
// dependencies installs anywhere (air-gapped, or copied as a folder). Its MIT
// notice travels in THIRD-PARTY-NOTICES.md; its types never appear in ours
// (checked below).
await build({ ...common, entryPoints: [join(clientDir, 'index.ts')], outfile: join(out, 'client', 'index.js') });

/**
 * lib/react reaches the client only through its index, which becomes the
 * external `leasehold/client`: an app then holds one copy of the client, and
 * `instanceof LeaseholdError` holds across both entry points.
 */
const clientAsPackage = {
  name: 'client-as-package',
  setup(b) {
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      if (target === clientDir || target === join(clientDir, 'index') || target === join(clientDir, 'index.ts')) {
        return { path: 'leasehold/client', external: true };
      }
      if (!target.startsWith(reactDir + sep)) {
        return { errors: [{ text: `lib/react may import only react and '../client' (the client's index), not '${args.path}'` }] };
      }
      return undefined;
    });
  },
};

await build({
  ...common,
  entryPoints: [join(reactDir, 'index.ts')],
  outfile: join(out, 'react', 'index.js'),
  jsx: 'automatic',
  external: ['react', 'react/*', 'react-dom', 'react-dom/*'],
  plugins: [clientAsPackage],
  // Bundling drops module directives; the entry keeps one, so a React Server
  // Components app (Next.js App Router) may import the widget from a server page.
  banner: { js: "'use client';" },
});

copyFileSync(join(reactDir, 'widget.css'), join(out, 'widget.css'));
// A stylesheet import (`import 'leasehold/widget.css'`) type-checks under
// NodeNext only if the subpath names declarations: this one says it exports nothing.
writeFileSync(join(out, 'widget.css.d.ts'), '/** The inventory widget\'s stylesheet: import it for its side effect. */\nexport {};\n');

await buildCli(join(out, 'cli.mjs'));
copyFileSync(join(out, 'cli.mjs'), join(root, 'dist', 'cli.mjs'));
chmodSync(join(root, 'dist', 'cli.mjs'), 0o755);
copyFileSync(join(root, 'LICENSE'), join(out, 'LICENSE'));
copyFileSync(join(root, 'docs', 'package-readme.md'), join(out, 'README.md'));

const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.sdk.json')], {
  cwd: root,
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.error('build-sdk: tsc failed to emit the declarations');
  process.exit(1);
}
fixDeclarationSpecifiers(join(out, 'types'));

/** The notice for a bundled package: its version, where it lives, its license text. */
function bundledNotice(name, url, where) {
  const dir = join(root, 'node_modules', name);
  const license = readFileSync(join(dir, 'LICENSE'), 'utf8').trim();
  const version = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
  return `${where} bundles ${name} ${version} (${url}):\n\n\`\`\`\n${license}\n\`\`\`\n`;
}
writeFileSync(
  join(out, 'THIRD-PARTY-NOTICES.md'),
  `# Third-party notices\n\n${bundledNotice('eventsource-parser', 'https://github.com/rexxars/eventsource-parser', '`leasehold/client` (and the `leasehold` command)')}\n${bundledNotice('commander', 'https://github.com/tj/commander.js', 'The `leasehold` command')}`,
);

const pkg = {
  name: 'leasehold',
  version: rootPkg.version,
  description: 'Leasehold SDK: the TypeScript client for fenced, time-bounded leases, and a React hook and live inventory widget.',
  license: 'MIT',
  type: 'module',
  engines: rootPkg.engines,
  sideEffects: ['*.css'],
  bin: { leasehold: './cli.mjs' },
  // Exactly what this script writes next to package.json (checked below).
  files: SHIPPED,
  exports: {
    './client': { types: './types/client/index.d.ts', default: './client/index.js' },
    './react': { types: './types/react/index.d.ts', default: './react/index.js' },
    './widget.css': { types: './widget.css.d.ts', default: './widget.css' },
    './package.json': './package.json',
  },
  // Optional: a Node worker that imports only leasehold/client needs no React.
  peerDependencies: { react: '>=18' },
  peerDependenciesMeta: { react: { optional: true } },
  // Publishable as built (`npm publish dist/sdk`); public even under a scope.
  publishConfig: { access: 'public' },
};
checkShipped();
writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);

console.log(`build-sdk: ${relative(root, out)} (leasehold ${pkg.version}) in ${Date.now() - started} ms`);

/**
 * tsc keeps the sources' extensionless relative specifiers ('./client',
 * '../client'), which Node16/NodeNext resolution cannot follow inside an ES
 * module package. Give each its file: './x' → './x.js' or './x/index.js'.
 * Also refuse a declaration that names a package the SDK does not list.
 */
function fixDeclarationSpecifiers(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) {
      fixDeclarationSpecifiers(file);
      continue;
    }
    if (!entry.name.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const fixed = text.replace(/(\bfrom\s+|\bimport\s*\(\s*)(['"])([^'"]+)\2/g, (match, lead, quote, spec) => {
      if (!spec.startsWith('.')) {
        if (spec !== 'react' && !spec.startsWith('react/')) throw new Error(`build-sdk: ${relative(root, file)} refers to '${spec}', which the package does not provide`);
        return match;
      }
      const base = resolve(dirname(file), spec);
      if (existsSync(`${base}.d.ts`)) return `${lead}${quote}${spec}.js${quote}`;
      if (existsSync(join(base, 'index.d.ts'))) return `${lead}${quote}${spec}/index.js${quote}`;
      throw new Error(`build-sdk: cannot resolve '${spec}' in ${relative(root, file)}`);
    });
    if (fixed !== text) writeFileSync(file, fixed);
  }
}
