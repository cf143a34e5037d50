import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeSegment, encodeSegment, packFrames, unpackFrames, type Frame } from '../../lambdas/codec/segment.js';
import { zstd } from '../../lambdas/codec/zstd.js';

const frame = (i: number, payload: string): Frame => ({ id: `m${i}`, transactionId: `t${i}`, traceId: i % 2 ? null : `tr${i}`, createdAt: 1_700_000_000_000 + i, payload: Buffer.from(payload) });

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
});
