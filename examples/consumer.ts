/**
 * A Queen-style consumer: the `billing` group reads `orders` under partition leases, up to
 * 1,000 messages per pop, handed to the handler 10 at a time. The client acks what the
 * handler finished (completed, or failed when it throws: the queue's retry budget and
 * dead-letter queue apply) and renews the lease while a pop is worked through. Ctrl-C stops
 * cleanly: the batch in hand finishes and is acked, the rest of the pop is handed back.
 *
 *   SLUICE_ENDPOINT=http://127.0.0.1:6632 npx tsx examples/consumer.ts
 *   LIMIT=100 IDLE_MS=3000 npx tsx examples/consumer.ts   # stop after 100 messages or 3 s idle
 */
import { Sluice, type Message } from '@sluice/client';

interface Order {
  orderId: number;
  region: string;
  amount: number;
}

const sluice = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT, token: process.env.SLUICE_TOKEN });
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());

let revenue = 0;
const stats = await sluice
  .queue(process.env.QUEUE ?? 'orders')
  .group(process.env.GROUP ?? 'billing')
  .batch(10)
  .consume<Order>(
    (messages: Message<Order>[]) => {
      for (const m of messages) revenue += m.data.amount;
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
console.log(`billed ${stats.completed} orders (${stats.failed} failed) for ${revenue}`);
