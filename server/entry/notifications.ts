import type { DynamoDBStreamEvent } from 'aws-lambda';
import { answerSocketEvent, type SocketEvent, type SocketResult } from '../http/notification-socket.js';
import { services } from '../service/runtime.js';

/**
 * Lambda entry for wake-up notifications (docs/DEPLOYING.md, "Idle consumers"): the WebSocket
 * API's routes, and the notifier fed by DynamoDB Streams on the `log` table (only sequencer
 * writes pass the event-source filter). One function: both sides touch the same few `meta`
 * items, and one cached partition → queue map serves the notifier.
 */
export async function handler(event: DynamoDBStreamEvent | SocketEvent): Promise<SocketResult | { woken: number }> {
  const svc = await services();
  try {
    if ('Records' in event) {
      const pks = event.Records.map((r) => r.dynamodb?.Keys?.['pk']?.S).filter((pk): pk is string => pk !== undefined);
      const { queues, woken, dropped } = await svc.notifications.onSequencerWrites(pks);
      // DEBUG: one line per stream batch is up to one per push, ~200 bytes of ingestion each.
      svc.telemetry.debug('notifier', { records: event.Records.length, queues, woken, dropped });
      return { woken };
    }
    return await answerSocketEvent(svc, event);
  } finally {
    // WakeUps and WakeUpsDropped (EMF): the dashboard's notifier graph.
    svc.telemetry.flush?.();
  }
}
