/**
 * Cutting what a target is sent: which records are filed as dead letters without a delivery,
 * and which go out together in one event. Pure: the records' sizes and ages come in, `now` is
 * explicit.
 *
 * The model, on one page:
 * - A record is *expired* when `now - createdAt > maxRecordAgeMs` (Lambda's
 *   `MaximumRecordAgeInSeconds`; -1: never), and *too large* when an event holding it alone
 *   exceeds `maxEventBytes`. Neither is ever sent: both are filed (dead-lettered) as they are.
 * - An event is `{"version":…,"records":[r1,r2,…]}`; its size is the envelope (the event with
 *   `records: []`) plus each record's JSON plus one comma between records
 *   ({@link eventBytes}), which is exactly the UTF-8 length of `JSON.stringify(event)`.
 * - Lease mode (one partition, offset order): a lease acks by prefix, so only the head may be
 *   filed. Expired and too-large records at the head are filed, in order; the event is then the
 *   longest prefix of the rest within `batchSize` and `maxEventBytes`, ending before the first
 *   expired record, so that record heads the next cut and is filed then.
 * - Claim mode (any order): every expired or too-large record is filed where it is; the rest
 *   are packed, in their order, into as many events as they need.
 *
 * @example
 * ```ts
 * const cut = cutLeaseBatch(records, { batchSize: 100, maxEventBytes: 6_000_000, maxRecordAgeMs: -1, envelopeBytes }, now);
 * // dead-letter records[0 .. cut.file.length), then send records[cut.file.length .. cut.file.length + cut.send)
 * ```
 */

/** What cutting needs of a record. */
export interface CutRecord {
  offset: number;
  /** Epoch ms the record was written. */
  createdAt: number;
  /** UTF-8 length of the record's JSON in the event (`TargetRecord`). */
  bytes: number;
}

export interface CutLimits {
  /** Most records in one event (`batchSize`). */
  batchSize: number;
  /** Most bytes one event may take as JSON (the envelope included when `envelopeBytes` is given). */
  maxEventBytes: number;
  /** Records older than this are filed, not sent; -1: no limit (`maximumRecordAgeInSeconds` × 1000). */
  maxRecordAgeMs: number;
  /** UTF-8 length of the event with `records: []` ({@link eventBytes}); 0 when absent, so `maxEventBytes` bounds the records alone. */
  envelopeBytes?: number | undefined;
}

/** Why a record is filed without a delivery. */
export type FileReason = 'record-age' | 'too-large';

/** A record to file as a dead letter: its index in the input. */
export interface Filed {
  index: number;
  reason: FileReason;
}

/** Bytes an event's `records` array takes per record after the first: the comma between them. */
export const RECORD_SEPARATOR_BYTES = 1;

/**
 * The exact size of an event as `JSON.stringify` writes it: its envelope (the event with
 * `records: []`) plus each record's JSON and the commas between them.
 *
 * @example
 * ```ts
 * const envelope = Buffer.byteLength(JSON.stringify({ ...event, records: [] }));
 * const sizes = event.records.map((r) => Buffer.byteLength(JSON.stringify(r)));
 * eventBytes(envelope, sizes) === Buffer.byteLength(JSON.stringify(event)); // true
 * ```
 */
export function eventBytes(envelopeBytes: number, recordBytes: readonly number[]): number {
  let sum = envelopeBytes;
  for (const b of recordBytes) sum += b;
  return sum + Math.max(0, recordBytes.length - 1) * RECORD_SEPARATOR_BYTES;
}

/** Why a record may not be sent at `now`, if it may not. */
function unsendable(r: CutRecord, limits: CutLimits, now: number): FileReason | undefined {
  if (limits.maxRecordAgeMs >= 0 && now - r.createdAt > limits.maxRecordAgeMs) return 'record-age';
  if ((limits.envelopeBytes ?? 0) + r.bytes > limits.maxEventBytes) return 'too-large';
  return undefined;
}

/** What to do with one partition's records: file the head, then send a prefix of the rest. */
export interface LeaseCut {
  /** The head records to dead-letter, in order: always indexes 0 .. file.length - 1. */
  file: Filed[];
  /** How many records after the filed ones go out in this event (≥ 1 whenever any record is left). */
  send: number;
}

/**
 * Cuts one partition's records (in offset order) for a lease: the head that is expired or too
 * large is filed, then the longest prefix that fits one event is sent. An expired or too-large
 * record after the first one sent ends the event and is filed when it reaches the head.
 *
 * @example
 * ```ts
 * const limits = { batchSize: 2, maxEventBytes: 1000, maxRecordAgeMs: 60_000 };
 * cutLeaseBatch([{ offset: 7, createdAt: now - 90_000, bytes: 10 }, fresh8, fresh9, fresh10], limits, now);
 * // { file: [{ index: 0, reason: 'record-age' }], send: 2 }: 7 is filed, 8 and 9 go out
 * ```
 */
export function cutLeaseBatch(records: readonly CutRecord[], limits: CutLimits, now: number): LeaseCut {
  const file: Filed[] = [];
  let i = 0;
  for (; i < records.length; i++) {
    const reason = unsendable(records[i]!, limits, now);
    if (reason === undefined) break;
    file.push({ index: i, reason });
  }
  const envelope = limits.envelopeBytes ?? 0;
  let bytes = envelope;
  let send = 0;
  for (let j = i; j < records.length && send < limits.batchSize; j++) {
    const r = records[j]!;
    // Past the first record, an unsendable one waits to become the head (only a head is filed).
    if (send > 0 && unsendable(r, limits, now) !== undefined) break;
    const next = bytes + r.bytes + (send > 0 ? RECORD_SEPARATOR_BYTES : 0);
    if (next > limits.maxEventBytes) break;
    bytes = next;
    send++;
  }
  return { file, send };
}

/** What to do with claimed records: file some wherever they are, send the rest in events. */
export interface ClaimCut {
  /** The records to dead-letter, in input order. */
  file: Filed[];
  /** Each event's records as input indexes, in input order; every index is in `file` or in one event. */
  batches: number[][];
}

/**
 * Cuts claimed records (any order): every expired or too-large record is filed, the rest are
 * packed in order into events of at most `batchSize` records and `maxEventBytes`.
 *
 * @example
 * ```ts
 * cutClaimBatches(records, { batchSize: 10, maxEventBytes: 6_000_000, maxRecordAgeMs: -1 }, now);
 * // { file: [{ index: 3, reason: 'too-large' }], batches: [[0, 1, 2, 4, …], […]] }
 * ```
 */
export function cutClaimBatches(records: readonly CutRecord[], limits: CutLimits, now: number): ClaimCut {
  const file: Filed[] = [];
  const batches: number[][] = [];
  const envelope = limits.envelopeBytes ?? 0;
  let current: number[] = [];
  let bytes = envelope;
  records.forEach((r, index) => {
    const reason = unsendable(r, limits, now);
    if (reason !== undefined) {
      file.push({ index, reason });
      return;
    }
    const grown = bytes + r.bytes + (current.length > 0 ? RECORD_SEPARATOR_BYTES : 0);
    if (current.length >= limits.batchSize || grown > limits.maxEventBytes) {
      batches.push(current);
      current = [];
      bytes = envelope;
    }
    bytes += r.bytes + (current.length > 0 ? RECORD_SEPARATOR_BYTES : 0);
    current.push(index);
  });
  if (current.length > 0) batches.push(current);
  return { file, batches };
}
