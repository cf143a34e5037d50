/**
 * What `sluice cost` reads and prices: the cost counters each invocation writes
 * (`service/usage.ts`) and the list prices (`core/prices.ts`). Constants only, no SDK. Named
 * for the CLI: `cli/` imports from `server/` only through `server/public/` (eslint.config.js
 * enforces it).
 *
 * @example
 * ```ts
 * import { PRICES, USAGE_METRICS } from '../server/public/usage.js';
 * USAGE_METRICS.length; // 9 metrics, each priced from PRICES
 * ```
 */
export { USAGE_METRICS, USAGE_PROMETHEUS, type UsageMetric, type UsageTotals } from '../service/usage.js';
export { PRICES, sqsPerMillion } from '../core/prices.js';
