// Bearer tokens of `auth=tokens` deployments, on the embedded backend: the store (create,
// list, verify, revoke) and the Lambda authorizer over it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToken, makeTokenAuthorizer } from '../../server/auth/authorizer.js';
import {
  hashToken,
  principalProblem,
  TOKEN_INDEX_PK,
  TOKEN_PK_PREFIX,
  TokenStore,
} from '../../server/auth/token-store.js';
import { principalOf } from '../../server/http/route.js';
import type { HttpEvent } from '../../server/http/types.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { crashing } from '../support/storage.js';

let dir: string;
let storage: Storage;
let tokens: TokenStore;
let now = 1_700_000_000_000;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-tokens-'));
  storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  tokens = new TokenStore(storage.items, () => now);
});
afterAll(async () => {
  await storage?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('integration: token store', () => {
  it('create shows the token once; only its hash is stored; verify maps it to the principal', async () => {
    const created = await tokens.create('billing-service', { description: 'billing, prod' });
    expect(created).toMatchObject({ principal: 'billing-service', createdAt: now, description: 'billing, prod' });
    expect(created.token).toMatch(/^sluice_[A-Za-z0-9_-]{43}$/);
    expect(created.id).toMatch(/^[0-9a-f]{16}$/);
    const item = await storage.items.get('meta', { pk: `${TOKEN_PK_PREFIX}${hashToken(created.token)}`, sk: 'token' });
    expect(item?.attrs).toEqual({
      id: created.id,
      principal: 'billing-service',
      createdAt: now,
      description: 'billing, prod',
    });
    // The secret is nowhere in the table.
    const index = await storage.items.query('meta', TOKEN_INDEX_PK);
    expect(JSON.stringify([item, index])).not.toContain(created.token);
    expect(await tokens.verify(created.token)).toEqual({
      id: created.id,
      principal: 'billing-service',
      createdAt: now,
      description: 'billing, prod',
    });
    expect(await tokens.verify(`${created.token}x`)).toBeUndefined();
    expect(await tokens.verify('')).toBeUndefined();
  });

  it('list shows ids, principals and creation times, never a secret', async () => {
    now += 1000;
    const a = await tokens.create('orders-writer');
    const listed = await tokens.list();
    expect(listed.map((t) => t.principal).sort()).toEqual(['billing-service', 'orders-writer']);
    expect(listed.find((t) => t.id === a.id)).toEqual({ id: a.id, principal: 'orders-writer', createdAt: now });
    expect(JSON.stringify(listed)).not.toContain('sluice_');
    expect(JSON.stringify(listed)).not.toContain(hashToken(a.token));
  });

  it('revoke removes the token (verify refuses it) and answers false for an unknown id', async () => {
    const t = await tokens.create('temp');
    expect(await tokens.revoke(t.id)).toBe(true);
    expect(await tokens.verify(t.token)).toBeUndefined();
    expect((await tokens.list()).map((x) => x.id)).not.toContain(t.id);
    expect(await tokens.revoke(t.id)).toBe(false);
    expect(await tokens.revoke('no-such-id')).toBe(false);
  });

  it('stores a given token (moving the local grants file over), once; refuses short ones and bad principals', async () => {
    const given = 'a-long-random-secret-of-16-or-more-characters';
    const t = await tokens.create('legacy', { token: given });
    expect(t.token).toBe(given);
    expect((await tokens.verify(given))?.principal).toBe('legacy');
    await expect(tokens.create('someone-else', { token: given })).rejects.toThrow(/stored already/);
    await expect(tokens.create('x', { token: 'short' })).rejects.toThrow(/16 to 512 characters/);
    for (const bad of ['', 'with space', 'tab\there', 'star*', 'x'.repeat(257)]) {
      expect(principalProblem(bad), `${JSON.stringify(bad)}`).toBeDefined();
      await expect(tokens.create(bad)).rejects.toThrow(/cannot create a token/);
    }
    expect(principalProblem('arn:aws:iam::111122223333:role/x')).toBeUndefined();
  });

  it('a create that fails leaves nothing behind (token and listing are one transaction)', async () => {
    const failing = new TokenStore(crashing(storage, () => true).items, () => now);
    const before = await tokens.list();
    await expect(failing.create('crashy')).rejects.toThrow(/simulated crash/);
    expect(await tokens.list()).toEqual(before);
  });
});

describe('integration: token authorizer', () => {
  const authorize = makeTokenAuthorizer(async () => tokens);

  it("answers the token's principal in the context the route handlers read", async () => {
    const t = await tokens.create('reader');
    expect(await authorize({ headers: { authorization: `Bearer ${t.token}` } })).toEqual({
      isAuthorized: true,
      context: { principal: 'reader', tokenId: t.id },
    });
    // API Gateway puts a simple response's context under requestContext.authorizer.lambda,
    // where the route handlers take the caller from (and the grants apply to it).
    const result = await authorize({ headers: { authorization: `Bearer ${t.token}` } });
    const event = { requestContext: { authorizer: { lambda: result.isAuthorized ? result.context : {} } } };
    expect(principalOf(event as unknown as HttpEvent)).toBe('reader');
    // The identity source, when headers are not passed on.
    expect(await authorize({ identitySource: [`bearer ${t.token}`] })).toMatchObject({ isAuthorized: true });
  });

  it('refuses unknown, revoked, malformed and missing tokens', async () => {
    const t = await tokens.create('leaver');
    await tokens.revoke(t.id);
    for (const authorization of [
      `Bearer ${t.token}`,
      'Bearer nope-not-a-token-at-all',
      `Basic ${t.token}`,
      'Bearer',
      '',
    ])
      expect(await authorize({ headers: { authorization } }), `${authorization}`).toEqual({ isAuthorized: false });
    expect(await authorize({})).toEqual({ isAuthorized: false });
    expect(bearerToken('Bearer  abc ')).toBe('abc');
    expect(bearerToken('Bearer a b')).toBeUndefined();
  });
});
