/**
 * The naming rule of queues, partitions, groups and consumers, as the wire carries them: what a
 * name may hold, and the two names the API gives meaning to (queue mode's group, the default
 * partition). Pure, for the route schemas (`schemas.ts`) and the server (`server/core/names.ts`).
 *
 * @example
 * ```ts
 * nameProblem('a/b', 'queue'); // 'queue name must not contain control characters or any of / \ ? # %'
 * nameProblem('orders', 'queue'); // undefined
 * ```
 */

/** The implicit consumer group of queue mode (Queen's name, kept for wire compatibility). */
export const QUEUE_MODE_GROUP = '__QUEUE_MODE__';
export const DEFAULT_PARTITION = 'Default';
export const MAX_NAME_BYTES = 128;

// `/ ? #` cannot travel in a URL path, `%` would be ambiguous after decoding, and `\` and
// control characters only ever arrive by mistake.
const FORBIDDEN = /[\u0000-\u001f\u007f/\\?#%]/u;
// A lone UTF-16 surrogate has no UTF-8 form: SQLite stores it but reads it back as U+FFFD,
// and DynamoDB's keys are UTF-8, so such a key would not round-trip on either backend.
const LONE_SURROGATE = /\p{Cs}/u;
// C1 controls and the Unicode line and paragraph separators break lines in logs and terminals
// like the C0 ones do; refused for new names only (older ones stay readable and deletable).
const NEW_FORBIDDEN = /[\u0080-\u009f\u2028\u2029]/u;

/** Whether `s` is well-formed Unicode text (no lone surrogates), as every stored key must be. */
export const isWellFormedText = (s: string): boolean => !LONE_SURROGATE.test(s);

/**
 * The bytes of `s` in UTF-8, a lone surrogate counted as the 3 of U+FFFD (`Buffer.byteLength`'s
 * count, without Node: browsers load these schemas too).
 *
 * @example
 * ```ts
 * utf8Length('é'); // 2
 * ```
 */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

export type NameKind = 'queue' | 'partition' | 'consumer group' | 'consumer';

/** Why `name` is not a valid queue, partition or group name, or undefined when it is. */
export function nameProblem(name: unknown, kind: NameKind): string | undefined {
  if (typeof name !== 'string') return `${kind} name must be a string`;
  if (name.length === 0) return `${kind} name must not be empty`;
  if (utf8Length(name) > MAX_NAME_BYTES) return `${kind} name must be at most ${MAX_NAME_BYTES} bytes`;
  if (name.trim() !== name) return `${kind} name must not start or end with whitespace`;
  if (FORBIDDEN.test(name)) return `${kind} name must not contain control characters or any of / \\ ? # %`;
  if (!isWellFormedText(name)) return `${kind} name must be valid Unicode text (it holds a lone UTF-16 surrogate)`;
  return undefined;
}

/**
 * Why `name` may not be given to a new queue, partition or group, or undefined when it may: the
 * rule of {@link nameProblem}, and not `.` or `..`. URLs cannot carry those two as path segments
 * (fetch, browsers and most HTTP clients fold them away, so only `curl --path-as-is` reaches
 * them); ones made before this rule stay readable and deletable by such a client, so reads and
 * deletes check {@link nameProblem} only.
 *
 * @example
 * ```ts
 * newNameProblem('..', 'queue'); // 'queue name must not be "." or "..": ...'
 * nameProblem('..', 'queue');    // undefined: an existing queue can still be addressed
 * ```
 */
export function newNameProblem(name: unknown, kind: NameKind): string | undefined {
  const problem = nameProblem(name, kind);
  if (problem) return problem;
  if (name === '.' || name === '..')
    return `${kind} name must not be "." or "..": URLs cannot carry it (HTTP clients drop such path segments)`;
  if (NEW_FORBIDDEN.test(name as string))
    return `${kind} name must not contain control characters (C1 controls such as U+0085, or the line and paragraph separators U+2028, U+2029)`;
  return undefined;
}
