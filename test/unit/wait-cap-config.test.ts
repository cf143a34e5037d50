/**
 * Where the wait cap comes from: SLUICE_MAX_WAITERS, and with `auto` the account's unreserved
 * Lambda concurrency (one signed GetAccountSettings per process), with a fixed fallback when
 * that cannot be read. No storage is touched here (a cap is found before any slot is).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { defaultMaxWaiters, FALLBACK_MAX_WAITERS } from '../../server/core/holds.js';
import { ACCOUNT_SETTINGS_PATH, unreservedConcurrency } from '../../server/service/adapters/lambda-account.js';
import { MemoryTelemetry } from '../../server/service/telemetry.js';
import { MAX_WAITERS, WaitSlots } from '../../server/service/wait-slots.js';
import type { Storage } from '../../server/storage/port.js';
import { fakeFetch, jsonResponse } from '../support/fake-fetch.js';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
const noStorage = {} as Storage;

describe('config: SLUICE_MAX_WAITERS', () => {
  it('is 0 (no cap) by default, a whole number, or auto', () => {
    expect(loadConfig({}).maxWaiters).toBe(0);
    expect(loadConfig({ SLUICE_MAX_WAITERS: '' }).maxWaiters).toBe(0);
    expect(loadConfig({ SLUICE_MAX_WAITERS: '12' }).maxWaiters).toBe(12);
    expect(loadConfig({ SLUICE_MAX_WAITERS: ' auto ' }).maxWaiters).toBe('auto');
    // As many as the slots' keys express, and no more.
    expect(loadConfig({ SLUICE_MAX_WAITERS: String(MAX_WAITERS) }).maxWaiters).toBe(MAX_WAITERS);
    expect(() => loadConfig({ SLUICE_MAX_WAITERS: String(MAX_WAITERS + 1) })).toThrow(/SLUICE_MAX_WAITERS/);
  });

  it('refuses anything else, naming the setting', () => {
    for (const bad of ['-1', '1.5', 'lots', '1000000', 'AUTO'])
      expect(() => loadConfig({ SLUICE_MAX_WAITERS: bad }), `${bad}`).toThrow(
        /SLUICE_MAX_WAITERS must be "auto" or a whole/,
      );
  });
});

describe('wait cap: the account concurrency', () => {
  it('signs one GET of GetAccountSettings for the lambda service and reads the unreserved executions', async () => {
    const f = fakeFetch([
      jsonResponse(200, {
        AccountLimit: { ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10 },
        AccountUsage: { FunctionCount: 5 },
      }),
    ]);
    expect(await unreservedConcurrency({ region: 'eu-west-1', credentials, fetch: f.fetch })).toBe(10);
    expect(f.calls).toHaveLength(1);
    const [call] = f.calls;
    expect(call?.method).toBe('GET');
    expect(call?.url.href).toBe(`https://lambda.eu-west-1.amazonaws.com${ACCOUNT_SETTINGS_PATH}`);
    expect(call?.headers['authorization']).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/lambda\/aws4_request, SignedHeaders=host;[a-z0-9;-]*x-amz-date, Signature=[0-9a-f]{64}$/,
    );
  });

  it('goes to another endpoint when told (LocalStack)', async () => {
    const f = fakeFetch([jsonResponse(200, { AccountLimit: { UnreservedConcurrentExecutions: 50 } })]);
    const n = await unreservedConcurrency({
      region: 'us-east-1',
      endpoint: 'http://localhost:4566',
      credentials,
      fetch: f.fetch,
    });
    expect(n).toBe(50);
    expect(f.calls[0]?.url.href).toBe(`http://localhost:4566${ACCOUNT_SETTINGS_PATH}`);
  });

  it('throws on a refusal or an answer without the number', async () => {
    const denied = fakeFetch([jsonResponse(403, { Message: 'not authorized to perform: lambda:GetAccountSettings' })]);
    await expect(unreservedConcurrency({ region: 'us-east-1', credentials, fetch: denied.fetch })).rejects.toThrow(
      /GetAccountSettings answered 403/,
    );
    const odd = fakeFetch([jsonResponse(200, { AccountLimit: {} })]);
    await expect(unreservedConcurrency({ region: 'us-east-1', credentials, fetch: odd.fetch })).rejects.toThrow(
      /without AccountLimit.UnreservedConcurrentExecutions/,
    );
  });
});

describe('wait cap: resolved once per process', () => {
  it('asks the account once and keeps the answer', async () => {
    let asked = 0;
    const slots = new WaitSlots({
      storage: noStorage,
      clock: () => 0,
      maxWaiters: async () => (asked++, defaultMaxWaiters(10)),
    });
    expect(await slots.maxWaiters()).toBe(4);
    expect(await slots.maxWaiters()).toBe(4);
    expect(asked).toBe(1);
  });

  it('uses the fallback while the account cannot be read, and asks again after a while', async () => {
    let now = 0;
    let answer: () => Promise<number> = () => Promise.reject(new Error('AccessDenied'));
    const telemetry = new MemoryTelemetry();
    const warned: string[] = [];
    telemetry.warn = (m) => void warned.push(m);
    const slots = new WaitSlots({ storage: noStorage, clock: () => now, telemetry, maxWaiters: () => answer() });
    expect(await slots.maxWaiters()).toBe(FALLBACK_MAX_WAITERS);
    expect(warned).toEqual(['wait cap: the account concurrency could not be read; using the fallback']);
    answer = () => Promise.resolve(400);
    now += 60_000;
    expect(await slots.maxWaiters()).toBe(FALLBACK_MAX_WAITERS);
    now += 5 * 60_000;
    expect(await slots.maxWaiters()).toBe(400);
  });

  it('a configured number is used as it is', async () => {
    expect(await new WaitSlots({ storage: noStorage, clock: () => 0, maxWaiters: 7 }).maxWaiters()).toBe(7);
  });
});
