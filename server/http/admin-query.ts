/**
 * The query-string pieces of Queen's admin views (docs/QUEEN-COMPAT.md): lenient where Queen
 * is lenient, so what its dashboard and `queenctl` send never answers 400. An unparsable
 * instant or integer falls back to its default, an empty filter counts as absent.
 */
import { z } from 'zod';
import { instantProblem } from './schemas.js';

/**
 * An optional instant in a query string: ISO-8601 (or epoch ms); unparsable values fall back to
 * the default, as in Queen.
 */
export const optionalInstant = z
  .string()
  .optional()
  .transform((v) => {
    if (v === undefined || v.trim() === '') return undefined;
    const n = /^\d+$/.test(v) ? Number(v) : v;
    return instantProblem(n) === undefined ? (typeof n === 'number' ? n : Date.parse(n)) : undefined;
  });

/**
 * A query integer that falls back to its default when missing or unparsable (Queen's rule for
 * its admin routes), clamped to `[min, max]`.
 */
export const lenientInteger = (min: number, max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((v) => {
      const n = v === undefined ? Number.NaN : Number(v);
      return Number.isInteger(n) ? Math.max(min, Math.min(max, n)) : fallback;
    });

/** An optional name filter from the query string: empty counts as absent. */
export const optionalFilter = z
  .string()
  .max(256)
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));
