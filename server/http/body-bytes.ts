import { isUtf8 } from 'node:buffer';
import type { HttpEvent } from './types.js';

/** The bytes a body string was decoded from, where the server kept them. */
const received = new WeakMap<HttpEvent, Buffer>();

/**
 * Lets a server that received the body as bytes hand them over with the event, so a route
 * that needs the exact bytes (push stores each payload as sent) does not encode the string
 * back (a copy of the whole body per push). Only valid UTF-8 is handed out: then the bytes
 * are exactly what `event.body` encodes to, and the route sees the same either way. That is
 * checked when a route asks, so routes that never ask do not pay for it.
 *
 * @example
 * ```ts
 * const event = toEvent(req, bytes, requestId); // body: bytes.toString('utf8')
 * keepBodyBytes(event, bytes);
 * ```
 */
export function keepBodyBytes(event: HttpEvent, bytes: Buffer): void {
  if (!event.isBase64Encoded && bytes.length > 0) received.set(event, bytes);
}

/** The bytes {@link keepBodyBytes} kept for this event, if any and valid UTF-8. */
export function keptBodyBytes(event: HttpEvent): Buffer | undefined {
  const bytes = received.get(event);
  return bytes !== undefined && isUtf8(bytes) ? bytes : undefined;
}

/** Hands the bytes kept for `from` to `to`, a copy of that event (a wrapper that rewrites it). */
export function copyBodyBytes(from: HttpEvent, to: HttpEvent): void {
  const bytes = received.get(from);
  if (bytes !== undefined) received.set(to, bytes);
}
