/**
 * Items as DynamoDB attributes and guards as condition expressions. An item is stored as
 * `pk`/`sk` (the key), `v` (the caller's version), `a` (the attributes as one JSON string, so
 * attribute names never collide with DynamoDB reserved words and an item round-trips exactly),
 * `b` (the optional bytes) and `ttl` (the optional expiry), as `ITEM_TABLE_SCHEMA` lists them;
 * `a.<key>` attributes a `take` set (`SET_ATTRIBUTE_PREFIX`) are merged over `a` when read.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Attrs, Condition, Item, ItemKey } from '../port.js';
import { assertItemSize, attrsJson } from '../size.js';
import { SET_ATTRIBUTE_PREFIX, TTL_ATTRIBUTE } from './schema.js';

/** An item (or key) as DynamoDB attribute values. */
export type AvMap = Record<string, AttributeValue>;

/**
 * The key attributes of an item.
 *
 * @example
 * ```ts
 * encodeKey({ pk: 'p', sk: 's' }); // { pk: { S: 'p' }, sk: { S: 's' } }
 * ```
 */
export function encodeKey(key: ItemKey): AvMap {
  return { pk: { S: key.pk }, sk: { S: key.sk } };
}

/**
 * The item as DynamoDB attributes, refused (ItemTooLargeError) over the size limit: the
 * attributes are serialised once, for the check and for the write.
 *
 * @example
 * ```ts
 * encodeItem({ pk: 'p', sk: 's', ver: 3, attrs: { x: 1 } });
 * // { pk: { S: 'p' }, sk: { S: 's' }, v: { N: '3' }, a: { S: '{"x":1}' } }
 * ```
 */
export function encodeItem(item: Item): AvMap {
  const json = attrsJson(item);
  assertItemSize(item, json);
  const av: AvMap = {
    pk: { S: item.pk },
    sk: { S: item.sk },
    v: { N: String(item.ver) },
    a: { S: json },
  };
  if (item.bin !== undefined) av['b'] = { B: item.bin };
  if (item.expiresAt !== undefined) av[TTL_ATTRIBUTE] = { N: String(item.expiresAt) };
  return av;
}

/**
 * The item DynamoDB returned, or `undefined` for none; throws on an item this adapter did not write.
 *
 * @example
 * ```ts
 * const item = decodeItem((await ddb.send(new GetItemCommand(input))).Item);
 * ```
 */
export function decodeItem(av: AvMap | undefined): Item | undefined {
  if (av === undefined) return undefined;
  const pk = av['pk']?.S;
  const sk = av['sk']?.S;
  const v = av['v']?.N;
  const a = av['a']?.S;
  if (pk === undefined || sk === undefined || v === undefined || a === undefined) {
    throw new Error(`malformed item in DynamoDB (attributes: ${Object.keys(av).join(', ')})`);
  }
  const item: Item = { pk, sk, ver: Number(v), attrs: JSON.parse(a) as Attrs };
  // Attributes a take set beside `a` (see SET_ATTRIBUTE_PREFIX) win over what `a` holds.
  for (const name in av) {
    if (!name.startsWith(SET_ATTRIBUTE_PREFIX)) continue;
    const { S: s, N: n } = av[name] ?? {};
    // JSON text from `set`; a number from `setFirst`.
    if (s !== undefined) item.attrs[name.slice(SET_ATTRIBUTE_PREFIX.length)] = JSON.parse(s) as Attrs[string];
    else if (n !== undefined) item.attrs[name.slice(SET_ATTRIBUTE_PREFIX.length)] = Number(n);
  }
  const b = av['b']?.B;
  // Copy: the SDK hands out views into a shared decode buffer.
  if (b !== undefined) item.bin = new Uint8Array(b);
  const ttl = av[TTL_ATTRIBUTE]?.N;
  if (ttl !== undefined) item.expiresAt = Number(ttl);
  return item;
}

/**
 * True when a stored item (as returned on a failed guard) is exactly what `sent` wrote.
 *
 * @example
 * ```ts
 * if (attempts > 1 && sameItem(err.Item, sent)) return { ok: true }; // our own earlier attempt
 * ```
 */
export function sameItem(found: AvMap | undefined, sent: AvMap): boolean {
  if (found === undefined) return false;
  const keys = new Set([...Object.keys(found), ...Object.keys(sent)]);
  for (const k of keys) {
    const x = found[k];
    const y = sent[k];
    if (x === undefined || y === undefined) return false;
    if (x.S !== y.S || x.N !== y.N) return false;
    if ((x.B === undefined) !== (y.B === undefined)) return false;
    if (x.B !== undefined && y.B !== undefined && Buffer.compare(x.B, y.B) !== 0) return false;
  }
  return true;
}

/** The condition-expression fields of a request. */
export interface Guard {
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: AvMap;
}

/**
 * A port {@link Condition} as the condition-expression fields of a request (none when omitted).
 *
 * @example
 * ```ts
 * await ddb.send(new PutItemCommand({ TableName, Item: encodeItem(item), ...guard({ kind: 'absent' }) }));
 * ```
 */
export function guard(cond: Condition): Guard & { ConditionExpression: string };
export function guard(cond: Condition | undefined): Guard;
export function guard(cond: Condition | undefined): Guard {
  // Names go through placeholders so no attribute ever trips DynamoDB's reserved words.
  switch (cond?.kind) {
    case undefined:
      return {};
    case 'absent':
      return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
    case 'exists':
      return { ConditionExpression: 'attribute_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } };
    case 'version':
      return {
        ConditionExpression: '#v = :v',
        ExpressionAttributeNames: { '#v': 'v' },
        ExpressionAttributeValues: { ':v': { N: String(cond.ver) } },
      };
  }
}
