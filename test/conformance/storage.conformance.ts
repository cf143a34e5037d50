/**
 * The one conformance suite for the storage port. Every adapter runs it unchanged, so a
 * service written against `port.ts` behaves the same on `embedded` and on `aws`.
 *
 * Each test mints its own random keys, so the suite also runs against a shared backend
 * (a DynamoDB/S3 emulator or a real account). Write counts are kept modest on purpose:
 * the whole suite is a few hundred writes, most of them the 250-item paging test.
 *
 * @example
 * ```ts
 * runStorageConformance('embedded', async () => {
 *   const dir = await mkdtemp(join(tmpdir(), 'sluice-'));
 *   const storage = await openEmbeddedStorage({ dataDir: dir });
 *   return { storage, cleanup: async () => { await storage.close(); await rm(dir, { recursive: true }); } };
 * });
 * ```
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConditionFailedError,
  MAX_GET_MANY,
  MAX_ITEM_BYTES,
  MAX_TRANSACT_OPS,
  TakeRefusedError,
  TakeWriteError,
  type Item,
  type ItemKey,
  type Storage,
  type TableName,
  type WriteOp,
} from '../../server/storage/port.js';
import { ItemTooLargeError, itemSize } from '../../server/storage/size.js';

/** An item with `bin` as base64, so adapters returning Buffer or Uint8Array compare equal. */
function plain(item: Item | undefined): Record<string, unknown> | undefined {
  if (item === undefined) return undefined;
  return {
    pk: item.pk,
    sk: item.sk,
    ver: item.ver,
    attrs: item.attrs,
    bin: item.bin === undefined ? undefined : Buffer.from(item.bin).toString('base64'),
    expiresAt: item.expiresAt,
  };
}

const plainFailed = (err: ConditionFailedError): { index: number; current: Record<string, unknown> | undefined }[] =>
  err.failed.map((f) => ({ index: f.index, current: plain(f.current) }));

/** Awaits a rejection and asserts it is a {@link ConditionFailedError}. */
async function expectConditionFailed(p: Promise<unknown>): Promise<ConditionFailedError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConditionFailedError);
  return err as ConditionFailedError;
}

/** Awaits a rejection that is a validation error (anything but a failed guard). */
async function expectValidationError(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  expect(err).not.toBeInstanceOf(ConditionFailedError);
}

/** A random namespace for one test's keys. */
const uid = (): string => `conf#${randomUUID().slice(0, 13)}`;

