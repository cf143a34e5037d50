import { zstd } from './zstd.js';

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
  const parts: Buffer[] = [];
  let total = 0;
  for (const f of frames) {
    const h: Header = { i: f.id, t: f.transactionId, r: f.traceId, c: f.createdAt };
    if (f.sealed) h.e = 1;
    const header = Buffer.from(JSON.stringify(h), 'utf8');
    if (header.length > 0xffff) throw new RangeError('frame header over 64 KiB');
    const prefix = Buffer.allocUnsafe(6);
    prefix.writeUInt32BE(2 + header.length + f.payload.byteLength, 0);
    prefix.writeUInt16BE(header.length, 4);
    parts.push(prefix, header, Buffer.from(f.payload.buffer, f.payload.byteOffset, f.payload.byteLength));
    total += 6 + header.length + f.payload.byteLength;
  }
  return Buffer.concat(parts, total);
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

/** Frames → one compressed zstd frame. */
export async function encodeSegment(frames: readonly Frame[]): Promise<Uint8Array> {
  return (await zstd()).compress(packFrames(frames));
}

/** One compressed segment → its frames, in push order. */
export async function decodeSegment(bytes: Uint8Array): Promise<Frame[]> {
  return unpackFrames(await (await zstd()).decompress(bytes));
}
