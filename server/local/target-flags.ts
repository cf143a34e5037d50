/**
 * The local server's `--target` (and `SLUICE_TARGETS`): a handler module run as the consumer
 * of one group (docs/TARGETS.md, "Develop a consumer locally"). One value names the group, the
 * module and the knobs:
 *
 *   <queue>/<group>=<file>[?<knob>=<value>&…]
 *
 * `/` parts the names because no name can hold it (contract/names.ts), as in the routes' paths.
 * A name holding `=` or `,` is written with percent-escapes (`%3D`, `%2C`): no name holds `%`,
 * so an escape cannot be mistaken for the name. The file ends at the first `?`; relative, it is
 * from the directory the server runs in, as `--data-dir` and `--grants` are. The knobs are
 * PUT's, under their names, read by the contract's {@link TargetSettings}: every default, range
 * and refusal is the API's. `mode` is `leases` unless given; a list knob
 * (`functionResponseTypes`) takes one value per occurrence.
 *
 * Pure: nothing here touches the file; the server checks it (and its `handler` export) when it
 * makes the module's invoker, at start.
 *
 * @example
 * ```ts
 * parseTargetFlags(['orders/billing=./handler.ts?mode=claims&batchSize=10&maximumConcurrency=2'], '/work');
 * // [{ queue: 'orders', group: 'billing', settings: { endpoint: { kind: 'module', path: '/work/handler.ts' }, mode: 'claims', batchSize: 10, … } }]
 * ```
 */
import { isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { newNameProblem } from '../../contract/names.js';
import { TARGET_LIMITS, TargetSettings } from '../../contract/targets.js';
import { describeZodError } from '../http/errors.js';
import type { FlagTarget } from '../service/targets/target-service.js';

/** The form of one value, for usage lines and errors. */
export const TARGET_FLAG_FORM = '<queue>/<group>=<file>[?<knob>=<value>&…]';

/** The knobs a value may set: every setting a PUT takes but the endpoint (the value's file). */
const SHAPE = TargetSettings.shape;
type Knob = Exclude<keyof typeof SHAPE, 'endpoint'>;
const KNOBS = Object.keys(SHAPE).filter((k): k is Knob => k !== 'endpoint');

/** A knob's type under its `.default()` or `.optional()`: how its text is read. */
function typeOf(schema: z.ZodType): string {
  let s = schema;
  while (s.type === 'default' || s.type === 'optional') s = (s.def as unknown as { innerType: z.ZodType }).innerType;
  return s.type;
}

/** A knob's text as its type: a number or a boolean when it reads as one, else as written (zod then says what it should be). */
function valueOf(type: string, text: string): unknown {
  if (type === 'number') return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/** A knob the user probably meant: the one whose name holds what they wrote (`concurrency`: maximumConcurrency). */
function guess(knob: string): string | undefined {
  const k = knob.toLowerCase();
  return k.length >= 4 ? KNOBS.find((name) => name.toLowerCase().includes(k)) : undefined;
}

/** A name of the value, percent-escapes decoded, or why it is not one. */
function nameOf(text: string, kind: 'queue' | 'consumer group'): string {
  let name: string;
  try {
    name = decodeURIComponent(text);
  } catch {
    throw new Error(`the ${kind} name ${text} has a malformed %-escape`);
  }
  const problem = newNameProblem(name, kind);
  if (problem) throw new Error(problem);
  return name;
}

/** One value as the target it sets; throws why not, in one line. */
function parseOne(value: string, cwd: string): FlagTarget {
  const eq = value.indexOf('=');
  const names = eq < 0 ? value : value.slice(0, eq);
  const slash = names.indexOf('/');
  if (eq < 0 || slash < 0) throw new Error(`expected ${TARGET_FLAG_FORM}`);
  const queue = nameOf(names.slice(0, slash), 'queue');
  const group = nameOf(names.slice(slash + 1), 'consumer group');
  const rest = value.slice(eq + 1);
  const q = rest.indexOf('?');
  const file = q < 0 ? rest : rest.slice(0, q);
  if (file === '') throw new Error(`no handler module file after "=" (expected ${TARGET_FLAG_FORM})`);
  const input: Record<string, unknown> = {
    endpoint: { kind: 'module', path: isAbsolute(file) ? file : resolve(cwd, file) },
    mode: 'leases',
  };
  const seen = new Set<string>();
  for (const [knob, text] of new URLSearchParams(q < 0 ? '' : rest.slice(q + 1))) {
    if (!(KNOBS as string[]).includes(knob)) {
      const meant = guess(knob);
      throw new Error(
        `unknown knob ${knob}${meant ? ` (did you mean ${meant}?)` : ''}; the knobs are ${KNOBS.join(', ')}`,
      );
    }
    const type = typeOf(SHAPE[knob as Knob]);
    if (type === 'array') {
      input[knob] = [...((seen.has(knob) ? input[knob] : []) as unknown[]), text];
    } else {
      if (seen.has(knob)) throw new Error(`knob ${knob} is given twice`);
      input[knob] = valueOf(type, text);
    }
    seen.add(knob);
  }
  const settings = TargetSettings.safeParse(input);
  if (!settings.success) throw new Error(describeZodError(settings.error, 'knobs'));
  return { queue, group, settings: settings.data };
}

/**
 * The targets the values set, each file resolved against `cwd`. Throws on the first value that
 * is not one, naming it (`<source> <value>: <why>`, one line), and on two values for one group
 * or more than a deployment's targets.
 *
 * @example
 * ```ts
 * parseTargetFlags(['orders/billing=h.ts?concurrency=2'], '/work');
 * // throws: --target orders/billing=h.ts?concurrency=2: unknown knob concurrency (did you mean maximumConcurrency?); …
 * ```
 */
export function parseTargetFlags(values: readonly string[], cwd: string, source = '--target'): FlagTarget[] {
  const out: FlagTarget[] = [];
  const groups = new Set<string>();
  for (const value of values) {
    let t: FlagTarget;
    try {
      t = parseOne(value, cwd);
    } catch (e) {
      throw new Error(`${source} ${value}: ${(e as Error).message}`);
    }
    // `/` is in no name, so the pair is one key.
    const key = `${t.queue}/${t.group}`;
    if (groups.has(key))
      throw new Error(`${source} ${value}: consumer group ${t.group} on queue ${t.queue} is given a target twice`);
    groups.add(key);
    out.push(t);
  }
  if (out.length > TARGET_LIMITS.perStack)
    throw new Error(
      `${source}: at most ${TARGET_LIMITS.perStack} targets (a deployment holds no more), not ${out.length}`,
    );
  return out;
}

/**
 * The values to read and where they came from: the `--target` flags when any is given (a flag
 * replaces its variable, as the server's other flags do), else `SLUICE_TARGETS`, comma-separated
 * (so a file whose path holds a comma goes in a flag).
 *
 * @example
 * ```ts
 * targetFlagValues(undefined, 'a/b=./x.ts, c/d=./y.ts?batchSize=2');
 * // { values: ['a/b=./x.ts', 'c/d=./y.ts?batchSize=2'], source: 'SLUICE_TARGETS' }
 * ```
 */
export function targetFlagValues(
  flags: readonly string[] | undefined,
  env: string | undefined,
): { values: string[]; source: string } {
  if (flags && flags.length > 0) return { values: [...flags], source: '--target' };
  const values = (env ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return { values, source: 'SLUICE_TARGETS' };
}
