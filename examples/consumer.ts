/**
 * A Queen-style consumer: the `billing` group reads `orders` under partition leases, up to
 * 1,000 messages per pop, handed to the handler 10 at a time. The handler reports the orders
 * it refuses by transactionId (Lambda's `batchItemFailures`): only those are acked failed (the
 * queue's retry budget, then its dead-letter queue, with the error given here), and the rest of
 * the batch completes. A handler that throws instead has its batch retried one message at a
 * time, so again only the message that fails alone is failed. Messages can come more than once
 * (a redelivery after a failure or a crash), so billing is keyed by order id: idempotent.
 * The client renews the lease while a pop is worked through. Ctrl-C stops cleanly: the batch
 * in hand finishes and is acked, the rest of the pop is handed back.
 *
 *   SLUICE_ENDPOINT=http://127.0.0.1:6632 npx tsx examples/consumer.ts
 *   LIMIT=100 IDLE_MS=3000 npx tsx examples/consumer.ts   # stop after 100 messages or 3 s idle
 */
import { Sluice, type BatchResponse, type Message } from '@sluice/client';

interface Order {
  orderId: number;
  region: string;
  amount: number;
}

const sluice = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT, token: process.env.SLUICE_TOKEN });
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());

const billed = new Map<number, number>(); // order id → amount: a redelivered order is billed once
const stats = await sluice
  .queue(process.env.QUEUE ?? 'orders')
  .group(process.env.GROUP ?? 'billing')
  .batch(10)
  .consume<Order>(
    (messages: Message<Order>[]): BatchResponse => {
      const batchItemFailures = [];
      for (const m of messages) {
        if (m.data.amount < 0) {
          batchItemFailures.push({
            itemIdentifier: m.transactionId,
            error: `order ${m.data.orderId}: negative amount`,
          });
          continue;
        }
        billed.set(m.data.orderId, m.data.amount);
      }
      return { batchItemFailures };
    },
    {
      signal: stop.signal,
      concurrency: 3, // three workers: each leases a different partition
      renewLease: 10_000, // extend the lease every 10 s while a batch is being handled
      ...(process.env.LIMIT ? { limit: Number(process.env.LIMIT) } : {}),
      ...(process.env.IDLE_MS ? { idleMs: Number(process.env.IDLE_MS) } : {}),
      onError: (e, { phase }) => console.error(`${phase}: ${e instanceof Error ? e.message : String(e)}`),
    },
  );
const revenue = [...billed.values()].reduce((a, b) => a + b, 0);
console.log(`billed ${stats.completed} orders (${stats.failed} failed) for ${revenue}`);
