/**
 * `npm run test:localstack`: the black-box suites against a deployed Sluice, found through the
 * stack outputs `npm run deploy:local` wrote (docs/DEPLOYING.md, "LocalStack"). Not part of
 * `npm test` or CI: it needs Docker and a LocalStack with API Gateway v2.
 *
 * Point it elsewhere with SLUICE_OUTPUTS_FILE / SLUICE_BASE_URL (see test/support/deployed.ts),
 * for instance at a real deployment: SLUICE_OUTPUTS_FILE=cdk-outputs.json LOCALSTACK_ENDPOINT=
 */
import { describe } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { defineLogRoutesSuite } from '../http/suites/log.suite.js';
import { defineQueueSmokeSuite } from '../http/suites/smoke.suite.js';
import { deployedTarget, testPrefix } from '../support/deployed.js';

const deployed = deployedTarget();
const prefix = testPrefix();
// The deployment's limits: the defaults, unless the stack was given others (then set
// SLUICE_MAX_BODY_BYTES / SLUICE_MAX_MESSAGE_BYTES here to the same values).
const { maxBodyBytes, maxMessageBytes } = loadConfig({
  SLUICE_MAX_BODY_BYTES: process.env.SLUICE_MAX_BODY_BYTES,
  SLUICE_MAX_MESSAGE_BYTES: process.env.SLUICE_MAX_MESSAGE_BYTES,
});

describe(`deployed API: ${deployed.source}`, () => {
  defineLogRoutesSuite(() => deployed.target, {
    maxBodyBytes,
    maxMessageBytes,
    backend: 'aws',
    behindGateway: deployed.behindGateway,
    prefix,
  });
  defineQueueSmokeSuite(() => deployed.target, { prefix });
});
