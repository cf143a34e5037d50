/**
 * Record claims (docs/CLAIMS.md): a consumer group read as a shared work queue on one
 * partition. Every route lives under the group's path.
 */
import { z } from 'zod';
import { MAX_ACK_OFFSETS } from '../limits.js';
import { route } from '../route.js';
import { count, instant, isoTime, nameSchema, newNameSchema, payload } from '../schemas.js';

const GROUP_PATH = '/api/v1/queues/{queue}/partitions/{partition}/groups/{group}';

const GroupParams = z.object({
  queue: nameSchema('queue'),
  partition: nameSchema('partition'),
  group: nameSchema('consumer group'),
});
/** For the routes that register the group (poll, create): only a name a new group may have. */
const NewGroupParams = GroupParams.extend({ group: newNameSchema('consumer group') });
const DeadParams = GroupParams.extend({
  offset: z.coerce
    .number({ error: 'offset must be a number' })
    .int({ error: 'offset must be an integer' })
    .min(0, { error: 'offset must be 0 or more' })
    .max(Number.MAX_SAFE_INTEGER),
});
const offset = z
  .number({ error: 'offset must be a number' })
  .int('offset must be an integer')
  .min(0, 'offset must be 0 or more')
  .max(Number.MAX_SAFE_INTEGER);
const milliseconds = (what: string) =>
  z
    .number({ error: `${what} must be a number of milliseconds` })
    .int({ error: `${what} must be a whole number of milliseconds` })
    .min(0, { error: `${what} must be 0 or more` })
    .max(Number.MAX_SAFE_INTEGER);
const attempts = z
  .number({ error: 'attempts must be a number' })
  .int({ error: 'attempts must be a whole number' })
  .min(1, { error: 'attempts must be at least 1 (the delivery the claim came with)' });

const onQueue = { queues: ({ params }: { params: { queue: string } }) => [params.queue] };

/** A position answer: where the group stands, and whether the call moved it. */
const Position = z.object({ offset: count, moved: z.boolean() }).strict();

const PollBody = z
  .object({
    max: z.number({ error: 'max must be a number' }).int().min(1, 'max must be at least 1').optional(),
    waitMs: milliseconds('waitMs').optional(),
    visibilityMs: milliseconds('visibilityMs').min(1).optional(),
    consumer: nameSchema('consumer').optional(),
    session: z
      .string({ error: 'session must be a string' })
      .min(1)
      .max(128, 'session must be at most 128 characters')
      .optional(),
    reclaim: z.boolean({ error: 'reclaim must be true or false' }).optional(),
  })
  .strict()
  // Checked here as well as by the service: a poll registers its group, and a refusal must come first.
  .refine((b) => b.session === undefined || b.consumer !== undefined, {
    message: 'session needs a consumer name: a session belongs to a named member',
  })
  .refine((b) => !b.reclaim || b.session !== undefined, {
    message: 'reclaim needs a session token: only a new session takes back what the name held under older ones',
  })
  .default({});

export const claimPoll = route({
  method: 'POST',
  path: `${GROUP_PATH}/poll`,
  group: 'claims',
  summary: 'Claim up to `max` records (owed ones first), long-polling up to `waitMs`.',
  params: NewGroupParams,
  body: PollBody,
  access: { action: 'consume', ...onQueue },
  response: {
    200: z
      .object({
        records: z.array(
          z
            .object({
              offset: count,
              transactionId: z.string(),
              attempts: z.number().int().min(1).describe('Deliveries so far, this one included.'),
              skippedBefore: z.number().int().min(1).optional().describe('Records skipped just before this one.'),
              createdAt: isoTime,
              data: payload,
            })
            .strict(),
        ),
        capped: z.boolean().describe("The group's in-flight cap left no room for new records."),
      })
      .strict(),
  },
});

export const claimAck = route({
  method: 'POST',
  path: `${GROUP_PATH}/ack`,
  group: 'claims',
  summary: 'Finish a list of offsets in one write; answers the group position after it.',
  params: GroupParams,
  body: z
    .object({
      offsets: z
        .array(offset, { error: 'offsets must be an array of offsets' })
        .min(1, 'offsets must not be empty')
        .max(MAX_ACK_OFFSETS),
    })
    .strict(),
  access: { action: 'consume', ...onQueue },
  response: { 200: z.object({ committed: count }).strict() },
});

