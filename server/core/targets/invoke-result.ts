/**
 * How one delivery of an event to a target ended, as every invoker (Lambda, HTTPS, a local
 * handler module) reports it. Only `answered` and `function-error` mean the target ran; the
 * others never count an attempt against a record (docs/TARGETS.md, "Retries").
 *
 * @example
 * ```ts
 * const r: InvokeResult = { kind: 'throttled', error: 'HTTP 429', retryAfterMs: 2000 };
 * ranOnTarget(r); // false: no attempt is charged
 * ```
 */
export type InvokeResult =
  /** The target ran and answered (2xx, or a Lambda function that returned); `value` is its parsed JSON answer, undefined when empty. */
  | { kind: 'answered'; value: unknown }
  /** The target ran and failed: a Lambda function error, an HTTP 4xx/5xx (but 429 and 503), a timeout after the request was sent, an answer too large or not JSON. */
  | { kind: 'function-error'; error: string }
  /** The target refused to run now: Lambda TooManyRequests / throttling, HTTP 429 or 503. */
  | { kind: 'throttled'; error: string; retryAfterMs?: number | undefined }
  /** The target could not be reached: DNS, connect refused or timed out, TLS, a refused address (the SSRF guard), Lambda not found or not permitted. */
  | { kind: 'unreachable'; error: string };

/** Whether the target ran (only then does a delivery count an attempt). */
export const ranOnTarget = (r: InvokeResult): boolean => r.kind === 'answered' || r.kind === 'function-error';

/**
 * Delivers one event (its JSON text) to one target.
 *
 * @example
 * ```ts
 * const r = await invoker.invoke(JSON.stringify(event), { timeoutMs: 60_000 });
 * ```
 */
export interface Invoker {
  invoke(eventJson: string, opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<InvokeResult>;
  /** Frees what the invoker holds (worker threads, sockets). */
  close?(): Promise<void>;
}
