import { jsonNumber, jsonString, jsonStringOrNull } from './json-writer.js';
import { rawZstdFrame, readRawZstdFrame, zstd } from './zstd.js';

/**
 * The segment codec. A push of N messages becomes one segment: N length-prefixed frames,
 * concatenated, then zstd-compressed as one standard zstd frame (`zstd -d` reads it).
 *
 * Frame layout (all integers big-endian):
 * ```
 * u32 frameLength            bytes after this field
 * u16 headerLength
 * header                     UTF-8 JSON: {"i": messageId, "t": transactionId, "r": traceId|null,
 *                                         "c": createdAtMs, "e"?: 1 when the payload is sealed}
 * payload                    frameLength - 2 - headerLength bytes: the payload's JSON text
 *                            exactly as pushed (or its sealed envelope when "e" is set)
 * ```
 * Offsets are not stored in frames: a message's offset is its segment's base offset plus its
 * frame index, so a segment can be committed at whatever base the partition's tail is at.
 *
 * @example
 * ```ts
 * const bytes = await encodeSegment([{ id, transactionId, traceId: null, createdAt: now, payload }]);
 * const [first] = await decodeSegment(bytes);
 * ```
 */
export interface Frame {
  id: string;
  transactionId: string;
  traceId: string | null;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Payload bytes: JSON text, or a sealed envelope when `sealed`. */
  payload: Uint8Array;
  sealed?: boolean | undefined;
}

interface Header {
  i: string;
  t: string;
  r: string | null;
  c: number;
  e?: 1;
}

export function packFrames(frames: readonly Frame[]): Buffer {
  // Headers are built as text and the frames written into one buffer: this runs once per
  // message on the push path (see json-writer.ts for why not JSON.stringify).
  const headers = new Array<string>(frames.length);
  const headerBytes = new Array<number>(frames.length);
  let total = 0;
  let lastAt = NaN;
  let atText = '';
  for (let k = 0; k < frames.length; k++) {
    const f = frames[k] as Frame;
    // A segment's frames share one createdAt: format it once.
    if (f.createdAt !== lastAt) {
      lastAt = f.createdAt;
      atText = jsonNumber(f.createdAt);
    }
    const h = `{"i":${jsonString(f.id)},"t":${jsonString(f.transactionId)},"r":${jsonStringOrNull(f.traceId)},"c":${atText}${f.sealed ? ',"e":1' : ''}}`;
    const n = Buffer.byteLength(h, 'utf8');
    if (n > 0xffff) throw new RangeError('frame header over 64 KiB');
    headers[k] = h;
    headerBytes[k] = n;
    total += 6 + n + f.payload.byteLength;
  }
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (let k = 0; k < frames.length; k++) {
    const f = frames[k] as Frame;
    const n = headerBytes[k] as number;
    out.writeUInt32BE(2 + n + f.payload.byteLength, pos);
    out.writeUInt16BE(n, pos + 4);
    out.write(headers[k] as string, pos + 6, n, 'utf8');
    out.set(f.payload, pos + 6 + n);
    pos += 6 + n + f.payload.byteLength;
  }
  return out;
}

export function unpackFrames(raw: Uint8Array): Frame[] {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const out: Frame[] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (pos + 6 > buf.length) throw new Error('segment truncated in a frame prefix');
    const len = buf.readUInt32BE(pos);
    const hlen = buf.readUInt16BE(pos + 4);
    const end = pos + 4 + len;
    if (end > buf.length || hlen > len - 2) throw new Error('segment truncated in a frame');
    const h = JSON.parse(buf.toString('utf8', pos + 6, pos + 6 + hlen)) as Header;
    out.push({
      id: h.i,
      transactionId: h.t,
      traceId: h.r,
      createdAt: h.c,
      payload: buf.subarray(pos + 6 + hlen, end),
      sealed: h.e === 1 ? true : undefined,
    });
    pos = end;
  }
  return out;
}

/**
 * Frames → one zstd frame: compressed, or stored (raw blocks) when the packed frames are
 * under `compressMinBytes`, where the compressor call costs more than the bytes it saves.
 */
export async function encodeSegment(frames: readonly Frame[], compressMinBytes = 0): Promise<Uint8Array> {
  const packed = packFrames(frames);
  if (packed.length < compressMinBytes) return rawZstdFrame(packed);
  return (await zstd()).compress(packed);
}

/** One segment's zstd frame → its frames, in push order. */
export async function decodeSegment(bytes: Uint8Array): Promise<Frame[]> {
  const stored = readRawZstdFrame(bytes);
  return unpackFrames(stored ?? (await (await zstd()).decompress(bytes)));
}
