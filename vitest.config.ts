import { defineConfig } from 'vitest/config';

// Test files name their layer: test/unit (pure, no I/O), test/conformance (storage port on
// both adapters), test/integration (services over real adapters), test/http (black box
// against the local server), test/browser (the console in headless Chromium), test/cdk
// (template assertions).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the local server once (the HTTP tests run it as `npm start` does), and starts one
    // DynamoDB Local and one moto_server for every AWS-backend test of the run.
    // The IAM policies of the synthesized stack, for the functions' IAM proof (iam-setup.ts fails
    // a test during which a function made a request its role would deny).
    globalSetup: [
      'test/support/global-setup.ts',
      'test/support/aws-global-setup.ts',
      'test/support/iam-global-setup.ts',
    ],
    setupFiles: ['test/support/iam-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // CI asks for a JSON report as well, to print its one-line summary.
    reporters: process.env.SLUICE_TEST_JSON
      ? ['default', ['json', { outputFile: process.env.SLUICE_TEST_JSON }]]
      : ['default'],
    // Lambda bundles under cdk.out/ are loaded by Node as they are, as on Lambda (and a
    // megabyte of minified code is not worth Vite's transform).
    server: { deps: { external: [/\/cdk\.out\//] } },
  },
});
