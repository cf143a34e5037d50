/**
 * The test run's AWS emulators, as a test file reaches them: `aws-global-setup.ts` starts one
 * DynamoDB Local and one moto_server for the whole run and provides their endpoints here.
 *
 * @example
 * ```ts
 * const { storage, cleanup } = await newAwsTestStorage(awsEndpoints());
 * ```
 */
import { inject } from 'vitest';
import type { AwsEndpoints } from './aws-emulator.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by test/support/aws-global-setup.ts. */
    awsEndpoints: AwsEndpoints;
  }
}

/** The endpoints of the run's emulators; throws when the run has none (another vitest config). */
export function awsEndpoints(): AwsEndpoints {
  const endpoints = inject('awsEndpoints');
  if (endpoints === undefined) {
    throw new Error('no AWS emulators in this run: vitest.config.ts starts them in test/support/aws-global-setup.ts');
  }
  return endpoints;
}
