/**
 * `GET /api/v1/messages`: browse messages without consuming them (Queen's Messages view,
 * `sluice peek`): the newest messages in a time window across the queues the caller may
 * consume, with Queen's status for the groups reading each partition. With `payload=true`
 * (a Sluice addition) each carries its payload as `data`.
 */
import * as messagesApi from '../../../contract/routes/messages.js';
import { rawPayload } from '../../codec/json-writer.js';
import { openMessage } from '../../service/log/segments.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

export const browseMessages = implement(
  messagesApi.browseMessages,
  ['admin', 'clock'],
  async ({ query, services, allowed }) => {
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
);

export const messageBrowseRoutes: RouteDef[] = [browseMessages];
