/**
 * A zod 4 schema as a TypeScript type, written out as text: the printer behind
 * `npm run wire-types` (scripts/wire-ts.ts). It walks zod's own schema objects rather than a
 * JSON Schema rendering, so optional keys, nullability, literals and the input/output sides
 * of defaults and transforms come out as zod infers them (`z.input` / `z.output`), and
 * `.describe()` texts become doc comments.
 *
 * Schemas named in `names` print as references to those names (except the one being defined),
 * so shared pieces (`QueueOptionsAnswer`, `PopAnswer`, …) are declared once.
 *
 * @example
 * ```ts
 * tsOf(z.object({ n: z.number().optional() }), { io: 'output', names: new Map() }); // '{ n?: number }'
 * ```
 */
import type { z } from 'zod';

/** Which side of a schema to print: what a parse takes (`input`) or what it gives (`output`). */
export type Io = 'input' | 'output';

export interface PrintOptions {
  io: Io;
  /** Schemas printed by name instead of inline. */
  names: ReadonlyMap<z.ZodType, string>;
  /** The schema being declared: printed inline even when `names` has it. */
  self?: z.ZodType;
}

/** The parts of zod 4's schema internals the printer reads. */
interface Def {
  type: string;
  [k: string]: unknown;
}
interface Internals {
  def: Def;
  optin?: 'optional';
  optout?: 'optional';
}
const internals = (s: z.ZodType): Internals => (s as unknown as { _zod: Internals })._zod;
const defOf = (s: z.ZodType): Def => internals(s).def;
const descriptionOf = (s: z.ZodType): string | undefined => (s as { description?: string }).description;

/** Whether a key holding `s` may be left out, on this side. */
function isOptional(s: z.ZodType, io: Io): boolean {
  const i = internals(s);
  return io === 'input' ? i.optin !== undefined : i.optout === 'optional';
}

/** Strips the optional wrapper a key's `?` already says (the rest prints as usual). */
function unwrapOptional(s: z.ZodType): z.ZodType {
  const d = defOf(s);
  return d.type === 'optional' ? unwrapOptional(d.innerType as z.ZodType) : s;
}

const KEY = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const keyOf = (k: string): string => (KEY.test(k) ? k : JSON.stringify(k));
const doc = (text: string | undefined): string => (text ? `/** ${text.replace(/\*\//g, '*\\/')} */\n` : '');
const union = (parts: string[]): string => {
  const unique = [...new Set(parts)];
  if (unique.includes('unknown')) return 'unknown'; // it holds every other member
  return unique.length === 0 ? 'never' : unique.join(' | ');
};
/** A union without its `undefined` member, for a key whose `?` says it already. */
const withoutUndefined = (t: string): string =>
  t
    .split(' | ')
    .filter((p) => p !== 'undefined')
    .join(' | ');
/** Parenthesises a union or intersection (a `|` or `&` outside any braces) where it is an operand. */
function element(t: string): string {
  let depth = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (c === '{' || c === '(' || c === '<' || c === '[') depth++;
    else if (c === '}' || c === ')' || c === '>' || c === ']') depth--;
    else if (c === '"')
      i = t.indexOf('"', i + 1); // a string literal's text is not syntax
    else if (depth === 0 && (c === '|' || c === '&')) return `(${t})`;
  }
  return t;
}

/**
 * The type of `schema`, on the `io` side, as TypeScript text.
 *
 * @example
 * ```ts
 * tsOf(z.string().nullable(), { io: 'output', names: new Map() }); // 'string | null'
 * ```
 */
export function tsOf(schema: z.ZodType, o: PrintOptions): string {
  const name = o.names.get(schema);
  if (name !== undefined && schema !== o.self) return name;
  const inner = (s: unknown): string => tsOf(s as z.ZodType, { ...o, self: undefined });
  const d = defOf(schema);
  switch (d.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'int':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'bigint':
      return 'bigint';
    case 'null':
      return 'null';
    case 'undefined':
    case 'void':
      return 'undefined';
    case 'never':
      return 'never';
    case 'unknown':
    case 'any':
      return 'unknown';
    case 'literal':
      return union((d.values as unknown[]).map((v) => (v === undefined ? 'undefined' : JSON.stringify(v))));
    case 'enum':
      return union(Object.values(d.entries as Record<string, string | number>).map((v) => JSON.stringify(v)));
    case 'array':
      return `${element(inner(d.element))}[]`;
    case 'tuple':
      return `[${(d.items as z.ZodType[]).map(inner).join(', ')}]`;
    case 'record':
      return `Record<${inner(d.keyType)}, ${inner(d.valueType)}>`;
    case 'union':
      return union((d.options as z.ZodType[]).map(inner));
    case 'intersection':
      return `${element(inner(d.left))} & ${element(inner(d.right))}`;
    case 'nullable':
      return union([inner(d.innerType), 'null']);
    case 'optional':
      return union([inner(d.innerType), 'undefined']);
    // A default or a caught failure: what was given may be absent, what comes out is not.
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return inner(d.innerType);
    case 'pipe':
      return inner(o.io === 'input' ? d.in : d.out);
    // A transform's result has no schema: only its input is known.
    case 'transform':
      return 'unknown';
    case 'lazy':
      return inner((d.getter as () => z.ZodType)());
    case 'object':
      return objectOf(d, o);
    default:
      throw new Error(`zod-ts: no TypeScript for a zod ${d.type} schema`);
  }
}

/** An object type: each key (with its doc comment), and an index signature unless the object is strict. */
function objectOf(d: Def, o: PrintOptions): string {
  const lines = Object.entries(d.shape as Record<string, z.ZodType>).map(([k, v]) => {
    const optional = isOptional(v, o.io);
    const printed = tsOf(optional ? unwrapOptional(v) : v, { ...o, self: undefined });
    const type = optional ? withoutUndefined(printed) : printed;
    return `${doc(descriptionOf(v) ?? descriptionOf(unwrapOptional(v)))}${keyOf(k)}${optional ? '?' : ''}: ${type};`;
  });
  const rest = d.catchall as z.ZodType | undefined;
  // Unknown keys: refused by a strict object (never), dropped by a plain one, kept by a loose one.
  if (rest !== undefined && defOf(rest).type !== 'never')
    lines.push(`[key: string]: ${tsOf(rest, { ...o, self: undefined })};`);
  return lines.length === 0 ? 'Record<string, never>' : `{\n${lines.join('\n')}\n}`;
}

/**
 * A declaration of `name` as the type of `schema`: an interface for an object, a type alias
 * otherwise, with the schema's description as its doc comment (or `fallbackDoc`).
 *
 * @example
 * ```ts
 * declarationOf('Deleted', z.object({ deleted: z.boolean() }), { io: 'output', names: new Map() });
 * // 'export interface Deleted {\n deleted: boolean;\n}'
 * ```
 */
export function declarationOf(name: string, schema: z.ZodType, o: PrintOptions, fallbackDoc?: string): string {
  const body = tsOf(schema, { ...o, self: schema });
  const comment = doc(descriptionOf(schema) ?? fallbackDoc);
  const isObject = defOf(schema).type === 'object' && body.startsWith('{');
  return isObject ? `${comment}export interface ${name} ${body}` : `${comment}export type ${name} = ${body};`;
}
