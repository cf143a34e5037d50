import { buildServer } from '../../scripts/build-server.js';

/** Vitest global setup: builds the local server once, before any test starts it. */
export default async function setup(): Promise<void> {
  await buildServer();
}
