/**
 * A target's consumer as a handler module: the local server runs it as the consumer of group
 * `billing` on queue `orders`, one event per batch, each in a worker thread, and settles the
 * batch from what it answers (docs/TARGETS.md, "Develop a consumer locally"). An order without
 * an amount fails alone (ReportBatchItemFailures): the orders before it are done, it and the
 * ones after it come again in order, and after its retries it goes to the dead letters.
 *
 *   npm start -- --target 'orders/billing=./examples/target-handler.ts?functionResponseTypes=ReportBatchItemFailures&maximumRetryAttempts=2'
 *
 * What it prints shows on the server's stderr as `[target target-handler.ts] …`. Edits take
 * effect when the server is started again.
 */
import type { TargetAnswerInput, TargetEvent } from '@sluice/client';

interface Order {
  id: number;
  amount?: number;
}

/** Stands in for the real work (a payment API, a database write). */
async function bill(id: number, amount: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1));
  console.log(`billed order ${id}: ${amount}`);
}

export const handler = async (event: TargetEvent): Promise<TargetAnswerInput> => {
  for (const record of event.records) {
    const order = record.payload as Order;
    if (typeof order.amount !== 'number') {
      // A lease target's records come in order: this one and all after it are sent again.
      const error = `order ${order.id} has no amount (attempt ${record.attempt})`;
      console.error(error);
      return { batchItemFailures: [{ itemIdentifier: record.transactionId, error }] };
    }
    await bill(order.id, order.amount);
  }
  return { batchItemFailures: [] };
};
