/**
 * Queue routes: create or reconfigure a queue (`/configure`, the whole option set), change some
 * options (PATCH), describe one (does it exist, with what options), delete one with everything
 * it holds.
 */
import { z } from 'zod';
import { SluiceError, notFound } from '../../core/errors.js';
import { newNameProblem } from '../../core/names.js';
import {
  QueueOptionsInput,
  explicitOptionNames,
  queueOptionsProblem,
  resolveQueueOptions,
  type QueueOptions,
} from '../../core/queue-options.js';
import { defineRoute, type RouteDef } from '../route.js';
import { iso, nameSchema } from '../schemas.js';

const ConfigureBody = z.object({
  queue: z.string({ error: 'queue is required' }).superRefine((v, ctx) => {
    const problem = newNameProblem(v, 'queue');
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  namespace: z.string().max(256).nullish(),
  task: z.string().max(256).nullish(),
  options: QueueOptionsInput.nullish(),
});

/** Options as `/configure` answers them: every option, with its JSON type. */
function echoOptions(options: QueueOptions): Record<string, number | boolean> {
  return { ...options, leaseTime: options.leaseTime ?? 60 };
}

export const configure = defineRoute({
  method: 'POST',
  path: '/api/v1/configure',
  group: 'admin',
  summary: 'Create a queue or replace its whole configuration.',
  body: ConfigureBody,
  access: { action: 'manage', queues: ({ body }) => [body.queue] },
  async run({ body, services }) {
    // Claim options left out take the service-wide defaults (SLUICE_GROUP_*).
    const options = resolveQueueOptions(body.options ?? undefined, services.config.claimDefaults);
    const problem = queueOptionsProblem(options);
    if (problem) throw new SluiceError('invalid_request', problem);
    const { queue, defaultPartition } = await services.queues.configure({
      queue: body.queue,
      namespace: body.namespace,
      task: body.task,
      options,
      // Queen's defaults fill what the client left out; only what it set applies ttl and retryDelay.
      explicit: explicitOptionNames(body.options),
    });
    return {
      statusCode: 200,
      body: {
        configured: true,
        queueId: queue.queueId,
        partitionId: defaultPartition.id,
        queue: queue.name,
        namespace: queue.namespace,
        task: queue.task,
        options: echoOptions(queue.options),
      },
    };
  },
});

export const deleteQueue = defineRoute({
  method: 'DELETE',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary:
    'Delete a queue with its partitions, messages, cursors, claim state and DLQ rows (group registrations stay); deleted is true even when it did not exist.',
  params: z.object({ queue: nameSchema('queue') }),
  access: { action: 'manage', queues: ({ params }) => [params.queue] },
  async run({ params, services }) {
    const { existed } = await services.deletion.deleteQueue(params.queue);
    // Its per-queue series go with it (this process's; other instances forget theirs on restart).
    services.activity.forget(params.queue);
    return { statusCode: 200, body: { deleted: true, queue: params.queue, existed } };
  },
});

export const describeQueue = defineRoute({
  method: 'GET',
  path: '/api/v1/queues/{queue}',
  group: 'admin',
  summary:
    'Whether a queue exists (404 when it does not), with its options; `configured` is false for a queue a push created.',
  params: z.object({ queue: nameSchema('queue') }),
  access: { action: 'consume', queues: ({ params }) => [params.queue] },
  async run({ params, services }) {
    const q = await services.queues.getQueue(params.queue);
    if (!q) throw notFound(`queue ${JSON.stringify(params.queue)} does not exist`, { missing: 'queue' });
    return {
      statusCode: 200,
      body: {
        queue: q.name,
        queueId: q.queueId,
        namespace: q.namespace || null,
        task: q.task || null,
        createdAt: iso(q.createdAt),
        configured: q.configured,
        options: echoOptions(q.options),
        explicitOptions: q.explicit ?? [],
      },
    };
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

export const patchQueue = defineRoute({
  method: 'PATCH',
  path: '/api/v1/resources/queues/{queue}',
  group: 'admin',
  summary:
    'Change some options of an existing queue (the rest stay; null puts one back to its default); 404 when the queue does not exist.',
  params: z.object({ queue: nameSchema('queue') }),
  body: PatchBody,
  access: { action: 'manage', queues: ({ params }) => [params.queue] },
  async run({ params, body, services }) {
    const q = await services.queues.patch(params.queue, body, services.config.claimDefaults);
    return {
      statusCode: 200,
      body: {
        configured: true,
        queueId: q.queueId,
        queue: q.name,
        namespace: q.namespace,
        task: q.task,
        options: echoOptions(q.options),
        explicitOptions: q.explicit ?? [],
      },
    };
  },
});

export const queueRoutes: RouteDef[] = [configure, describeQueue, patchQueue, deleteQueue];