const item = (pk: string, sk: string, ver = 1, attrs: Item['attrs'] = {}, extra: Partial<Item> = {}): Item => ({
  pk,
  sk,
  ver,
  attrs,
  ...extra,
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function runStorageConformance(
  name: string,
  newStorage: () => Promise<{ storage: Storage; cleanup: () => Promise<void> }>,
): void {
  describe(`storage conformance: ${name}`, () => {
    let s: Storage;
    let cleanup: (() => Promise<void>) | undefined;

    beforeAll(async () => {
      const made = await newStorage();
      s = made.storage;
      cleanup = made.cleanup;
    });
    afterAll(async () => {
      await cleanup?.();
    });

    describe('items: put / get', () => {
      it('round-trips attrs (unicode, nested, null), bin and expiresAt', async () => {
        const pk = uid();
        const attrs = {
          text: 'héllo wörld 中文 😀 \u0000 "quoted" \\ back',
          n: 42,
          neg: -1.5,
          big: 2 ** 53 - 1,
          t: true,
          f: false,
          nil: null,
          list: [1, 'two', { three: [3] }, null],
          nested: { a: { b: { c: 'deep' } }, empty: {}, none: [] },
        };
        // A subarray view: adapters must store the view's bytes, not its whole backing buffer.
        const bin = new Uint8Array([99, 0, 1, 2, 254, 255, 99]).subarray(1, 6);
        const full = item(pk, 'full', 7, attrs, { bin, expiresAt: 4_102_444_800 });
        const bare = item(pk, 'bare', 1, {});
        await s.items.put('meta', full);
        await s.items.put('meta', bare);

        const gotFull = await s.items.get('meta', { pk, sk: 'full' });
        expect(plain(gotFull)).toEqual(plain(full));
        expect([...(gotFull?.bin ?? [])]).toEqual([0, 1, 2, 254, 255]);
        const gotBare = await s.items.get('meta', { pk, sk: 'bare' });
        expect(plain(gotBare)).toEqual(plain(bare));
        expect(gotBare?.bin).toBeUndefined();
        expect(gotBare?.expiresAt).toBeUndefined();
        expect(await s.items.get('meta', { pk, sk: 'missing' })).toBeUndefined();
      });

      it('stores a caller-built attrsJson as the attributes (put, writeEach, transact); reads never carry it', async () => {
        const pk = uid();
        // The same value as JSON.stringify(attrs) gives, keys in another order: reading the
        // order back shows the adapter stored the caller's text instead of serialising again.
        const withText = (sk: string): Item => item(pk, sk, 1, { a: 1, b: 'x' }, { attrsJson: '{"b":"x","a":1}' });
        await s.items.put('meta', withText('put'));
        await s.items.writeEach(
          [withText('each-1'), withText('each-2'), withText('each-3')].map((it) => ({
            op: 'put' as const,
            table: 'meta' as const,
            item: it,
            cond: { kind: 'absent' as const },
          })),
        );
        await s.items.transact([{ op: 'put', table: 'meta', item: withText('tx') }]);
        for (const sk of ['put', 'each-1', 'each-2', 'each-3', 'tx']) {
          const got = await s.items.get('meta', { pk, sk });
          expect(got?.attrs).toEqual({ a: 1, b: 'x' });
          expect(Object.keys(got?.attrs ?? {})).toEqual(['b', 'a']);
          expect(got?.attrsJson).toBeUndefined();
        }
      });

      it('an unconditional put replaces the whole item, dropping bin and expiresAt', async () => {
        const pk = uid();
        await s.items.put(
          'meta',
          item(pk, 'k', 1, { a: 1, b: 2 }, { bin: new Uint8Array([9]), expiresAt: 4_102_444_800 }),
        );
        await s.items.put('meta', item(pk, 'k', 5, { c: 3 }));
        const got = await s.items.get('meta', { pk, sk: 'k' });
        expect(plain(got)).toEqual(plain(item(pk, 'k', 5, { c: 3 })));
        expect(got?.bin).toBeUndefined();
        expect(got?.expiresAt).toBeUndefined();
      });

      it('rejects empty partition or sort keys', async () => {
        const pk = uid();
        await expectValidationError(s.items.put('meta', item('', 'k')));
        await expectValidationError(s.items.put('meta', item(pk, '')));
        expect(await s.items.query('meta', pk)).toEqual({ items: [] });
      });
    });

    describe('items: guards', () => {
      it('put-if-absent succeeds on a new key and fails on an existing one with the current item', async () => {
        const pk = uid();
        const first = item(pk, 'k', 1, { who: 'first' });
        await s.items.put('meta', first, { kind: 'absent' });
        const err = await expectConditionFailed(
          s.items.put('meta', item(pk, 'k', 1, { who: 'second' }), { kind: 'absent' }),
        );
        expect(plainFailed(err)).toEqual([{ index: 0, current: plain(first) }]);
        expect(plain(await s.items.get('meta', { pk, sk: 'k' }))).toEqual(plain(first));
      });

      it('version guard replaces when ver matches and fails on a wrong ver or a missing item', async () => {
        const pk = uid();
        await s.items.put('meta', item(pk, 'k', 1, { n: 1 }));
        await s.items.put('meta', item(pk, 'k', 2, { n: 2 }), { kind: 'version', ver: 1 });
        const v2 = item(pk, 'k', 2, { n: 2 });
        expect(plain(await s.items.get('meta', { pk, sk: 'k' }))).toEqual(plain(v2));

        const stale = await expectConditionFailed(
          s.items.put('meta', item(pk, 'k', 2, { n: 99 }), { kind: 'version', ver: 1 }),
        );
        expect(plainFailed(stale)).toEqual([{ index: 0, current: plain(v2) }]);
        expect(plain(await s.items.get('meta', { pk, sk: 'k' }))).toEqual(plain(v2));

        const missing = await expectConditionFailed(
          s.items.put('meta', item(pk, 'nope', 1), { kind: 'version', ver: 0 }),
        );
        expect(plainFailed(missing)).toEqual([{ index: 0, current: undefined }]);
        expect(await s.items.get('meta', { pk, sk: 'nope' })).toBeUndefined();
      });

      it('exists guard fails on a missing item (creating nothing) and replaces an existing one', async () => {
        const pk = uid();
        const err = await expectConditionFailed(s.items.put('meta', item(pk, 'k', 1), { kind: 'exists' }));
        expect(plainFailed(err)).toEqual([{ index: 0, current: undefined }]);
        expect(await s.items.get('meta', { pk, sk: 'k' })).toBeUndefined();

        await s.items.put('meta', item(pk, 'k', 1, { n: 1 }));
        await s.items.put('meta', item(pk, 'k', 9, { n: 9 }), { kind: 'exists' });
        expect(plain(await s.items.get('meta', { pk, sk: 'k' }))).toEqual(plain(item(pk, 'k', 9, { n: 9 })));
      });

      it('delete: unconditional (missing is fine), version, exists and absent guards', async () => {
        const pk = uid();
        const key = (sk: string): ItemKey => ({ pk, sk });

        await s.items.delete('meta', key('never'));

        await s.items.put('meta', item(pk, 'plain', 1));
        await s.items.delete('meta', key('plain'));
        expect(await s.items.get('meta', key('plain'))).toBeUndefined();

        const v3 = item(pk, 'ver', 3, { x: 1 });
        await s.items.put('meta', v3);
        const wrong = await expectConditionFailed(s.items.delete('meta', key('ver'), { kind: 'version', ver: 2 }));
        expect(plainFailed(wrong)).toEqual([{ index: 0, current: plain(v3) }]);
        expect(plain(await s.items.get('meta', key('ver')))).toEqual(plain(v3));
        await s.items.delete('meta', key('ver'), { kind: 'version', ver: 3 });
        expect(await s.items.get('meta', key('ver'))).toBeUndefined();

        const gone = await expectConditionFailed(s.items.delete('meta', key('ver'), { kind: 'exists' }));
        expect(plainFailed(gone)).toEqual([{ index: 0, current: undefined }]);
        const goneVer = await expectConditionFailed(s.items.delete('meta', key('ver'), { kind: 'version', ver: 3 }));
        expect(plainFailed(goneVer)).toEqual([{ index: 0, current: undefined }]);

        const here = item(pk, 'here', 1);
        await s.items.put('meta', here);
        const present = await expectConditionFailed(s.items.delete('meta', key('here'), { kind: 'absent' }));
        expect(plainFailed(present)).toEqual([{ index: 0, current: plain(here) }]);
        await s.items.delete('meta', key('here'), { kind: 'exists' });
        expect(await s.items.get('meta', key('here'))).toBeUndefined();
        await s.items.delete('meta', key('here'), { kind: 'absent' });
      });
    });

    describe('items: writeEach', () => {
      it('applies each op on its own and reports per-op outcomes with the current item', async () => {
        const pk = uid();
        const existing = item(pk, 'existing', 4, { e: 1 });
        const doomed = item(pk, 'doomed', 2);
        await s.items.put('dedup', existing);
        await s.items.put('dedup', doomed);

        const ops: WriteOp[] = [
          { op: 'put', table: 'dedup', item: item(pk, 'fresh', 1), cond: { kind: 'absent' } },
          { op: 'put', table: 'dedup', item: item(pk, 'existing', 1, { e: 2 }), cond: { kind: 'absent' } },
          { op: 'put', table: 'dedup', item: item(pk, 'existing', 5), cond: { kind: 'version', ver: 3 } },
          { op: 'delete', table: 'dedup', key: { pk, sk: 'doomed' }, cond: { kind: 'version', ver: 2 } },
          { op: 'delete', table: 'dedup', key: { pk, sk: 'ghost' }, cond: { kind: 'exists' } },
          { op: 'put', table: 'dedup', item: item(pk, 'plain', 1, { p: true }) },
        ];
        const results = await s.items.writeEach(ops);
        expect(results.map((r) => (r.ok ? { ok: true } : { ok: false, current: plain(r.current) }))).toEqual([
          { ok: true },
          { ok: false, current: plain(existing) },
          { ok: false, current: plain(existing) },
          { ok: true },
          { ok: false, current: undefined },
          { ok: true },
        ]);

        const after = await s.items.query('dedup', pk);
        expect(after.items.map(plain)).toEqual([
          plain(existing),
          plain(item(pk, 'fresh', 1)),
          plain(item(pk, 'plain', 1, { p: true })),
        ]);
      });

      it('deferDurability changes no outcome: guards, results and reads are as without it', async () => {
        const pk = uid();
        await s.items.put('dedup', item(pk, 'taken', 1));
        const results = await s.items.writeEach(
          [
            { op: 'put', table: 'dedup', item: item(pk, 'fresh', 1), cond: { kind: 'absent' } },
            { op: 'put', table: 'dedup', item: item(pk, 'taken', 1), cond: { kind: 'absent' } },
          ],
          { deferDurability: true },
        );
        expect(results.map((r) => r.ok)).toEqual([true, false]);
        await s.items.put('dedup', item(pk, 'after', 1));
        expect((await s.items.query('dedup', pk)).items.map((i) => i.sk)).toEqual(['after', 'fresh', 'taken']);
      });

      it('returns an empty result for no ops and rejects check ops (transactions only)', async () => {
        const pk = uid();
        expect(await s.items.writeEach([])).toEqual([]);
        await expectValidationError(
          s.items.writeEach([{ op: 'check', table: 'meta', key: { pk, sk: 'k' }, cond: { kind: 'absent' } }]),
        );
      });
    });

    describe('items: transact', () => {
      it('applies puts, deletes and checks together', async () => {
        const pk = uid();
        await s.items.put('claims', item(pk, 'old', 1));
        await s.items.put('meta', item(pk, 'head', 3));
        await s.items.transact([
          { op: 'put', table: 'claims', item: item(pk, 'new', 1, { a: 1 }), cond: { kind: 'absent' } },
          { op: 'delete', table: 'claims', key: { pk, sk: 'old' }, cond: { kind: 'version', ver: 1 } },
          { op: 'check', table: 'meta', key: { pk, sk: 'head' }, cond: { kind: 'version', ver: 3 } },
          { op: 'check', table: 'meta', key: { pk, sk: 'nothing' }, cond: { kind: 'absent' } },
          { op: 'put', table: 'meta', item: item(pk, 'other', 2) },
        ]);
        expect(plain(await s.items.get('claims', { pk, sk: 'new' }))).toEqual(plain(item(pk, 'new', 1, { a: 1 })));
        expect(await s.items.get('claims', { pk, sk: 'old' })).toBeUndefined();
        expect(plain(await s.items.get('meta', { pk, sk: 'other' }))).toEqual(plain(item(pk, 'other', 2)));
        expect(plain(await s.items.get('meta', { pk, sk: 'head' }))).toEqual(plain(item(pk, 'head', 3)));
      });

      it('is all-or-nothing and reports every failed guard with the current item', async () => {
        const pk = uid();
        const taken = item(pk, 'taken', 2, { t: 1 });
        const keep = item(pk, 'keep', 1);
        await s.items.put('leases', taken);
        await s.items.put('leases', keep);

        const err = await expectConditionFailed(
          s.items.transact([
            { op: 'put', table: 'leases', item: item(pk, 'a', 1), cond: { kind: 'absent' } },
            { op: 'put', table: 'leases', item: item(pk, 'taken', 3), cond: { kind: 'absent' } },
            { op: 'delete', table: 'leases', key: { pk, sk: 'keep' } },
            { op: 'put', table: 'leases', item: item(pk, 'ghost', 2), cond: { kind: 'version', ver: 1 } },
            { op: 'put', table: 'leases', item: item(pk, 'b', 1) },
          ]),
        );
        expect(plainFailed(err)).toEqual([
          { index: 1, current: plain(taken) },
          { index: 3, current: undefined },
        ]);
        const page = await s.items.query('leases', pk);
        expect(page.items.map(plain)).toEqual([plain(keep), plain(taken)]);
      });

      it('a failing check op alone cancels the transaction', async () => {
        const pk = uid();
        const head = item(pk, 'head', 5);
        await s.items.put('meta', head);
        const err = await expectConditionFailed(
          s.items.transact([
            { op: 'put', table: 'meta', item: item(pk, 'x', 1) },
            { op: 'check', table: 'meta', key: { pk, sk: 'head' }, cond: { kind: 'version', ver: 4 } },
          ]),
        );
        expect(plainFailed(err)).toEqual([{ index: 1, current: plain(head) }]);
        expect(await s.items.get('meta', { pk, sk: 'x' })).toBeUndefined();

        const exists = await expectConditionFailed(
          s.items.transact([
            { op: 'check', table: 'meta', key: { pk, sk: 'none' }, cond: { kind: 'exists' } },
            { op: 'put', table: 'meta', item: item(pk, 'y', 1) },
          ]),
        );
        expect(plainFailed(exists)).toEqual([{ index: 0, current: undefined }]);
        expect(await s.items.get('meta', { pk, sk: 'y' })).toBeUndefined();
      });

      it(`accepts ${MAX_TRANSACT_OPS} ops and rejects more, writing nothing`, async () => {
        const pk = uid();
        // Check ops cost no writes, so the limit itself is probed cheaply.
        const checks: WriteOp[] = Array.from({ length: MAX_TRANSACT_OPS }, (_, i) => ({
          op: 'check',
          table: 'meta',
          key: { pk, sk: `c${i}` },
          cond: { kind: 'absent' },
        }));
        await s.items.transact(checks);

        const puts: WriteOp[] = Array.from({ length: MAX_TRANSACT_OPS + 1 }, (_, i) => ({
          op: 'put',
          table: 'meta',
          item: item(pk, `p${String(i).padStart(3, '0')}`, 1),
        }));
        await expectValidationError(s.items.transact(puts));
        expect((await s.items.query('meta', pk, { limit: 1 })).items).toEqual([]);
      });

      it('rejects two ops on the same key, but allows the same pk/sk in different tables', async () => {
        const pk = uid();
        await expectValidationError(
          s.items.transact([
            { op: 'put', table: 'meta', item: item(pk, 'k', 1) },
            { op: 'delete', table: 'meta', key: { pk, sk: 'k' } },
          ]),
        );
        await expectValidationError(
          s.items.transact([
            { op: 'put', table: 'meta', item: item(pk, 'k', 1) },
            { op: 'check', table: 'meta', key: { pk, sk: 'k' }, cond: { kind: 'absent' } },
          ]),
        );
        expect(await s.items.get('meta', { pk, sk: 'k' })).toBeUndefined();

        await s.items.transact([
          { op: 'put', table: 'meta', item: item(pk, 'k', 1) },
          { op: 'put', table: 'log', item: item(pk, 'k', 2) },
        ]);
        expect((await s.items.get('meta', { pk, sk: 'k' }))?.ver).toBe(1);
        expect((await s.items.get('log', { pk, sk: 'k' }))?.ver).toBe(2);
      });
    });

    describe('items: query', () => {
      // Deliberately non-ASCII: UTF-8 byte order puts U+FF61 before U+1F600, UTF-16 order
      // (a plain JS sort) the other way round.
      const sks = ['a', 'a#1', 'a#2', 'a#10', 'ab', 'b', 'B', 'b#1', 'c', '~', 'é', '\uff61', '😀'];
      const byteSorted = [...sks].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));

      async function seed(): Promise<string> {
        const pk = uid();
        await s.items.transact(sks.map((sk, i) => ({ op: 'put', table: 'log', item: item(pk, sk, i + 1) })));
        return pk;
      }
      const sksOf = (items: Item[]): string[] => items.map((i) => i.sk);

      it('orders by UTF-8 bytes, forward and reverse, and returns full items', async () => {
        const pk = await seed();
        expect(byteSorted).toEqual(['B', 'a', 'a#1', 'a#10', 'a#2', 'ab', 'b', 'b#1', 'c', '~', 'é', '\uff61', '😀']);
        const fwd = await s.items.query('log', pk);
        expect(sksOf(fwd.items)).toEqual(byteSorted);
        expect(fwd.next).toBeUndefined();
        expect(plain(fwd.items[0])).toEqual(plain(item(pk, 'B', sks.indexOf('B') + 1)));
        const rev = await s.items.query('log', pk, { reverse: true });
        expect(sksOf(rev.items)).toEqual([...byteSorted].reverse());
        expect(rev.next).toBeUndefined();
      });

      it('applies gte / lte / prefix and their combinations', async () => {
        const pk = await seed();
        const q = async (opts: Parameters<Storage['items']['query']>[2]): Promise<string[]> =>
          sksOf((await s.items.query('log', pk, opts)).items);

        expect(await q({ gte: 'a#2' })).toEqual(['a#2', 'ab', 'b', 'b#1', 'c', '~', 'é', '\uff61', '😀']);
        expect(await q({ lte: 'a#10' })).toEqual(['B', 'a', 'a#1', 'a#10']);
        expect(await q({ gte: 'a#1', lte: 'b' })).toEqual(['a#1', 'a#10', 'a#2', 'ab', 'b']);
        expect(await q({ gte: 'a#1', lte: 'b', reverse: true })).toEqual(['b', 'ab', 'a#2', 'a#10', 'a#1']);
        expect(await q({ prefix: 'a' })).toEqual(['a', 'a#1', 'a#10', 'a#2', 'ab']);
        expect(await q({ prefix: 'a#' })).toEqual(['a#1', 'a#10', 'a#2']);
        expect(await q({ prefix: 'a#', reverse: true })).toEqual(['a#2', 'a#10', 'a#1']);
        expect(await q({ prefix: 'a#', gte: 'a#10' })).toEqual(['a#10', 'a#2']);
        expect(await q({ prefix: 'a#', lte: 'a#10' })).toEqual(['a#1', 'a#10']);
        expect(await q({ prefix: 'a', gte: 'a#', lte: 'a#2' })).toEqual(['a#1', 'a#10', 'a#2']);
        expect(await q({ prefix: 'a', gte: '0', lte: 'zzz' })).toEqual(['a', 'a#1', 'a#10', 'a#2', 'ab']);
        expect(await q({ prefix: 'b', gte: 'c' })).toEqual([]);
        expect(await q({ prefix: 'zz' })).toEqual([]);
        expect(await q({ prefix: '\uff61' })).toEqual(['\uff61']);
        expect(await q({ prefix: 'é' })).toEqual(['é']);
        expect(await q({ gte: 'c', lte: 'b' })).toEqual([]);
        expect(await q({ prefix: 'a', limit: 2, reverse: true })).toEqual(['ab', 'a#2']);
      });

      it('limit and after page within bounds; next is the last sk and absent at the end', async () => {
        const pk = await seed();
        const p1 = await s.items.query('log', pk, { prefix: 'a', limit: 2 });
        expect(sksOf(p1.items)).toEqual(['a', 'a#1']);
        expect(p1.next).toBe('a#1');
        const p2 = await s.items.query('log', pk, { prefix: 'a', limit: 2, after: p1.next });
        expect(sksOf(p2.items)).toEqual(['a#10', 'a#2']);
        expect(p2.next).toBe('a#2');
        const p3 = await s.items.query('log', pk, { prefix: 'a', limit: 2, after: p2.next });
        expect(sksOf(p3.items)).toEqual(['ab']);
        expect(p3.next).toBeUndefined();

        const r1 = await s.items.query('log', pk, { gte: 'a#1', lte: 'b', reverse: true, limit: 3 });
        expect(sksOf(r1.items)).toEqual(['b', 'ab', 'a#2']);
        expect(r1.next).toBe('a#2');
        const r2 = await s.items.query('log', pk, { gte: 'a#1', lte: 'b', reverse: true, limit: 3, after: r1.next });
        expect(sksOf(r2.items)).toEqual(['a#10', 'a#1']);
        expect(r2.next).toBeUndefined();

        const big = await s.items.query('log', pk, { limit: 1000 });
        expect(big.items).toHaveLength(sks.length);
        expect(big.next).toBeUndefined();
      });

      it('pages through 250 items forward and reverse', async () => {
        const pk = uid();
        const all = Array.from({ length: 250 }, (_, i) => `m#${String(i).padStart(4, '0')}`);
        for (let i = 0; i < all.length; i += MAX_TRANSACT_OPS) {
          await s.items.transact(
            all
              .slice(i, i + MAX_TRANSACT_OPS)
              .map((sk, j) => ({ op: 'put', table: 'log', item: item(pk, sk, 1, { i: i + j }) })),
          );
        }

        async function collect(opts: {
          reverse?: boolean;
          limit: number;
          gte?: string;
          lte?: string;
          prefix?: string;
        }): Promise<string[]> {
          const seen: string[] = [];
          let after: string | undefined;
          for (let pages = 0; pages < 100; pages++) {
            const page = await s.items.query('log', pk, { ...opts, after });
            expect(page.items.length).toBeLessThanOrEqual(opts.limit);
            seen.push(...sksOf(page.items));
            if (page.next === undefined) return seen;
            expect(page.next).toBe(page.items.at(-1)?.sk);
            after = page.next;
          }
          throw new Error('paging did not terminate');
        }

        expect(await collect({ limit: 40 })).toEqual(all);
        expect(await collect({ limit: 100, reverse: true })).toEqual([...all].reverse());
        expect(await collect({ limit: 7, gte: 'm#0100', lte: 'm#0149' })).toEqual(all.slice(100, 150));
        expect(await collect({ limit: 9, prefix: 'm#01', reverse: true })).toEqual(all.slice(100, 200).reverse());

        const first = await s.items.query('log', pk, { limit: 3 });
        expect(first.items.map((i) => i.attrs)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
      });

      it('isolates tables and partition keys (no prefix bleed between pks)', async () => {
        const pk = uid();
        await s.items.transact([
          { op: 'put', table: 'meta', item: item(pk, 'k', 1, { t: 'meta' }) },
          { op: 'put', table: 'dlq', item: item(pk, 'k', 2, { t: 'dlq' }) },
          { op: 'put', table: 'meta', item: item(`${pk}x`, 'k', 3) },
          { op: 'put', table: 'meta', item: item(`${pk}#`, 'k2', 4) },
        ]);
        expect((await s.items.get('meta', { pk, sk: 'k' }))?.attrs).toEqual({ t: 'meta' });
        expect((await s.items.get('dlq', { pk, sk: 'k' }))?.attrs).toEqual({ t: 'dlq' });
        expect(await s.items.get('claims', { pk, sk: 'k' })).toBeUndefined();
        expect((await s.items.query('meta', pk)).items.map((i) => [i.pk, i.sk])).toEqual([[pk, 'k']]);
        expect((await s.items.query('dlq', pk)).items.map((i) => i.ver)).toEqual([2]);
        expect((await s.items.query('leases', pk)).items).toEqual([]);
        expect((await s.items.query('meta', `${pk}#`)).items.map((i) => i.sk)).toEqual(['k2']);
      });
    });

    describe('items: getMany', () => {
      it('returns results aligned with keys, undefined for missing ones', async () => {
        const pk = uid();
        const a = item(pk, 'a', 1, { a: 1 }, { bin: new Uint8Array([1, 2, 3]) });
        const c = item(pk, 'c', 3, { c: 3 });
        await s.items.transact([
          { op: 'put', table: 'meta', item: a },
          { op: 'put', table: 'meta', item: c },
          { op: 'put', table: 'log', item: item(pk, 'b', 2) },
        ]);
        const got = await s.items.getMany('meta', [
          { pk, sk: 'c' },
          { pk, sk: 'b' },
          { pk: `${pk}-other`, sk: 'a' },
          { pk, sk: 'a' },
        ]);
        expect(got.map(plain)).toEqual([plain(c), undefined, undefined, plain(a)]);
        expect(await s.items.getMany('meta', [])).toEqual([]);
      });

      it(`reads up to ${MAX_GET_MANY} keys and rejects more`, async () => {
        const pk = uid();
        await s.items.put('meta', item(pk, 'k42', 1));
        const keys = Array.from({ length: MAX_GET_MANY }, (_, i) => ({ pk, sk: `k${i}` }));
        const got = await s.items.getMany('meta', keys);
        expect(got).toHaveLength(MAX_GET_MANY);
        expect(got.findIndex((i) => i !== undefined)).toBe(42);
        expect(got.filter((i) => i !== undefined)).toHaveLength(1);
        await expectValidationError(s.items.getMany('meta', [...keys, { pk, sk: 'one-more' }]));
      });
    });

    describe('items: limits and expiry', () => {
      it(`rejects items over ${MAX_ITEM_BYTES} bytes and accepts one at the limit`, async () => {
        const pk = uid();
        // The accepted item sits exactly at the limit: `itemSize` over-counts DynamoDB's own
        // accounting (409,600 bytes, names included), so both adapters take it.
        const bin = new Uint8Array(96).fill(7);
        const withFill = (sk: string, n: number): Item =>
          item(pk, sk, 1, { note: 'size probe', fill: 'x'.repeat(n) }, { bin });
        const underBytes = MAX_ITEM_BYTES;
        const under = withFill('big', underBytes - itemSize(withFill('big', 0)));
        const over = withFill('too-big', MAX_ITEM_BYTES + 1 - itemSize(withFill('too-big', 0)));
        expect(itemSize(under)).toBe(underBytes);
        expect(itemSize(over)).toBe(MAX_ITEM_BYTES + 1);

        await expect(s.items.put('log', over)).rejects.toBeInstanceOf(ItemTooLargeError);
        await expect(s.items.transact([{ op: 'put', table: 'log', item: over }])).rejects.toBeInstanceOf(
          ItemTooLargeError,
        );
        await expect(s.items.writeEach([{ op: 'put', table: 'log', item: over }])).rejects.toBeInstanceOf(
          ItemTooLargeError,
        );
        expect(await s.items.get('log', { pk, sk: 'too-big' })).toBeUndefined();

        await s.items.put('log', under);
        const got = await s.items.get('log', { pk, sk: 'big' });
        expect(plain(got)).toEqual(plain(under));
      });

      it('expired items stay readable (TTL is garbage collection, not a read filter)', async () => {
        const pk = uid();
        const past = Math.floor(Date.now() / 1000) - 3600;
        const lapsed = item(pk, 'old', 1, { gone: false }, { expiresAt: past });
        await s.items.put('dedup', lapsed);
        expect(plain(await s.items.get('dedup', { pk, sk: 'old' }))).toEqual(plain(lapsed));
        expect((await s.items.getMany('dedup', [{ pk, sk: 'old' }])).map(plain)).toEqual([plain(lapsed)]);
        expect((await s.items.query('dedup', pk)).items.map(plain)).toEqual([plain(lapsed)]);
        const err = await expectConditionFailed(s.items.put('dedup', item(pk, 'old', 2), { kind: 'absent' }));
        expect(err.failed[0]?.current?.expiresAt).toBe(past);
      });
    });

    describe('items: concurrency', () => {
      it('20 parallel put-if-absent on one key: exactly one wins', async () => {
        const pk = uid();
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => s.items.put('claims', item(pk, 'k', 1, { w: i }), { kind: 'absent' })),
        );
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        const losers = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).name] : []));
        expect(losers).toEqual(Array.from({ length: 19 }, () => 'ConditionFailedError'));
        expect((await s.items.get('claims', { pk, sk: 'k' }))?.attrs).toEqual({ w: won[0] });
      });

      it('version-guarded increments from parallel workers never lose an update', async () => {
        const pk = uid();
        const key = { pk, sk: 'counter' };
        const table: TableName = 'meta';
        await s.items.put(table, item(pk, 'counter', 0, { n: 0 }));
        const workers = 5;
        const each = 10;

        async function worker(): Promise<number> {
          let conflicts = 0;
          for (let done = 0; done < each;) {
            const cur = await s.items.get(table, key);
            if (cur === undefined) throw new Error('counter vanished');
            try {
              await s.items.put(
                table,
                { ...cur, ver: cur.ver + 1, attrs: { n: Number(cur.attrs['n']) + 1 } },
                { kind: 'version', ver: cur.ver },
              );
              done++;
            } catch (e) {
              if (!(e instanceof ConditionFailedError)) throw e;
              conflicts++;
              await sleep(Math.random() * 3);
            }
          }
          return conflicts;
        }

        await Promise.all(Array.from({ length: workers }, worker));
        const final = await s.items.get(table, key);
        expect(final?.attrs).toEqual({ n: workers * each });
        expect(final?.ver).toBe(workers * each);
      });
    });

    describe('items: take', () => {
      it('counts from 0 on an absent counter, creating it, and raises it by each count', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const a = await s.items.take('log', key, 3);
        expect(a).toEqual({ first: 0, before: undefined });
        const b = await s.items.take('log', key, 2);
        expect(b.first).toBe(3);
        expect(plain(b.before)).toEqual(plain({ ...key, ver: 3, attrs: {} }));
        expect(plain(await s.items.get('log', key))).toEqual(plain({ ...key, ver: 5, attrs: {} }));
      });

      it("leaves the counter item's attributes, bytes and expiry as they are, and reports them", async () => {
        const key = { pk: uid(), sk: 'seq' };
        const stored: Item = { ...key, ver: 10, attrs: { drained: 10 }, bin: Buffer.from([1, 2]), expiresAt: 4e9 };
        await s.items.put('log', stored);
        const t = await s.items.take('log', key, 4);
        expect(t.first).toBe(10);
        expect(plain(t.before)).toEqual(plain(stored));
        expect(plain(await s.items.get('log', key))).toEqual(plain({ ...stored, ver: 14 }));
        // A version-guarded put on the counter sees the raised version.
        await s.items.put('log', { ...key, ver: 14, attrs: { drained: 14 } }, { kind: 'version', ver: 14 });
        expect((await s.items.take('log', key, 1)).before?.attrs).toEqual({ drained: 14 });
      });

      it('applies the writes built from what was taken, and not the counter key', async () => {
        const key = { pk: uid(), sk: 'seq' };
        await s.items.take('log', key, 5);
        const t = await s.items.take('log', key, 2, ({ first }) => [
          { op: 'put', table: 'log', item: item(key.pk, `S#${first}`, 1, { first }), cond: { kind: 'absent' } },
          { op: 'put', table: 'meta', item: item(key.pk, 'other', 1) },
        ]);
        expect(t.first).toBe(5);
        expect((await s.items.get('log', { pk: key.pk, sk: 'S#5' }))?.attrs).toEqual({ first: 5 });
        expect(await s.items.get('meta', { pk: key.pk, sk: 'other' })).toBeDefined();
        const err = await s.items
          .take('log', key, 1, () => [{ op: 'put', table: 'log', item: item(key.pk, 'seq', 1) }])
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TakeWriteError);
      });

      it('a failed write after a take throws TakeWriteError saying whether the numbers stayed taken', async () => {
        const key = { pk: uid(), sk: 'seq' };
        await s.items.put('log', item(key.pk, 'S#0', 1));
        const err = await s.items
          .take('log', key, 3, ({ first }) => [
            { op: 'put', table: 'log', item: item(key.pk, `S#${first}`, 1), cond: { kind: 'absent' } },
          ])
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(TakeWriteError);
        const e = err as TakeWriteError;
        expect(e.first).toBe(0);
        expect(e.count).toBe(3);
        expect(e.cause).toBeInstanceOf(ConditionFailedError);
        // Either the numbers stayed taken, or the take rolled back with the writes: the next
        // take starts where the counter says, never inside a range someone still holds.
        const next = await s.items.take('log', key, 1);
        expect(next.first).toBe(e.taken ? 3 : 0);
      });

      it('sets attributes in the same write, keeping the others, and reports them as they were before', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const a = await s.items.take('log', key, 2, undefined, { set: { w: true } });
        expect(a).toEqual({ first: 0, before: undefined });
        expect(plain(await s.items.get('log', key))).toEqual(plain({ ...key, ver: 2, attrs: { w: true } }));
        const b = await s.items.take('log', key, 1, undefined, { set: { w: true, p: { x: [1, 'y'] } } });
        expect(plain(b.before)).toEqual(plain({ ...key, ver: 2, attrs: { w: true } }));
        // A put replaces every attribute, the ones a take set included; a later take keeps the rest.
        await s.items.put('log', { ...key, ver: 3, attrs: { keep: 1, w: false } }, { kind: 'version', ver: 3 });
        const c = await s.items.take(
          'log',
          key,
          4,
          ({ first }) => [{ op: 'put', table: 'meta', item: item(key.pk, `at${first}`, 1) }],
          {
            set: { w: true },
          },
        );
        expect(c.first).toBe(3);
        expect(c.before?.attrs).toEqual({ keep: 1, w: false });
        expect(plain(await s.items.get('log', key))).toEqual(plain({ ...key, ver: 7, attrs: { keep: 1, w: true } }));
        expect(await s.items.get('meta', { pk: key.pk, sk: 'at3' })).toBeDefined();
        // Guards and queries see the set attributes as any other.
        expect((await s.items.query('log', key.pk)).items.map((i) => i.attrs)).toEqual([{ keep: 1, w: true }]);
        await s.items.transact([
          { op: 'check', table: 'log', key, cond: { kind: 'version', ver: 7 } },
          { op: 'put', table: 'meta', item: item(key.pk, 'after', 1) },
        ]);
      });

      it('of concurrent takes setting a flag, exactly one sees it unset', async () => {
        const key = { pk: uid(), sk: 'seq' };
        await s.items.put('log', { ...key, ver: 0, attrs: { w: false, other: 'kept' } });
        const got = await Promise.all(
          Array.from({ length: 12 }, () => s.items.take('log', key, 1, undefined, { set: { w: true } })),
        );
        expect(got.filter((t) => t.before?.attrs['w'] !== true)).toHaveLength(1);
        expect(got.every((t) => t.before?.attrs['other'] === 'kept')).toBe(true);
        expect((await s.items.get('log', key))?.attrs).toEqual({ w: true, other: 'kept' });
      });

      it('rolls the set attributes back with the counter when the writes after it fail where the numbers are not kept', async () => {
        const key = { pk: uid(), sk: 'seq' };
        await s.items.put('log', item(key.pk, 'S#0', 1));
        const err = (await s.items
          .take(
            'log',
            key,
            1,
            () => [{ op: 'put', table: 'log', item: item(key.pk, 'S#0', 1), cond: { kind: 'absent' } }],
            { set: { w: true } },
          )
          .catch((e: unknown) => e)) as TakeWriteError;
        expect(err).toBeInstanceOf(TakeWriteError);
        // Kept numbers keep the flag with them; rolled-back ones take it along.
        const after = await s.items.get('log', key);
        expect(after?.attrs).toEqual(err.taken ? { w: true } : undefined);
      });

      it('records the first number taken under setFirst, with the attributes it sets', async () => {
        const key = { pk: uid(), sk: 'seq' };
        await s.items.take('log', key, 5);
        const t = await s.items.take('log', key, 3, undefined, { set: { p0: 'x|1' }, setFirst: 'b0' });
        expect(t.first).toBe(5);
        expect((await s.items.get('log', key))?.attrs).toEqual({ p0: 'x|1', b0: 5 });
        await s.items.take('log', key, 2, undefined, { set: { p1: 'y|1' }, setFirst: 'b1' });
        expect((await s.items.get('log', key))?.attrs).toEqual({ p0: 'x|1', b0: 5, p1: 'y|1', b1: 8 });
      });

      it('refuses a take when a named attribute holds a string in the range, writing nothing', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const refuse = { anyOf: ['p0', 'p1', 'n'], after: 'me|005', upTo: 'me|~' };
        // Nothing there yet: taken.
        await s.items.take('log', key, 2, undefined, { set: { p0: 'me|005|a' }, setFirst: 'b0', refuseIf: refuse });
        // A value above `after` (the same prefix, longer) refuses; nothing is taken, set or written.
        const err = (await s.items
          .take('log', key, 4, () => [{ op: 'put', table: 'meta', item: item(key.pk, 'never', 1) }], {
            set: { p1: 'other' },
            refuseIf: refuse,
          })
          .catch((e: unknown) => e)) as TakeRefusedError;
        expect(err).toBeInstanceOf(TakeRefusedError);
        expect(plain(err.current)).toEqual(plain({ ...key, ver: 2, attrs: { p0: 'me|005|a', b0: 0 } }));
        expect(plain(await s.items.get('log', key))).toEqual(
          plain({ ...key, ver: 2, attrs: { p0: 'me|005|a', b0: 0 } }),
        );
        expect(await s.items.get('meta', { pk: key.pk, sk: 'never' })).toBeUndefined();
        // `after` itself, values below it, above `upTo`, and non-strings do not refuse.
        for (const p1 of ['me|005', 'me|004|z', 'mf', 'me|~~', 'md|999']) {
          await s.items.take('log', key, 1, undefined, { set: { p0: p1, n: 7 } });
          await s.items.take('log', key, 1, undefined, {
            refuseIf: { anyOf: ['p0', 'n'], after: 'me|005', upTo: 'me|~' },
          });
        }
        await s.items.take('log', key, 1, undefined, { set: { p0: 'me|~' } });
        await expect(
          s.items.take('log', key, 1, undefined, { refuseIf: { anyOf: ['p0'], after: 'me|005', upTo: 'me|~' } }),
        ).rejects.toSatisfy((e: unknown) => {
          if (!(e instanceof TakeRefusedError)) throw e as Error;
          return true;
        });
        expect((await s.items.get('log', key))?.ver).toBe(13);
      });

      it('of concurrent takes refused on the value they set, exactly one goes through', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const got = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            s.items.take('log', key, 1, undefined, {
              set: { p0: `me|007|${i}` },
              refuseIf: { anyOf: ['p0'], after: 'me|007', upTo: 'me|~' },
            }),
          ),
        );
        expect(got.filter((g) => g.status === 'fulfilled')).toHaveLength(1);
        const reasons = got.flatMap((g) => (g.status === 'rejected' ? [g.reason as unknown] : []));
        expect(reasons.every((r) => r instanceof TakeRefusedError)).toBe(true);
        expect((await s.items.get('log', key))?.ver).toBe(1);
      });

      it('refuses refuseIf bounds the adapters could compare differently', async () => {
        await expect(
          s.items.take('log', { pk: uid(), sk: 'seq' }, 1, undefined, {
            refuseIf: { anyOf: ['p0'], after: 'a b', upTo: '~' },
          }),
        ).rejects.toThrow(/printable ASCII/);
      });

      it('atMost: a take that would raise the counter past the bound takes nothing and throws ConditionFailedError', async () => {
        const key = { pk: uid(), sk: 'seq' };
        expect((await s.items.take('log', key, 3, undefined, { atMost: 5 })).first).toBe(0);
        const err = await s.items.take('log', key, 3, undefined, { atMost: 5 }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConditionFailedError);
        expect((err as ConditionFailedError).failed[0]?.current?.ver).toBe(3);
        // Nothing was taken, and writes built from it were not applied.
        let built = false;
        const err2 = await s.items
          .take('log', key, 9, () => ((built = true), []), { atMost: 5 })
          .catch((e: unknown) => e);
        expect(err2).toBeInstanceOf(ConditionFailedError);
        expect(built).toBe(false);
        expect((await s.items.get('log', key))?.ver).toBe(3);
        expect((await s.items.take('log', key, 2, undefined, { atMost: 5 })).first).toBe(3);
        // On an absent counter too.
        const fresh = { pk: uid(), sk: 'seq' };
        expect(await s.items.take('log', fresh, 2, undefined, { atMost: 1 }).catch((e: unknown) => e)).toBeInstanceOf(
          ConditionFailedError,
        );
        expect(await s.items.get('log', fresh)).toBeUndefined();
      });

      it('atMost under 40 parallel takes: exactly the takes that fit apply, the counter never passes the bound', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const got = await Promise.allSettled(
          Array.from({ length: 40 }, () => s.items.take('log', key, 1, undefined, { atMost: 25 })),
        );
        const ok = got.filter((g) => g.status === 'fulfilled');
        expect(ok).toHaveLength(25);
        const refused = got.flatMap((g) => (g.status === 'rejected' ? [g.reason as unknown] : []));
        expect(refused.every((e) => e instanceof ConditionFailedError)).toBe(true);
        expect(
          ok.map((g) => (g as PromiseFulfilledResult<{ first: number }>).value.first).sort((a, b) => a - b),
        ).toEqual(Array.from({ length: 25 }, (_, i) => i));
        expect((await s.items.get('log', key))?.ver).toBe(25);
      });

      it('refuses a count below 1', async () => {
        await expectValidationError(s.items.take('log', { pk: uid(), sk: 'seq' }, 0));
        await expectValidationError(s.items.take('log', { pk: uid(), sk: 'seq' }, 1.5));
      });

      it('40 parallel takes on one counter get disjoint ranges covering it exactly, with no retries', async () => {
        const key = { pk: uid(), sk: 'seq' };
        const counts = Array.from({ length: 40 }, (_, i) => 1 + (i % 3));
        const got = await Promise.all(counts.map((n) => s.items.take('log', key, n).then((t) => [t.first, n])));
        const offsets = got.flatMap(([first, n]) =>
          Array.from({ length: n as number }, (_, j) => (first as number) + j),
        );
        const total = counts.reduce((a, b) => a + b, 0);
        expect(offsets.sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
        expect((await s.items.get('log', key))?.ver).toBe(total);
      });
    });

    describe('blobs', () => {
      const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
      const text = (b: Uint8Array | undefined): string | undefined =>
        b === undefined ? undefined : Buffer.from(b).toString('utf8');
      const ns = (): string => `conformance/${randomUUID().slice(0, 13)}/`;

      it('put / get / overwrite / delete, missing reads undefined and missing delete is fine', async () => {
        const p = ns();
        expect(await s.blobs.get(`${p}seg/1`)).toBeUndefined();
        const raw = new Uint8Array([7, 0, 255, 1, 128, 10, 13, 7]).subarray(1, 7); // a view, as above
        await s.blobs.put(`${p}seg/1`, raw);
        expect(Buffer.from((await s.blobs.get(`${p}seg/1`)) ?? []).equals(Buffer.from(raw))).toBe(true);
        await s.blobs.put(`${p}seg/1`, bytes('replaced ✓'));
        expect(text(await s.blobs.get(`${p}seg/1`))).toBe('replaced ✓');
        await s.blobs.put(`${p}empty`, new Uint8Array(0));
        expect((await s.blobs.get(`${p}empty`))?.byteLength).toBe(0);
        await s.blobs.delete(`${p}seg/1`);
        expect(await s.blobs.get(`${p}seg/1`)).toBeUndefined();
        await s.blobs.delete(`${p}seg/1`);
        await s.blobs.delete(`${p}never/was`);
      });

      it('ifAbsent writes a new blob and refuses an existing one, leaving it intact', async () => {
        const p = ns();
        await s.blobs.put(`${p}once`, bytes('first'), { ifAbsent: true });
        const err = await expectConditionFailed(s.blobs.put(`${p}once`, bytes('second'), { ifAbsent: true }));
        expect(err.failed).toEqual([{ index: 0, current: undefined }]);
        expect(text(await s.blobs.get(`${p}once`))).toBe('first');
      });

      it('lists in key order under a prefix, with sizes, mtimes, after and paging', async () => {
        const p = ns();
        // 'a-b' sorts before 'a/…' ('-' < '/'), and 'a/10' before 'a/2': full-key byte order.
        const keys = ['a/1', 'a/2', 'a/10', 'a/sub/x', 'a-b', 'b', 'ab/c'];
        const before = Date.now();
        for (const k of keys) await s.blobs.put(`${p}${k}`, bytes(k.repeat(2)));
        const afterWrite = Date.now();
        const sorted = keys.map((k) => `${p}${k}`).sort();
        expect(sorted.map((k) => k.slice(p.length))).toEqual(['a-b', 'a/1', 'a/10', 'a/2', 'a/sub/x', 'ab/c', 'b']);

        const all = await s.blobs.list(p);
        expect(all.blobs.map((b) => b.key)).toEqual(sorted);
        expect(all.next).toBeUndefined();
        for (const b of all.blobs) {
          expect(b.size).toBe(b.key.slice(p.length).length * 2);
          // Generous window: emulators and S3 round mtimes and may run on a skewed clock.
          expect(b.modifiedAt).toBeGreaterThan(before - 120_000);
          expect(b.modifiedAt).toBeLessThan(afterWrite + 120_000);
        }

        expect((await s.blobs.list(`${p}a/1`)).blobs.map((b) => b.key)).toEqual([`${p}a/1`, `${p}a/10`]);
        expect((await s.blobs.list(`${p}a/`)).blobs.map((b) => b.key)).toEqual([
          `${p}a/1`,
          `${p}a/10`,
          `${p}a/2`,
          `${p}a/sub/x`,
        ]);
        expect((await s.blobs.list(`${p}a`)).blobs.map((b) => b.key)).toEqual(sorted.slice(0, 6));
        expect((await s.blobs.list(`${p}zz`)).blobs).toEqual([]);
        expect((await s.blobs.list(`${p}nothing/here/`)).blobs).toEqual([]);
        expect((await s.blobs.list(p, { after: `${p}a/10` })).blobs.map((b) => b.key)).toEqual(sorted.slice(3));
        expect((await s.blobs.list(p, { after: `${p}a/` })).blobs.map((b) => b.key)).toEqual(sorted.slice(1));

        const paged: string[] = [];
        let after: string | undefined;
        for (let i = 0; i < 10; i++) {
          const page = await s.blobs.list(p, { after, limit: 3 });
          expect(page.blobs.length).toBeLessThanOrEqual(3);
          paged.push(...page.blobs.map((b) => b.key));
          if (page.next === undefined) break;
          expect(page.next).toBe(page.blobs.at(-1)?.key);
          after = page.next;
        }
        expect(paged).toEqual(sorted);

        await s.blobs.delete(`${p}a/sub/x`);
        expect((await s.blobs.list(`${p}a/`)).blobs.map((b) => b.key)).toEqual([`${p}a/1`, `${p}a/10`, `${p}a/2`]);
      });

      it('20 parallel ifAbsent puts of one blob: exactly one wins', async () => {
        const key = `${ns()}race`;
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => s.blobs.put(key, bytes(`writer ${i}`), { ifAbsent: true })),
        );
        const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
        expect(won).toHaveLength(1);
        const losers = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).name] : []));
        expect(losers).toEqual(Array.from({ length: 19 }, () => 'ConditionFailedError'));
        expect(text(await s.blobs.get(key))).toBe(`writer ${won[0]}`);
      });
    });
  });
}
