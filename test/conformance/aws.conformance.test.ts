// The storage conformance suite on the AWS adapter: DynamoDB + S3 on a private moto_server
// (or on AWS_ENDPOINT_URL, e.g. LocalStack), with fresh tables and bucket for the run.
import { afterAll, beforeAll } from 'vitest';
import { startAwsEmulator, newAwsTestStorage, type AwsEmulator } from '../support/moto.js';
import { runStorageConformance } from './storage.conformance.js';

let emulator: AwsEmulator | undefined;

beforeAll(async () => {
  emulator = await startAwsEmulator();
});
afterAll(async () => {
  await emulator?.stop();
});

runStorageConformance('aws', async () => {
  // Runs in the suite's own beforeAll, after ours: the endpoint is known by then.
  if (emulator === undefined) throw new Error('AWS emulator not started');
  return newAwsTestStorage(emulator.endpoint);
});
