/**
 * A producer: pushes orders to the `orders` queue, one partition per region, in batches.
 * Each order's id is its transactionId, so running this twice stores nothing twice.
 *
 *   SLUICE_ENDPOINT=http://127.0.0.1:6632 npx tsx examples/producer.ts
 *   COUNT=1000 QUEUE=orders npx tsx examples/producer.ts
 */
import { Sluice } from '@sluice/client';

const sluice = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT, token: process.env.SLUICE_TOKEN });
const queueName = process.env.QUEUE ?? 'orders';
const count = Number(process.env.COUNT ?? 100);
const regions = ['eu', 'us', 'ap'];

// Optional: configure the queue (leases of 30 s, 3 failed attempts before the dead-letter queue).
await sluice.queue(queueName).config({ leaseTime: 30, retryLimit: 3 }).create();

const totals = { queued: 0, duplicate: 0 };
for (const region of regions) {
  const orders = Array.from({ length: count }, (_, i) => i)
    .filter((i) => regions[i % regions.length] === region)
    .map((i) => ({ transactionId: `order-${i}`, data: { orderId: i, region, amount: (i * 7) % 100 } }));
  // One call; the client splits it into requests under the server's limits.
  const results = await sluice.queue(queueName).partition(region).push(orders);
  for (const r of results) if (r.status !== 'failed') totals[r.status]++;
}
console.log(`pushed ${count} orders to ${queueName}: ${totals.queued} queued, ${totals.duplicate} duplicate`);
