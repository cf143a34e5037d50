import type { TestProject } from 'vitest/node';
import { buildServer } from '../../scripts/build-server.js';

/**
 * Vitest global setup: builds the local server once, before any test starts it, and again
 * before each rerun in watch mode (so a spawned server always runs the current source).
 */
export default async function setup(project: TestProject): Promise<void> {
  await buildServer();
  project.onTestsRerun(() => buildServer());
}
