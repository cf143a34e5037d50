// Lint: type-checked TypeScript rules plus test hygiene (no focused or skipped tests); Prettier owns formatting.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import vitest from '@vitest/eslint-plugin';
import prettier from 'eslint-config-prettier';

export default defineConfig(
  {
    ignores: [
      'node_modules/**',
      'cdk.out/**',
      'dist/**',
      'client/dist/**',
      '.sluice-data/**',
      '.sluice-build/**',
      'coverage/**',
      '.bench/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['warn', 'error'] }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    plugins: { vitest },
    rules: {
      ...vitest.configs.recommended.rules,
      'vitest/no-focused-tests': 'error',
      'vitest/no-disabled-tests': 'error',
      'vitest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', 'assert*'] }],
      'vitest/valid-title': 'off',
      // Test doubles stand in for async interfaces: an async arrow with no await is the plainest stub.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // One logger: every log line of the server goes through the Telemetry facade (Powertools on
    // Lambda, JSON lines locally). The facade's local lines and the local server's start-up and
    // usage output (one documented line in server/local/main.ts) are the only console writes.
    files: ['server/**/*.ts'],
    rules: { 'no-console': ['error', {}] },
  },
  {
    // The logger: the JSON-lines telemetry writes the local log lines.
    files: ['server/service/telemetry.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // The CLI reaches the server only through the modules named for it (server/public/README.md).
    files: ['cli/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // `../server/…`, `../../server/…` and so on, but for `server/public/<module>`.
              regex: '^(\\.\\./)+server/(?!public/[^/]+$)',
              message: 'cli/ imports from server/ only through server/public/ (server/public/README.md).',
            },
          ],
        },
      ],
    },
  },
  {
    // Entry points and scripts print to the terminal on purpose.
    files: ['bench/**/*.ts', 'bin/**/*.ts', 'scripts/**/*.ts', 'cli/**/*.ts', 'examples/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  // Last, so no stylistic rule fights Prettier.
  prettier,
);
