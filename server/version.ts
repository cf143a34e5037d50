import packageJson from '../package.json' with { type: 'json' };

/**
 * Sluice's version, read from package.json (esbuild inlines it into the Lambda bundles and the
 * local server build): the one place it is written.
 *
 * @example
 * ```ts
 * import { VERSION } from './version.js'; // '0.1.0'
 * ```
 */
export const VERSION: string = packageJson.version;
