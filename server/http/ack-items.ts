/**
 * The acknowledgement item `/ack`, `/ack/batch` and `ack-and-pop` take: a message by its
 * partition id and transactionId, how it ended, and the lease it was delivered under.
 */
import { z } from 'zod';
import { parseAckStatus } from '../core/leases.js';

const statusSchema = z
  .unknown()
  .optional()
  .superRefine((v, ctx) => {
    if (parseAckStatus(v) === undefined)
      ctx.addIssue({
        code: 'custom',
        message: `status must be completed, success, failed, retry or dlq (got ${JSON.stringify(v)})`,
      });
  })
  .transform((v) => parseAckStatus(v) ?? 'completed');

/** One ack item, as `/ack` and `/ack/batch` take it. */
export const AckItemSchema = z.object({
  transactionId: z.string({ error: 'transactionId is required' }).min(1).max(256),
  partitionId: z.string({ error: 'partitionId is required' }).min(1).max(64),
  status: statusSchema,
  error: z.string().max(8192).nullish(),
  leaseId: z.string().max(4096).nullish(),
});
