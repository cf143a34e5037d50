/**
 * Queue routes: create or reconfigure a queue (`/configure`, the whole option set), change some
 * options (PATCH), describe one (does it exist, with what options), delete one with everything
 * it holds.
 */
import * as queuesApi from '../../../contract/routes/queues.js';
import { SluiceError, notFound } from '../../core/errors.js';
import {
  explicitOptionNames,
  queueOptionsProblem,
  resolveQueueOptions,
  type QueueOptions,
} from '../../core/queue-options.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

/** Options as `/configure` answers them: every option, with its JSON type. */
function echoOptions(options: QueueOptions): Record<string, number | boolean> {
  return { ...options, leaseTime: options.leaseTime ?? 60 };
}

export const configure = implement(queuesApi.configure, ['config', 'queues'], async ({ body, services }) => {
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
});

export const deleteQueue = implement(queuesApi.deleteQueue, ['activity', 'deletion'], async ({ params, services }) => {
  const { existed } = await services.deletion.deleteQueue(params.queue);
  // Its per-queue series go with it (this process's; other instances forget theirs on restart).
  services.activity.forget(params.queue);
  return { statusCode: 200, body: { deleted: true, queue: params.queue, existed } };
});

export const describeQueue = implement(queuesApi.describeQueue, ['queues'], async ({ params, services }) => {
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
});

export const patchQueue = implement(queuesApi.patchQueue, ['config', 'queues'], async ({ params, body, services }) => {
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
});

export const queueRoutes: RouteDef[] = [configure, describeQueue, patchQueue, deleteQueue];
