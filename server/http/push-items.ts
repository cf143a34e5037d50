/**
 * The messages a push or a transaction's push operation carries, checked and made ready to
 * store: names, counts and sizes, each payload as the bytes it was sent as when they are known.
 */
import { SluiceError } from '../core/errors.js';
import { DEFAULT_PARTITION, newNameProblem } from '../core/names.js';
import type { PushItem } from '../service/log/push.js';
import type { Services } from '../service/runtime.js';
import { payloadSpans } from './payload-spans.js';

/** One message as a request sends it (`/push` items, a transaction's push items). */
export interface PushItemInput {
  queue: string;
  partition?: string | undefined;
  payload?: unknown;
  data?: unknown;
  transactionId?: string | undefined;
  traceId?: string | null | undefined;
}

/**
 * Checks names and sizes of every item before anything is written (nothing half-written).
 * With the request's bytes (`raw`), each payload is kept exactly as sent.
 *
 * @example
 * ```ts
 * const items = preparePushItems(body.items, services, 'items', rawBody());
 * await services.pushes.push(items);
 * ```
 */
export function preparePushItems(
  items: PushItemInput[],
  services: Pick<Services, 'config'>,
  path = 'items',
  raw?: Buffer,
): PushItem[] {
  // The exact bytes each payload was sent as, when the body is the plain push shape.
  const spans = raw ? payloadSpans(raw) : undefined;
  const exact = spans && spans.length === items.length ? spans : undefined;
  const { maxMessageBytes, maxPushItems } = services.config;
  if (items.length > maxPushItems) {
    throw new SluiceError(
      'payload_too_large',
      `a push may carry at most ${maxPushItems} messages (got ${items.length}); split it`,
      { limit: maxPushItems },
    );
  }
  const okNames = new Set<string>();
  const checkName = (name: string, kind: 'queue' | 'partition', i: number): void => {
    const key = `${kind}\u0000${name}`;
    if (okNames.has(key)) return;
    // A push creates the queue and partition it names when they do not exist.
    const problem = newNameProblem(name, kind);
    if (problem) throw new SluiceError('invalid_request', `${path}[${i}].${kind}: ${problem}`);
    okNames.add(key);
  };
  return items.map((it, i) => {
    checkName(it.queue, 'queue', i);
    const partition = it.partition ?? DEFAULT_PARTITION;
    checkName(partition, 'partition', i);
    // Queen: payload when present (even null), else data, else an empty object.
    const span = exact?.[i];
    let payload: Buffer;
    if (span && raw) payload = raw.subarray(span[0], span[1]);
    else {
      const value = 'payload' in it ? it.payload : 'data' in it ? it.data : {};
      payload = Buffer.from(JSON.stringify(value === undefined ? null : value), 'utf8');
    }
    if (payload.byteLength > maxMessageBytes) {
      throw new SluiceError(
        'payload_too_large',
        `${path}[${i}]: payload is ${payload.byteLength} bytes; the limit is ${maxMessageBytes}`,
        { index: i, limit: maxMessageBytes },
      );
    }
    return { queue: it.queue, partition, payload, transactionId: it.transactionId, traceId: it.traceId ?? null };
  });
}
