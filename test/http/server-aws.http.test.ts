import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ensureBucket, ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { emulatorClients, emulatorEnv } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { startServerProcess } from '../support/process.js';

const endpoints = awsEndpoints();

describe('http: npm start on the AWS backend (configured by environment)', () => {
  it('serves pushes and reads from DynamoDB + S3 when SLUICE_TABLE_* and SLUICE_BUCKET are set', async () => {
    const suffix = randomBytes(4).toString('hex');
    const tables = Object.fromEntries(TABLES.map((t) => [t, `srv-${suffix}-${t}`])) as Record<TableName, string>;
    const bucket = `srv-${suffix}`;
    const { dynamodb, s3 } = emulatorClients(endpoints);
    await Promise.all([ensureTables(dynamodb, tables), ensureBucket(s3, bucket)]);
    const env: Record<string, string> = {
      ...emulatorEnv(endpoints),
      SLUICE_BUCKET: bucket,
    };
    for (const t of TABLES) env[`SLUICE_TABLE_${t.toUpperCase()}`] = tables[t];
    const server = await startServerProcess(env);
    try {
      const health = await fetch(`${server.url}/health`);
      expect(await health.json()).toMatchObject({ status: 'healthy', backend: 'aws' });
      const push = await fetch(`${server.url}/api/v1/push`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          items: [
            { queue: 'aws-q', payload: { big: 'x'.repeat(20_000) }, transactionId: 't1' },
            { queue: 'aws-q', payload: 2 },
          ],
        }),
      });
      expect(push.status).toBe(201);
      const read = await fetch(`${server.url}/api/v1/queues/aws-q/partitions/Default/messages`);
      const body = (await read.json()) as { messages: { data: unknown }[] };
      expect(body.messages.map((m) => m.data)).toEqual([{ big: 'x'.repeat(20_000) }, 2]);
    } finally {
      await server.stop();
      dynamodb.destroy();
      s3.destroy();
    }
  });
});
