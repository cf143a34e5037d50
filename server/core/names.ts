import { nameProblem, type NameKind } from '../../contract/names.js';
import { invalid } from './errors.js';

// The rule itself is the wire's: the contract holds it, for the route schemas and for this.
export {
  DEFAULT_PARTITION,
  MAX_NAME_BYTES,
  QUEUE_MODE_GROUP,
  isWellFormedText,
  nameProblem,
  newNameProblem,
  type NameKind,
} from '../../contract/names.js';

/**
 * Throws `invalid_request` unless `name` is a valid name.
 *
 * @example
 * ```ts
 * assertName('orders', 'queue'); // ok
 * assertName('a/b', 'queue');    // throws: queue name must not contain ... / \ ? # %
 * ```
 */
export function assertName(name: unknown, kind: NameKind): asserts name is string {
  const problem = nameProblem(name, kind);
  if (problem) throw invalid(`${problem} (got ${JSON.stringify(name)})`, { field: kind });
}
