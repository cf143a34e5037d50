import { describe, expect, it } from 'vitest';
import { serializeWrites } from '../../lambdas/storage/serialize-writes.js';
import type { ItemStore } from '../../lambdas/storage/port.js';

describe('unit: serializeWrites', () => {
  it('runs each write alone and reads alongside each other', async () => {
    let active = 0;
    let writeOverlapped = false;
    let maxReaders = 0;
    const gate = (kind: 'write' | 'read') => async (): Promise<never> => {
      active++;
      if (kind === 'read') maxReaders = Math.max(maxReaders, active);
      await new Promise((r) => setTimeout(r, 5));
      if (kind === 'write' && active > 1) writeOverlapped = true;
      active--;
      return undefined as never;
    };
    const inner = {
      get: gate('read'),
      getMany: gate('read'),
      query: gate('read'),
      put: gate('write'),
      delete: gate('write'),
      writeEach: gate('write'),
      transact: gate('write'),
    } as unknown as ItemStore;
    const s = serializeWrites(inner);
    const key = { pk: 'a', sk: 'b' };
    await Promise.all([
      s.get('meta', key),
      s.query('meta', 'a'),
      s.put('meta', { ...key, ver: 1, attrs: {} }),
      s.put('meta', { ...key, ver: 2, attrs: {} }),
      s.transact([]),
      s.getMany('meta', [key]),
      s.writeEach([]),
      s.delete('meta', key),
      s.get('meta', key),
      s.query('meta', 'a'),
    ]);
    expect(writeOverlapped).toBe(false);
    expect(maxReaders).toBeGreaterThan(1);
  });
});
