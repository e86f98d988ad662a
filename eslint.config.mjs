// Lint enforces the house's import boundaries (STYLE.md "The shape of the
// house"): imports point one way, and the engine and store stay free of
// Next.js, React and HTTP. Style is left to the type checker and review.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const framework = [
  { name: 'next', message: 'The engine and store are free of Next.js.' },
  { name: 'react', message: 'The engine and store are free of React.' },
  { name: 'node:http', message: 'HTTP belongs in server/http.' },
  { name: 'http', message: 'HTTP belongs in server/http.' },
  { name: 'pino', message: 'The engine and store log through the injected Logger (server/engine/core/logger.ts); server/log.ts owns pino.' },
];

const libBoundary = {
  group: ['**/server/*', '@/server/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'],
  message: 'lib/ is shared, pure code: it never imports server/, app/ or components/.',
};

const nodeOnly = 'The SDK is browser-safe: no Node built-ins in lib/client or lib/react (tests excepted).';

export default tseslint.config(
  { ignores: ['node_modules/**', '.next/**', 'dist/**', 'test-results/**', 'playwright-report/**', 'next-env.d.ts', '.test-build/**'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    files: ['server/engine/**/*.ts', 'server/store/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: framework,
          patterns: [
            { group: ['next/*', 'react-dom', 'react-dom/*'], message: 'The engine and store are free of Next.js and React.' },
            { group: ['**/http/*', '@/server/http/*', '**/metrics/*', '@/server/metrics/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'Imports point one way: http → metrics → engine → store.' },
          ],
        },
      ],
    },
  },
  {
    files: ['server/store/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: framework,
          patterns: [{ group: ['**/engine/*', '**/http/*', '@/server/engine/*', '@/server/http/*', 'next/*'], message: 'The store sits below the engine.' }],
        },
      ],
    },
  },
  {
    // The engine's core (docs/design.md "Engine map") is the bottom of the
    // engine: model, step, events, errors, views, ids. Every aggregate may
    // import it; it imports nothing else of the engine. This entry replaces
    // the engine's one above for these files, so it repeats its patterns.
    files: ['server/engine/core/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: framework,
          patterns: [
            { group: ['next/*', 'react-dom', 'react-dom/*'], message: 'The engine and store are free of Next.js and React.' },
            { group: ['**/http/*', '@/server/http/*', '**/metrics/*', '@/server/metrics/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'Imports point one way: http → metrics → engine → store.' },
            { regex: '^\\.\\./(?!\\.\\./)|^\\.\\.$|^@/server/engine/(?!core/)', message: 'server/engine/core imports nothing else of the engine (docs/design.md "Engine map").' },
          ],
        },
      ],
    },
  },
  {
    // HTTP calls the engine's services only: it imports the engine's entry
    // (server/engine/index.ts), its errors and its model, never an aggregate's
    // parts (docs/design.md "Engine map").
    files: ['server/http/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?:\\.\\./)+engine/(?!core/(?:errors|model)$)|^@/server/engine/(?!core/(?:errors|model)$)',
              message: 'server/http imports the engine through server/engine/index.ts, core/errors.ts and core/model.ts only.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[property.name='parts']", message: 'HTTP calls the engine\'s services, never its parts (docs/design.md "Engine map").' },
      ],
    },
  },
  {
    // The metrics collector reads the engine's stats service, never its parts.
    files: ['server/metrics/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[property.name='parts']", message: 'Metrics read engine.stats, never the engine\'s parts (docs/design.md "Engine map").' },
      ],
    },
  },
  {
    // Metrics subscribe to the engine's events and take the request wrapper's
    // outcomes; they never see HTTP, the store or the console.
    files: ['server/metrics/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: framework,
          patterns: [
            { group: ['next/*', 'react-dom', 'react-dom/*'], message: 'Metrics are free of Next.js and React.' },
            { group: ['**/http/*', '@/server/http/*', '**/store/*', '**/store/**', '@/server/store/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'Imports point one way: http → metrics → engine.' },
          ],
        },
      ],
    },
  },
  {
    files: ['lib/**/*.ts', 'lib/**/*.tsx'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [libBoundary] }],
    },
  },
  {
    // The SDK runs in browsers (docs/sdk.md): no Node built-ins outside its tests.
    // This entry replaces the one above for these files, so it repeats libBoundary.
    files: ['lib/client/**/*.ts', 'lib/react/**/*.ts', 'lib/react/**/*.tsx'],
    ignores: ['**/*.test.ts', '**/*.test.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: builtinModules.map((name) => ({ name, message: nodeOnly })),
          patterns: [libBoundary, { group: ['node:*'], message: nodeOnly }],
        },
      ],
    },
  },
  {
    // lib/react reaches the client through its index only: the package maps
    // '../client' to `leasehold/client` (scripts/build-sdk.mjs), one copy for both.
    files: ['lib/react/**/*.ts', 'lib/react/**/*.tsx'],
    ignores: ['**/*.test.ts', '**/*.test.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: builtinModules.map((name) => ({ name, message: nodeOnly })),
          patterns: [
            libBoundary,
            { group: ['node:*'], message: nodeOnly },
            { group: ['../client/*', '../*', '!../client'], message: 'lib/react imports only react and ../client (the client\'s index).' },
          ],
        },
      ],
    },
  },
  {
    // The command line is an API client like any other: the SDK, never the
    // engine, the store or the console (docs/cli.md).
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/server/*', '@/server/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'The command line talks to the API through the SDK only.' }] },
      ],
    },
  },
  {
    files: ['app/**/*.ts', 'app/**/*.tsx', 'components/**/*.ts', 'components/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/server/*', '@/server/*'], message: 'The console reaches the engine only through the API (the SDK).' }] },
      ],
    },
  },
);
