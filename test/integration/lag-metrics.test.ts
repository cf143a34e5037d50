// The lag the maintenance function publishes (ConsumerLag, OldestUnconsumedAgeSeconds) covers
// both kinds of consumer group, on both storage backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportLag } from '../../server/service/maintenance/lag-metrics.js';
import type { Storage } from '../../server/storage/port.js';
import { testBackends } from '../support/backends.js';
import { json, TestClock, testServices } from '../support/services.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

describe.each(backends)('integration: lag metrics on $name', (backend) => {
  let storage: Storage;
  let cleanup: () => Promise<void>;
  beforeAll(async () => ({ storage, cleanup } = await backend.newStorage()));
  afterAll(() => cleanup());

  it('publishes lag and the oldest unconsumed age per group and queue, for lease and record-claim groups', async () => {
    const clock = new TestClock();
    const svc = testServices(storage, { clock });
    await svc.pushes.push([1, 2, 3].map((n) => ({ queue: 'lagq', partition: 'p1', payload: json(n) })));
    clock.advance(30_000);
    await svc.pushes.push([4, 5].map((n) => ({ queue: 'lagq', partition: 'p2', payload: json(n) })));
    // A lease group that finished one message of p1; a claim group that finished one of p1.
    const popped = await svc.leasePops.pop({
      queue: 'lagq',
      group: 'billing',
      partition: 'p1',
      batch: 1,
      partitions: 1,
      autoAck: false,
      wait: false,
      timeoutMs: 0,
    });
    const m = popped!.messages[0]!;
    await svc.leaseAcks.ack(
      [
        {
          index: 0,
          partitionId: m.partitionId,
          transactionId: m.transactionId,
          status: 'completed',
          leaseId: popped!.leaseId,
        },
      ],
      'billing',
    );
    await svc.claims.create('lagq', 'p1', 'workers', 'earliest');
    const got = await svc.claims.poll('lagq', 'p1', 'workers', { max: 1, principal: 'p' });
    await svc.claims.ack(
      'lagq',
      'p1',
      'workers',
      got.records.map((r) => r.offset),
    );
    clock.advance(90_000);

    const gauges: { name: string; value: number; dims?: Record<string, string> | undefined }[] = [];
    const inner = svc.telemetry;
    const report = await reportLag({
      ...svc,
      telemetry: { ...inner, gauge: (name, value, dims) => void gauges.push({ name, value, dims }) },
    });
    const of = (group: string) =>
      Object.fromEntries(
        gauges.filter((g) => g.dims?.group === group && g.dims.queue === 'lagq').map((g) => [g.name, g.value]),
      );
    // 2 left on p1 (pushed 120 s ago) and 2 on p2 (90 s ago).
    expect(of('workers')).toEqual({ ConsumerLag: 4, OldestUnconsumedAgeSeconds: 120 });
    expect(of('billing')).toMatchObject({ ConsumerLag: 4 });
    expect(report.groups).toBeGreaterThanOrEqual(2);
    expect(report.maxLagMessages).toBe(4);
  });
});
