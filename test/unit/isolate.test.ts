import { describe, expect, it } from 'vitest';
import { isolateTransactions } from '../../lambdas/storage/isolate.js';
import type { ItemStore } from '../../lambdas/storage/port.js';

describe('unit: isolateTransactions', () => {
  it('runs each transaction alone and everything else alongside', async () => {
    let active = 0;
    let txActiveWithOthers = false;
    let maxShared = 0;
    const gate = (kind: 'tx' | 'other') => async (): Promise<never> => {
      active++;
      if (kind === 'other') maxShared = Math.max(maxShared, active);
      await new Promise((r) => setTimeout(r, 5));
      if (kind === 'tx' && active > 1) txActiveWithOthers = true;
      active--;
      return undefined as never;
    };
    const inner = { get: gate('other'), getMany: gate('other'), query: gate('other'), put: gate('other'), delete: gate('other'), writeEach: gate('other'), transact: gate('tx') } as unknown as ItemStore;
    const s = isolateTransactions(inner);
    const key = { pk: 'a', sk: 'b' };
    await Promise.all([
      s.get('meta', key),
      s.put('meta', { ...key, ver: 1, attrs: {} }),
      s.transact([]),
      s.query('meta', 'a'),
      s.transact([]),
      s.writeEach([]),
      s.get('meta', key),
    ]);
    expect(txActiveWithOthers).toBe(false);
    expect(maxShared).toBeGreaterThan(1);
  });
});
