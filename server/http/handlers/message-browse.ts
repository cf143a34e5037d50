/**
 * `GET /api/v1/messages`: browse messages without consuming them (Queen's Messages view,
 * `sluice peek`): the newest messages in a time window across the queues the caller may
 * consume, with Queen's status for the groups reading each partition. With `payload=true`
 * (a Sluice addition) each carries its payload as `data`.
 */
import { z } from 'zod';
import { rawPayload } from '../../codec/json-writer.js';
import { openMessage } from '../../service/log/segments.js';
import { defineRoute, type RouteDef } from '../route.js';
import { lenientInteger, optionalFilter, optionalInstant } from '../admin-query.js';
import { iso } from '../schemas.js';

const STATUSES = ['pending', 'processing', 'completed', 'dead_letter'] as const;

export const browseMessages = defineRoute({
  method: 'GET',
  path: '/api/v1/messages',
  group: 'admin',
  summary:
    'Newest messages first in a window (default: the last hour), without consuming them: status per message, payload with payload=true.',
  query: z.object({
    queue: optionalFilter,
    partition: optionalFilter,
    status: z
      .string()
      .optional()
      .transform((v) => STATUSES.find((s) => s === v)),
    from: optionalInstant,
    to: optionalInstant,
    // Queen's name for the namespace filter here (not `namespace`).
    ns: optionalFilter,
    task: optionalFilter,
    limit: lenientInteger(1, 1000, 200),
    offset: lenientInteger(0, 100_000, 0),
    payload: z
      .string()
      .optional()
      .transform((v) => v === 'true' || v === '1'),
  }),
  access: { action: 'consume', queues: ({ query }) => [query.queue] },
  async run({ query, services, allowed }) {
    const now = services.clock();
    // Queen rounds the default end up to the next minute.
    const to = query.to ?? Math.ceil((now + 1) / 60_000) * 60_000;
    const from = query.from ?? now - 3_600_000;
    const queues = await services.admin.stats.listQueues({
      visible: (q) => allowed(q) && (query.queue === undefined || q === query.queue),
      namespace: query.ns,
      task: query.task,
    });
    const r = await services.admin.browser.browse(queues, {
      window: { from, to },
      partition: query.partition,
      status: query.status,
      limit: query.limit,
      offset: query.offset,
    });
    const messages = await Promise.all(
      r.messages.map(async (m) => {
        const groups = m.partition.lanes.length;
        const row: Record<string, unknown> = {
          id: m.id,
          transactionId: m.transactionId,
          partitionId: m.partition.ref.id,
          queuePath: `${m.queue.name}/${m.partition.ref.name}`,
          queue: m.queue.name,
          partition: m.partition.ref.name,
          namespace: m.queue.namespace,
          task: m.queue.task,
          status: m.status,
          queueStatus: m.status,
          busStatus: { consumedBy: m.consumedBy, totalGroups: groups },
          traceId: m.traceId,
          producerSub: null,
          queuePriority: m.queue.options.priority,
          createdAt: iso(m.createdAt),
          leaseExpiresAt: iso(m.leaseExpiresAt),
          offset: m.offset,
        };
        if (query.payload) {
          const opened = await openMessage(services.admin.browser.cipher, m);
          row.data = rawPayload(opened.payload);
        }
        return row;
      }),
    );
    return { statusCode: 200, raw: true, body: { messages, mode: r.mode } };
  },
});

export const messageBrowseRoutes: RouteDef[] = [browseMessages];
