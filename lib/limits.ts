/**
 * Request limits a deployment on AWS can honour, and the defaults the stack sets.
 *
 * API Gateway hands a request to Lambda as one JSON event with the body inside it as a JSON
 * string, and Lambda refuses an event of 6,291,456 bytes or more before the handler runs
 * (API Gateway then answers 413 `{"message":"Request Too Long"}` itself). Escaping can make
 * a body grow inside the event: `"` and `\` double, and a control character becomes `\u00XX`,
 * six bytes for one. So the body limit the handlers enforce (`SLUICE_MAX_BODY_BYTES`) must
 * leave room for the worst case, or Sluice's own 413 `{error, code}` would never be seen.
 *
 * @example
 * ```ts
 * worstCaseEventBytes(AWS_DEFAULT_MAX_BODY_BYTES) < LAMBDA_MAX_EVENT_BYTES; // true
 * checkBodyLimit(6 * 1024 * 1024); // throws: the largest body that can reach a function is ...
 * ```
 */

/** Lambda refuses a synchronous invocation whose event is this many bytes or more. */
export const LAMBDA_MAX_EVENT_BYTES = 6_291_456;
/**
 * Room for everything in the event but the body, escaped: the request context, up to 10 KiB
 * of request line and headers (HTTP API's limit, which may grow six-fold escaped), the query
 * string, the authorizer's context or JWT claims.
 */
export const EVENT_ENVELOPE_BYTES = 128 * 1024;
/** Most a body byte can grow escaped into the event (a control character as `\u00XX`). */
export const WORST_CASE_ESCAPE_FACTOR = 6;

/** Upper bound of the event a body of `bodyBytes` can produce. */
export const worstCaseEventBytes = (bodyBytes: number): number =>
  bodyBytes * WORST_CASE_ESCAPE_FACTOR + EVENT_ENVELOPE_BYTES;

/**
 * The body limit the stack sets by default: every body up to it reaches the function whatever
 * it holds, so Sluice answers every body over it with its own 413.
 */
export const AWS_DEFAULT_MAX_BODY_BYTES = 1_000_000;
/**
 * The most `maxBodyBytes` may be: a body of plain text (nothing to escape) this large still
 * fits in the event. Above {@link AWS_DEFAULT_MAX_BODY_BYTES}, bodies that escape badly may
 * exceed the event limit and get API Gateway's 413 instead of Sluice's.
 */
export const AWS_MAX_BODY_BYTES = LAMBDA_MAX_EVENT_BYTES - 1 - EVENT_ENVELOPE_BYTES;

/**
 * Most messages per push on AWS by default. Each message with a transactionId is reserved by
 * its own conditional write, all under one DynamoDB partition key (the partition's id), which
 * DynamoDB serves at up to 1,000 write units a second: 1,000 keeps a push near a second.
 */
export const AWS_DEFAULT_MAX_PUSH_ITEMS = 1000;
/** The most `maxPushItems` may be on AWS (ten seconds of one partition key's writes). */
export const AWS_MAX_PUSH_ITEMS = 10_000;

/**
 * Stage throttling by default: steady requests per second, and the burst (the token bucket's
 * size, half the rate as in API Gateway's own account default). See docs/DEPLOYING.md#quotas.
 */
export const DEFAULT_THROTTLE = { rateLimit: 1000, burstLimit: 500 } as const;

/** Throws unless `bytes` is a body limit a deployment can honour (1 KiB to {@link AWS_MAX_BODY_BYTES}). */
export function checkBodyLimit(bytes: number, what = 'maxBodyBytes'): void {
  if (!Number.isInteger(bytes) || bytes < 1024 || bytes > AWS_MAX_BODY_BYTES)
    throw new Error(
      `${what} must be a whole number of bytes from 1024 to ${AWS_MAX_BODY_BYTES} (got ${bytes}): the ` +
        `largest body that can reach a function, since Lambda refuses events of ` +
        `${LAMBDA_MAX_EVENT_BYTES} bytes or more`,
    );
}

/** Throws unless `throttle` is a stage limit API Gateway takes: a rate above 0, a whole burst of at least 1. */
export function checkThrottle(throttle: { rateLimit: number; burstLimit: number }, what = 'throttle'): void {
  if (!Number.isFinite(throttle.rateLimit) || throttle.rateLimit <= 0)
    throw new Error(`${what}: the rate must be a number of requests per second above 0 (got ${throttle.rateLimit})`);
  if (!Number.isInteger(throttle.burstLimit) || throttle.burstLimit < 1)
    throw new Error(`${what}: the burst must be a whole number of requests from 1 (got ${throttle.burstLimit})`);
}

/** Throws unless `items` is a per-push cap for AWS (1 to {@link AWS_MAX_PUSH_ITEMS}). */
export function checkPushItems(items: number, what = 'maxPushItems'): void {
  if (!Number.isInteger(items) || items < 1 || items > AWS_MAX_PUSH_ITEMS)
    throw new Error(`${what} must be a whole number from 1 to ${AWS_MAX_PUSH_ITEMS} (got ${items})`);
}
