/**
 * Queues: create or reconfigure one (`/configure`, the whole option set), change some options
 * (PATCH), describe one (does it exist, with what options), delete one with everything it holds.
 */
import { z } from 'zod';
import { newNameProblem } from '../names.js';
import { QueueOptionName, QueueOptionsAnswer, QueueOptionsInput } from '../queue-options.js';
import { route } from '../route.js';
import { isoTimeOrNull, nameSchema } from '../schemas.js';

const QueueParams = z.object({ queue: nameSchema('queue') });
const onQueue = { queues: ({ params }: { params: { queue: string } }) => [params.queue] };

const ConfigureBody = z.object({
  queue: z.string({ error: 'queue is required' }).superRefine((v, ctx) => {
    const problem = newNameProblem(v, 'queue');
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  namespace: z.string().max(256).nullish(),
  task: z.string().max(256).nullish(),
  options: QueueOptionsInput.nullish(),
});

export const configure = route({
  method: 'POST',
  path: '/api/v1/configure',
  group: 'admin',
  summary: 'Create a queue or replace its whole configuration.',
  body: ConfigureBody,
  access: { action: 'manage', queues: ({ body }) => [body.queue] },
  response: {
    200: z
      .object({
        configured: z.literal(true),
        queueId: z.string(),
        partitionId: z.string().describe('The default partition.'),
        queue: z.string(),
        namespace: z.string(),
        task: z.string(),
        options: QueueOptionsAnswer,
      })
      .strict(),
  },
});

export const deleteQueue = route({
  method: 'DELETE',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary:
    'Delete a queue with its partitions, messages, cursors, claim state and DLQ rows (group registrations stay); deleted is true even when it did not exist.',
  params: QueueParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.object({ deleted: z.literal(true), queue: z.string(), existed: z.boolean() }).strict() },
});

export const describeQueue = route({
  method: 'GET',
  path: '/api/v1/queues/{queue}',
  group: 'admin',
  summary:
    'Whether a queue exists (404 when it does not), with its options; `configured` is false for a queue a push created.',
  params: QueueParams,
  access: { action: 'consume', ...onQueue },
  response: {
    200: z
      .object({
        queue: z.string(),
        queueId: z.string(),
        namespace: z.string().nullable(),
        task: z.string().nullable(),
        createdAt: isoTimeOrNull,
        configured: z.boolean(),
        options: QueueOptionsAnswer,
        explicitOptions: z.array(QueueOptionName).describe('The options a client set (the rest are defaults).'),
      })
      .strict(),
  },
});

const PatchBody = z
  .object({
    namespace: z.string().max(256).nullish(),
    task: z.string().max(256).nullish(),
    options: QueueOptionsInput.nullish(),
  })
  .strict()
  .refine((b) => b.namespace !== undefined || b.task !== undefined || Object.keys(b.options ?? {}).length > 0, {
    message: 'name at least one option (or namespace, task) to change',
  });

export const patchQueue = route({
  method: 'PATCH',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary:
    'Change some options of an existing queue (the rest stay; null puts one back to its default); 404 when the queue does not exist.',
  params: QueueParams,
  body: PatchBody,
  access: { action: 'manage', ...onQueue },
  response: {
    200: z
      .object({
        configured: z.literal(true),
        queueId: z.string(),
        queue: z.string(),
        namespace: z.string(),
        task: z.string(),
        options: QueueOptionsAnswer,
        explicitOptions: z.array(QueueOptionName),
      })
      .strict(),
  },
});
