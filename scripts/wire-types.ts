/**
 * `npm run wire-types`: writes client/wire.ts, the contract's wire shapes as plain TypeScript
 * (scripts/wire-ts.ts says why they are generated). test/unit/wire-types.test.ts fails when
 * the file is stale: run this after changing a route's schemas or the error table.
 *
 * @example
 * ```sh
 * npm run wire-types
 * ```
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { wireTypesText } from './wire-ts.js';

const path = fileURLToPath(new URL('../client/wire.ts', import.meta.url));
writeFileSync(path, await wireTypesText());
console.log(`wrote ${path}`);
