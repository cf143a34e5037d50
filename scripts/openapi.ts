/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI 3.1 description generated from the
 * route table (server/http/openapi.ts). test/unit/openapi.test.ts fails when the file is stale.
 *
 * @example
 * ```sh
 * npm run openapi
 * ```
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiText } from '../server/http/openapi.js';
import { ALL_ROUTES, LOCAL_ROUTES } from '../server/http/routes.js';

const path = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');
writeFileSync(path, openApiText(ALL_ROUTES, LOCAL_ROUTES));
console.log(`wrote ${path} (${ALL_ROUTES.length + LOCAL_ROUTES.length} routes)`);
