import { defineConfig } from 'vitest/config';

// `npm run test:localstack` only: black-box suites against a deployed API (LocalStack or AWS).
export default defineConfig({
  test: {
    include: ['test/localstack/**/*.localstack.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
