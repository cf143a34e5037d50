// Lint: typed TypeScript rules plus test hygiene (no focused or skipped tests).
import tseslint from 'typescript-eslint';
import vitest from '@vitest/eslint-plugin';

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'cdk.out/**',
      'dist/**',
      '.sluice-data/**',
      '.sluice-build/**',
      'coverage/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  ...tseslint.configs.recommended,
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
    },
  },
  {
    // Entry points and scripts print to the terminal on purpose.
    files: [
      'bench/**/*.ts',
      'bin/**/*.ts',
      'lambdas/local/main.ts',
      'scripts/**/*.ts',
      'cli/**/*.ts',
      'examples/**/*.ts',
    ],
    rules: { 'no-console': 'off' },
  },
);
