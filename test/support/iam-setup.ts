/**
 * Vitest setup file: a test during which a function made an AWS request its synthesized role
 * would deny fails, with the function, action and resource (test/support/iam/recorder.ts).
 */
import { afterAll, afterEach } from 'vitest';
import { takeDenials } from './iam/denials.js';

const failOnDenials = (): void => {
  const denied = [...new Set(takeDenials())];
  if (denied.length > 0)
    throw new Error(
      `AWS would deny ${denied.length} request(s) the code made (grant them in lib/access.ts, or stop making them):\n  ${denied.join('\n  ')}`,
    );
};
afterEach(failOnDenials);
afterAll(failOnDenials);
