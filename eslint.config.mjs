// Lint enforces the house's import boundaries (STYLE.md "The shape of the
// house"): imports point one way, and the engine and store stay free of
// Next.js, React and HTTP. Style is left to the type checker and review.
import tseslint from 'typescript-eslint';

const framework = [
  { name: 'next', message: 'The engine and store are free of Next.js.' },
  { name: 'react', message: 'The engine and store are free of React.' },
  { name: 'node:http', message: 'HTTP belongs in server/http.' },
  { name: 'http', message: 'HTTP belongs in server/http.' },
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.next/**', 'dist/**', 'test-results/**', 'playwright-report/**', 'next-env.d.ts'] },
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
            { group: ['**/http/*', '@/server/http/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'Imports point one way: http → engine → store.' },
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
    files: ['lib/**/*.ts', 'lib/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/server/*', '@/server/*', '**/app/*', '@/app/*', '**/components/*', '@/components/*'], message: 'lib/ is shared, pure code: it never imports server/, app/ or components/.' }] },
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
