/**
 * Queue options on the wire: what `/configure` and PATCH take (`QueueOptionsInput`, every
 * option nullable: null puts it back to its default) and how answers echo the whole set
 * (`QueueOptionsAnswer`). Their meaning is the server's (`server/core/queue-options.ts`).
 */
import { z } from 'zod';

const DAY = 86_400;
const int = (min: number, max: number) => z.number().int().min(min).max(max);
// null means "not set": the option goes back to its default, as when it is left out.
const opt = <T extends z.ZodType>(t: T) => t.nullish();

/** The `options` object of `POST /api/v1/configure`. Unknown keys are refused, not ignored. */
export const QueueOptionsInput = z
  .object({
    priority: opt(int(-1_000_000, 1_000_000)),
    leaseTime: opt(int(1, 12 * 3600)),
    retryLimit: opt(int(0, 1_000)),
    retryDelay: opt(int(0, DAY * 1000)),
    maxSize: opt(int(0, Number.MAX_SAFE_INTEGER)),
    ttl: opt(int(0, 365 * DAY)),
    deadLetterQueue: opt(z.boolean()),
    dlqAfterMaxRetries: opt(z.boolean()),
    delayedProcessing: opt(int(0, 365 * DAY)),
    windowBuffer: opt(int(0, DAY)),
    retentionSeconds: opt(int(0, 10 * 365 * DAY)),
    completedRetentionSeconds: opt(int(0, 10 * 365 * DAY)),
    retentionEnabled: opt(z.boolean()),
    encryptionEnabled: opt(z.boolean()),
    maxWaitTimeSeconds: opt(int(0, 365 * DAY)),
    dedupWindowSeconds: opt(int(0, 7 * DAY)),
    visibilityTimeoutMs: opt(int(1, 43_200_000)),
    maxAttempts: opt(int(1, 1_000)),
    maxInFlight: opt(int(1, 1_000_000)),
    maxVisibilityMs: opt(int(1, 43_200_000)),
  })
  .strict();
export type QueueOptionsInput = z.infer<typeof QueueOptionsInput>;

const n = z.number().int();

/** Every option as an answer echoes it (the lease time as pops use it: 60 s when none is stored). */
export const QueueOptionsAnswer = z
  .object({
    priority: n,
    leaseTime: n,
    retryLimit: n,
    retryDelay: n,
    maxSize: n,
    ttl: n,
    deadLetterQueue: z.boolean(),
    dlqAfterMaxRetries: z.boolean(),
    delayedProcessing: n,
    windowBuffer: n,
    retentionSeconds: n,
    completedRetentionSeconds: n,
    retentionEnabled: z.boolean(),
    encryptionEnabled: z.boolean(),
    maxWaitTimeSeconds: n,
    dedupWindowSeconds: n,
    visibilityTimeoutMs: n,
    maxAttempts: n,
    maxInFlight: n,
    maxVisibilityMs: n,
  })
  .strict();

/** The names of the options, as `explicitOptions` lists the ones a client set. */
export const QueueOptionName = z.enum(Object.keys(QueueOptionsInput.shape) as [keyof QueueOptionsInput]);
