// `sluice token create|list|revoke` against a real token table (DynamoDB Local), as an operator
// runs them with their own AWS credentials; the tokens it makes are the ones the authorizer
// checks (TokenStore.verify).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenStore } from '../../server/auth/token-store.js';
import { DynamoItemStore } from '../../server/storage/aws/item-store.js';
import { ensureTables } from '../../server/storage/aws/index.js';
import { TABLES, type TableName } from '../../server/storage/port.js';
import { emulatorClients, emulatorEnv } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { sluiceCli } from '../support/cli.js';

describe('cli: sluice token on an auth=tokens table', () => {
  const name = `sluice-test-tokens-${randomUUID().slice(0, 8)}`;
  const tables = Object.fromEntries(TABLES.map((t) => [t, name])) as Record<TableName, string>;
  let env: Record<string, string>;
  let store: TokenStore;
  let close: () => void;

  beforeAll(async () => {
    const { dynamodb, s3 } = emulatorClients(awsEndpoints());
    s3.destroy();
    await ensureTables(dynamodb, { meta: name } as Record<TableName, string>);
    env = emulatorEnv(awsEndpoints());
    store = new TokenStore(new DynamoItemStore(dynamodb, tables, 1));
    close = () => dynamodb.destroy();
  });
  afterAll(() => close());

  it('creates a token the authorizer accepts, lists it without the secret, and revokes it', async () => {
    const created = await sluiceCli(['token', 'create', 'billing-service', '-d', 'billing prod', '--table', name], {
      env,
    });
    expect({ code: created.code, stderr: created.stderr }).toMatchObject({ code: 0 });
    const token = created.stdout.trim();
    expect(token).toMatch(/^sluice_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/shown once/);
    const info = await store.verify(token);
    expect(info).toMatchObject({ principal: 'billing-service', description: 'billing prod' });

    const listed = await sluiceCli(['--json', 'token', 'list', '--table', name], { env });
    expect({ code: listed.code, stderr: listed.stderr }).toMatchObject({ code: 0 });
    const rows = JSON.parse(listed.stdout) as { id: string; principal: string }[];
    expect(rows).toEqual([expect.objectContaining({ id: info?.id, principal: 'billing-service' })]);
    expect(listed.stdout).not.toContain(token);

    const revoked = await sluiceCli(['token', 'revoke', info?.id ?? '', '--table', name], { env });
    expect({ code: revoked.code, stderr: revoked.stderr }).toMatchObject({ code: 0 });
    expect(await store.verify(token)).toBeUndefined();
    const again = await sluiceCli(['token', 'revoke', info?.id ?? '', '--table', name], { env });
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/no token with id/);
  });

  it('finds the table in the stack outputs, and stores a given secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-token-'));
    const outputs = join(dir, 'cdk-outputs.json');
    writeFileSync(outputs, JSON.stringify({ Sluice: { ApiUrl: 'https://x.example/', TokenTableName: name } }));
    const secret = 'moved-from-the-local-grants-file';
    const r = await sluiceCli(['token', 'create', 'alice', '--secret', secret, '--outputs', outputs], { env });
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
    expect((await store.verify(secret))?.principal).toBe('alice');
  });

  it('refuses a principal grants cannot match, and says where the table is missing', async () => {
    const bad = await sluiceCli(['token', 'create', 'a*b', '--table', name], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/cannot create a token for "a\*b"/);
    const dir = mkdtempSync(join(tmpdir(), 'sluice-token-'));
    const none = await sluiceCli(['token', 'list'], { env, cwd: dir });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--table/);
  });
});
