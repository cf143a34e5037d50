/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI 3.1 description generated from the
 * contract (contract/index.ts, by server/http/openapi.ts). test/unit/openapi.test.ts fails when the file is stale.
 *
 * @example
 * ```sh
 * npm run openapi
 * ```
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONTRACT, LOCAL_CONTRACT } from '../contract/index.js';
import { openApiText } from '../server/http/openapi.js';

const path = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');
writeFileSync(path, openApiText(CONTRACT, LOCAL_CONTRACT));
console.log(`wrote ${path} (${CONTRACT.length + LOCAL_CONTRACT.length} routes)`);
