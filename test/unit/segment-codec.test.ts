import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeSegment, encodeSegment, packFrames, unpackFrames, type Frame } from '../../server/codec/segment.js';
import { rawZstdFrame, readRawZstdFrame, zstd } from '../../server/codec/zstd.js';

const frame = (i: number, payload: string): Frame => ({
  id: `m${i}`,
  transactionId: `t${i}`,
  traceId: i % 2 ? null : `tr${i}`,
  createdAt: 1_700_000_000_000 + i,
  payload: Buffer.from(payload),
});

describe('unit: segment codec', () => {
  it('packs and unpacks length-prefixed frames exactly', () => {
    const frames = [frame(0, '{"a":1}'), frame(1, 'null'), frame(2, '"ü✓"'), { ...frame(3, ''), sealed: true }];
    const back = unpackFrames(packFrames(frames));
    expect(back.map((f) => ({ ...f, payload: Buffer.from(f.payload).toString() }))).toEqual(
      frames.map((f) => ({ ...f, payload: Buffer.from(f.payload).toString(), sealed: f.sealed ? true : undefined })),
    );
  });
  it('round-trips through zstd', async () => {
    const frames = Array.from({ length: 500 }, (_, i) => frame(i, JSON.stringify({ i, text: 'x'.repeat(i % 50) })));
    const bytes = await encodeSegment(frames);
    const back = await decodeSegment(bytes);
    expect(back).toHaveLength(500);
    expect(Buffer.from(back[499]!.payload).toString()).toBe(JSON.stringify({ i: 499, text: 'x'.repeat(499 % 50) }));
  });
  it('writes each frame header as the JSON text JSON.stringify gives (layout pinned byte for byte)', () => {
    // Strings that need escaping, non-ASCII, a lone surrogate, a surrogate pair, mixed createdAt.
    const odd = ['q"uote', 'back\\slash', 'tab\there', 'ü✓', '\ud800lone', '😀pair', 'plain'];
    const frames: Frame[] = odd.map((s, i) => ({
      id: `id-${s}`,
      transactionId: s,
      traceId: i % 2 ? s : null,
      createdAt: i < 3 ? 1_700_000_000_000 : 1.5 + i,
      payload: Buffer.from(`{"n":${i}}`),
      sealed: i === 4 ? true : undefined,
    }));
    const raw = packFrames(frames);
    const expected = Buffer.concat(
      frames.flatMap((f) => {
        const header = Buffer.from(
          JSON.stringify({ i: f.id, t: f.transactionId, r: f.traceId, c: f.createdAt, ...(f.sealed ? { e: 1 } : {}) }),
        );
        const prefix = Buffer.alloc(6);
        prefix.writeUInt32BE(2 + header.length + f.payload.byteLength, 0);
        prefix.writeUInt16BE(header.length, 4);
        return [prefix, header, Buffer.from(f.payload)];
      }),
    );
    expect(raw.equals(expected)).toBe(true);
    expect(unpackFrames(raw).map((f) => f.transactionId)).toEqual(
      odd.map((s) => JSON.parse(JSON.stringify(s)) as string),
    );
  });
  it('refuses a frame header over 64 KiB', () => {
    expect(() => packFrames([{ ...frame(0, '{}'), transactionId: 'x'.repeat(70_000) }])).toThrow(/64 KiB/);
  });
  it('refuses truncated segments', () => {
    const raw = packFrames([frame(0, '{"a":1}')]);
    expect(() => unpackFrames(raw.subarray(0, raw.length - 1))).toThrow(/truncated/);
  });
  it('writes frames the zstd CLI reads, and reads frames the CLI writes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-zstd-'));
    const frames = [frame(0, '{"hello":"world"}'), frame(1, '[1,2,3]')];
    writeFileSync(join(dir, 'seg.zst'), await encodeSegment(frames));
    execFileSync('zstd', ['-q', '-d', '-f', join(dir, 'seg.zst'), '-o', join(dir, 'seg.raw')]);
    expect(unpackFrames(readFileSync(join(dir, 'seg.raw'))).map((f) => f.id)).toEqual(['m0', 'm1']);
    writeFileSync(join(dir, 'cli.raw'), packFrames(frames));
    execFileSync('zstd', ['-q', '-f', join(dir, 'cli.raw'), '-o', join(dir, 'cli.zst')]);
    const back = await decodeSegment(readFileSync(join(dir, 'cli.zst')));
    expect(back.map((f) => Buffer.from(f.payload).toString())).toEqual(['{"hello":"world"}', '[1,2,3]']);
    expect((await zstd()).impl).toMatch(/zlib|mongodb/);
  });
  it('stores small segments as raw zstd frames that the zstd CLI and the native decoder read, at every header size', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-zstd-raw-'));
    const z = await zstd();
    // 1-, 2- and 4-byte content sizes, their edges, and more than one 128 KiB block.
    for (const n of [0, 1, 255, 256, 65_791, 65_792, 131_072, 300_001]) {
      const data = Buffer.alloc(n, 0).map((_, i) => (i * 7) % 251);
      const frame = rawZstdFrame(data);
      expect(Buffer.from(await z.decompress(frame)).equals(data)).toBe(true);
      expect(Buffer.from(readRawZstdFrame(frame) ?? []).equals(data)).toBe(true);
      writeFileSync(join(dir, `raw-${n}.zst`), frame);
      execFileSync('zstd', ['-q', '-d', '-f', join(dir, `raw-${n}.zst`), '-o', join(dir, `raw-${n}`)]);
      expect(readFileSync(join(dir, `raw-${n}`)).equals(data)).toBe(true);
    }
  });
  it('encodes under compressMinBytes as a raw frame and above it compressed; decodes both', async () => {
    const frames = Array.from({ length: 20 }, (_, i) => frame(i, JSON.stringify({ i, text: 'x'.repeat(40) })));
    const packed = packFrames(frames).length;
    const raw = await encodeSegment(frames, packed + 1);
    const compressed = await encodeSegment(frames, packed);
    expect(readRawZstdFrame(raw)).toBeDefined();
    expect(readRawZstdFrame(compressed)).toBeUndefined();
    expect(compressed.length).toBeLessThan(raw.length);
    for (const bytes of [raw, compressed])
      expect((await decodeSegment(bytes)).map((f) => f.id)).toEqual(frames.map((f) => f.id));
  });
  it('leaves any other frame to the decoder: compressed, checksummed, truncated or trailing bytes', async () => {
    const data = Buffer.from('{"a":1}');
    expect(readRawZstdFrame(await (await zstd()).compress(data))).toBeUndefined();
    const frame = Buffer.from(rawZstdFrame(data));
    expect(readRawZstdFrame(frame.subarray(0, frame.length - 1))).toBeUndefined();
    expect(readRawZstdFrame(Buffer.concat([frame, Buffer.from([0])]))).toBeUndefined();
    const checksummed = Buffer.from(frame);
    checksummed[4] = (checksummed[4] as number) | 0x04;
    expect(readRawZstdFrame(checksummed)).toBeUndefined();
  });
});