export const claimNack = route({
  method: 'POST',
  path: `${GROUP_PATH}/nack`,
  group: 'claims',
  summary: 'Hand a record back: owed at once, or after `delayMs`.',
  params: GroupParams,
  body: z.object({ offset, attempts: attempts.optional(), delayMs: milliseconds('delayMs').optional() }).strict(),
  access: { action: 'consume', ...onQueue },
  response: { 200: z.object({ offset: count, delayMs: count }).strict() },
});

export const claimExtend = route({
  method: 'POST',
  path: `${GROUP_PATH}/extend`,
  group: 'claims',
  summary: 'Make the claim named by its delivery (`attempts`) stand for `extendMs` from now.',
  params: GroupParams,
  body: z.object({ offset, attempts, extendMs: milliseconds('extendMs').min(1) }).strict(),
  access: { action: 'consume', ...onQueue },
  response: { 200: z.object({ visibleMs: count }).strict() },
});

export const claimDeadLetter = route({
  method: 'POST',
  path: `${GROUP_PATH}/dead-letter`,
  group: 'claims',
  summary: 'Give up on a record: list it as a dead letter and finish it.',
  params: GroupParams,
  body: z.object({ offset, attempts: attempts.optional() }).strict(),
  access: { action: 'consume', ...onQueue },
  response: { 200: z.object({ offset: count, deadLettered: z.literal(true), committed: count }).strict() },
});

export const claimListDeadLetters = route({
  method: 'GET',
  path: `${GROUP_PATH}/dead-letters`,
  group: 'claims',
  summary: "The group's dead-lettered offsets, ascending (`after`, `limit` page through them).",
  params: GroupParams,
  query: z.object({
    after: z.coerce.number().int().min(0).optional(),
    limit: z.coerce.number().int().min(1).max(10_000).optional(),
  }),
  access: { action: 'consume', ...onQueue },
  response: {
    200: z
      .object({
        offsets: z.array(count),
        next: count.optional().describe('Pass as `after` for the next page; absent on the last.'),
      })
      .strict(),
  },
});

export const claimRedrive = route({
  method: 'POST',
  path: `${GROUP_PATH}/dead-letters/{offset}/redrive`,
  group: 'claims',
  summary: 'Put a dead letter back: attempts reset, owed again; the cursor does not move back.',
  params: DeadParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.object({ offset: count, redriven: z.literal(true) }).strict() },
});

export const claimDiscard = route({
  method: 'DELETE',
  path: `${GROUP_PATH}/dead-letters/{offset}`,
  group: 'claims',
  summary: 'Stop tracking a dead letter (the record stays in the log).',
  params: DeadParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.object({ offset: count, discarded: z.literal(true) }).strict() },
});

/** Where a create or seek puts the group; `at` is checked (range included) before anything is written. */
const Start = z.union(
  [z.literal('earliest'), z.literal('latest'), z.object({ offset }).strict(), z.object({ at: instant }).strict()],
  { error: 'start must be "earliest", "latest", {"offset": n} or {"at": "<ISO-8601 instant>"}' },
);

export const claimCreate = route({
  method: 'PUT',
  path: GROUP_PATH,
  group: 'claims',
  summary: 'Create the group at earliest, latest, an offset or an instant; an existing group is left alone.',
  params: NewGroupParams,
  body: z
    .object({ start: Start.default('earliest') })
    .strict()
    .default({ start: 'earliest' }),
  access: { action: 'manage', ...onQueue },
  response: { 200: Position },
});

export const claimSeek = route({
  method: 'POST',
  path: `${GROUP_PATH}/seek`,
  group: 'claims',
  summary: 'Move the group (back to replay, forward to skip; to an offset or an instant); voids every standing claim.',
  params: GroupParams,
  body: z.object({ start: Start }).strict(),
  access: { action: 'manage', ...onQueue },
  response: { 200: Position },
});

export const claimDescribe = route({
  method: 'GET',
  path: GROUP_PATH,
  group: 'claims',
  summary: 'Where the group stands: committed, tail, lag, in-flight, owed and dead-letter counts.',
  params: GroupParams,
  access: { action: 'consume', ...onQueue },
  response: {
    200: z
      .object({
        committed: count,
        tail: count,
        lag: count,
        inFlight: count,
        owed: count,
        delayed: count,
        deadLetters: count,
      })
      .strict(),
  },
});

export const claimDelete = route({
  method: 'DELETE',
  path: GROUP_PATH,
  group: 'claims',
  summary: "Delete the group's position, claims and dead letters on this partition.",
  params: GroupParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.object({ existed: z.boolean() }).strict() },
});
