/**
 * Sluice's version, for the CLI's `--version`. Named for the CLI: `cli/` imports from
 * `server/` only through `server/public/` (eslint.config.js enforces it).
 *
 * @example
 * ```ts
 * import { VERSION } from '../server/public/version.js'; // '0.1.0'
 * ```
 */
export { VERSION } from '../version.js';
