import { describe, expect, it } from 'vitest';
import { Grants, globToRegExp, grantsFromEnv, parseGrants } from '../../server/http/grants.js';
import { assertSafeBind, isLoopback } from '../../server/local/auth.js';
import { SluiceError } from '../../server/core/errors.js';

const config = parseGrants(
  {
    grants: [
      {
        principal: 'arn:aws:sts::111122223333:assumed-role/orders-writer/*',
        actions: ['push'],
        queues: ['orders', 'orders-*'],
      },
      { principal: 'billing', actions: ['consume'], queues: ['orders'] },
      { principal: '*', actions: ['push', 'consume', 'manage'], queues: ['sandbox-*'] },
    ],
    tokens: { 'a-token-of-sixteen-chars': 'billing' },
  },
  'test',
);
const grants = Grants.from(config);

describe('unit: grants', () => {
  it('globs: * matches any run of characters, everything else literally', () => {
    expect(globToRegExp('orders-*').test('orders-eu')).toBe(true);
    expect(globToRegExp('orders-*').test('orders-')).toBe(true);
    expect(globToRegExp('orders-*').test('orders')).toBe(false);
    expect(globToRegExp('a.b').test('axb')).toBe(false);
    expect(globToRegExp('a+b(c)').test('a+b(c)')).toBe(true);
    expect(globToRegExp('*').test('anything/at all\n')).toBe(true);
    expect(globToRegExp('Orders').test('orders')).toBe(false);
  });

  it('allows only what a grant names: action, principal and queue', () => {
    const writer = 'arn:aws:sts::111122223333:assumed-role/orders-writer/session-1';
    expect(grants.allows(writer, 'push', 'orders')).toBe(true);
    expect(grants.allows(writer, 'push', 'orders-eu')).toBe(true);
    expect(grants.allows(writer, 'push', 'billing')).toBe(false);
    expect(grants.allows(writer, 'consume', 'orders')).toBe(false);
    expect(grants.allows('arn:aws:sts::999999999999:assumed-role/orders-writer/x', 'push', 'orders')).toBe(false);
    expect(grants.allows('billing', 'consume', 'orders')).toBe(true);
    expect(grants.allows('billing', 'consume', 'orders-eu')).toBe(false);
    expect(grants.allows('anyone', 'manage', 'sandbox-1')).toBe(true);
    expect(grants.allowsSome('billing', 'consume')).toBe(true);
    expect(grants.allowsSome('billing', 'manage')).toBe(true); // through the sandbox grant
    expect(Grants.from({ grants: [] }).allowsSome('x', 'push')).toBe(false);
  });

  it('refuses with forbidden (403), naming principal, action and queue', () => {
    let err: unknown;
    try {
      grants.check('billing', 'push', 'orders');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SluiceError);
    expect(err).toMatchObject({ code: 'forbidden', details: { action: 'push', queue: 'orders' } });
    expect((err as Error).message).toMatch(/billing may not push on queue "orders"/);
    expect(() =>
      Grants.from({ grants: [{ principal: 'billing', actions: ['consume'], queues: ['orders'] }] }).checkSome(
        'nobody',
        'consume',
      ),
    ).toThrow(/nobody may not consume on any queue/);
  });

  it('rejects malformed configurations with the file and field named', () => {
    expect(() => parseGrants({ grants: [{ principal: 'x', actions: ['read'], queues: ['q'] }] }, 'g.json')).toThrow(
      /g.json: .*grants\[0\]\.actions\[0\]/,
    );
    expect(() => parseGrants({ grants: [{ principal: 'x', actions: [], queues: ['q'] }] }, 'g.json')).toThrow(
      /at least one action/,
    );
    expect(() => parseGrants({ grants: [{ principal: 'x', actions: ['push'], queues: [] }] }, 'g.json')).toThrow(
      /queue pattern/,
    );
    expect(() =>
      parseGrants({ grants: [{ principal: 'x', actions: ['push'], queues: ['q'], extra: 1 }] }, 'g.json'),
    ).toThrow(/g.json/);
    expect(() => parseGrants({ grants: [], tokens: { short: 'x' } }, 'g.json')).toThrow(/at least 16/);
    expect(() => parseGrants({ grants: [{ principal: '**', actions: ['push'], queues: ['q'] }] }, 'g.json')).toThrow(
      /\*\*/,
    );
    expect(() => parseGrants([], 'g.json')).toThrow(/g.json/);
  });

  it('from the environment: inline JSON, closed on Lambda without grants, open elsewhere', () => {
    const inline = grantsFromEnv({
      SLUICE_GRANTS: JSON.stringify({ grants: [{ principal: 'p', actions: ['push'], queues: ['q'] }] }),
    });
    expect(inline.allows('p', 'push', 'q')).toBe(true);
    expect(inline.allows('p', 'push', 'r')).toBe(false);
    const closed = grantsFromEnv({ AWS_LAMBDA_FUNCTION_NAME: 'fn' });
    expect(closed.allows('p', 'push', 'q')).toBe(false);
    expect(() => closed.check('p', 'push', 'q')).toThrow(/no grants configured/);
    expect(grantsFromEnv({}).isOpen).toBe(true);
    expect(() => grantsFromEnv({ SLUICE_GRANTS: '{nope' })).toThrow(/SLUICE_GRANTS is not valid JSON/);
    expect(() => grantsFromEnv({ SLUICE_GRANTS_FILE: '/nonexistent/grants.json' })).toThrow(/cannot read grants file/);
  });
});

describe('unit: local server binding', () => {
  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'].filter((h) => !isLoopback(h))).toEqual([]);
    expect(['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'example.com', '128.0.0.1'].filter(isLoopback)).toEqual([]);
  });

  it('refuses a non-loopback host without grants, with the fix in the message', () => {
    expect(() => assertSafeBind('0.0.0.0', false)).toThrow(
      /refusing to listen on 0.0.0.0 without a grants file.*--grants FILE/,
    );
    expect(() => assertSafeBind('0.0.0.0', true)).not.toThrow();
    expect(() => assertSafeBind('127.0.0.1', false)).not.toThrow();
  });
});

describe('unit: the documented grants example', () => {
  it('parses', async () => {
    const { readGrantsFile } = await import('../../server/http/grants.js');
    const g = Grants.from(readGrantsFile(new URL('../../docs/grants.example.json', import.meta.url).pathname));
    expect(g.allows('arn:aws:sts::123456789012:assumed-role/orders-writer/s1', 'push', 'orders-eu')).toBe(true);
  });
});
