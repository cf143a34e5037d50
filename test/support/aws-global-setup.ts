import type { TestProject } from 'vitest/node';
import { startAwsEmulators } from './aws-emulator.js';
import type {} from './aws-endpoints.js';

/**
 * Vitest global setup: one DynamoDB Local and one moto_server for the whole run (a JVM costs
 * seconds and a few hundred MB to start), their endpoints provided to every test file as
 * `awsEndpoints()`. Tests isolate themselves with random table and bucket names. Stopped when
 * the run ends; the watchdog kills them should the runner itself be killed.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const emulator = await startAwsEmulators();
  project.provide('awsEndpoints', emulator.endpoints);
  return () => emulator.stop();
}
