// The client's reads of the admin API: Browse's requests, and GroupAdmin reading Queen's
// consumer-group rows (one per group and queue, or per group and partition for /lagging) as one
// entry per partition-lease group.
import { describe, expect, it } from 'vitest';
import { Browse, Sluice } from '../../client/index.js';
import { fakeFetch, jsonResponse } from '../support/fake-fetch.js';

const row = (name: string, queue: string, lag: number, seconds: number, kind = 'lease') => ({
  name,
  kind,
  queueName: queue,
  totalLag: lag,
  lagMessages: lag,
  maxLagSeconds: seconds,
  queues: [{ queue, partitions: 1, lagMessages: lag, lagSeconds: seconds }],
});

describe('client: admin reads', () => {
  it('merges Queen rows per group and leaves record-claim groups to their own API', async () => {
    const { fetch } = fakeFetch((req) =>
      req.url.pathname === '/api/v1/consumer-groups'
        ? jsonResponse(200, [row('a', 'q1', 2, 10), row('a', 'q2', 3, 50), row('w', 'q1', 9, 9, 'claim')])
        : jsonResponse(200, [
            {
              consumer_group: 'a',
              queue_name: 'q1',
              partition_name: 'p0',
              offset_lag: 1,
              time_lag_seconds: 70,
              kind: 'lease',
            },
            {
              consumer_group: 'a',
              queue_name: 'q1',
              partition_name: 'p1',
              offset_lag: 4,
              time_lag_seconds: 90,
              kind: 'lease',
            },
            {
              consumer_group: 'w',
              queue_name: 'q1',
              partition_name: 'p0',
              offset_lag: 4,
              time_lag_seconds: 90,
              kind: 'claim',
            },
          ]),
    );
    const sluice = new Sluice({ endpoint: 'http://x', fetch });
    expect(await sluice.groups.list()).toEqual([
      expect.objectContaining({
        name: 'a',
        lagMessages: 5,
        maxLagSeconds: 50,
        queues: [expect.objectContaining({ queue: 'q1' }), expect.objectContaining({ queue: 'q2' })],
      }),
    ]);
    expect(await sluice.groups.lagging(60)).toEqual([
      {
        name: 'a',
        lagMessages: 5,
        maxLagSeconds: 90,
        queues: [{ queue: 'q1', partitions: 2, lagMessages: 5, lagSeconds: 90 }],
      },
    ]);
  });

  it('Browse asks for queues, one queue and messages (payload on request)', async () => {
    const { fetch, calls } = fakeFetch((req) =>
      jsonResponse(200, req.url.pathname === '/api/v1/messages' ? { messages: [], mode: {} } : { queues: [] }),
    );
    const browse = new Browse(new Sluice({ endpoint: 'http://x', fetch }).http);
    await browse.queues({ namespace: 'shop' });
    await browse.queue('a b');
    await browse.messages({
      queue: 'q',
      partition: 'p',
      status: 'pending',
      from: new Date(0),
      limit: 5,
      payload: true,
    });
    expect(calls.map((c) => `${c.url.pathname}${c.url.search}`)).toEqual([
      '/api/v1/resources/queues?namespace=shop',
      '/api/v1/resources/queues/a%20b',
      '/api/v1/messages?queue=q&partition=p&status=pending&from=1970-01-01T00%3A00%3A00.000Z&limit=5&payload=true',
    ]);
  });
});
