/**
 * Idempotent producers on the push path (docs/DELIVERY.md): what a stamped push adds to the
 * take that hands out its offsets, and how a push whose take was refused (the same stamp
 * committed before) is answered. The rules are pure, in `core/producer-sequence.ts`; this
 * module reads and writes the sequencer item and the segment at a remembered base.
 */
import { createHash } from 'node:crypto';
import {
  MAX_STAMP_ATTEMPTS,
  SLOT_ATTRS,
  chooseSlot,
  decodeEntry,
  encodeEntry,
  judgeFirstAttempt,
  judgeRefusal,
  refusalRange,
  slotAttr,
  wouldRefuse,
  slotBaseAttr,
  type ProducerEntry,
  type ProducerStamp,
} from '../../core/producer-sequence.js';
import { SluiceError, invalid } from '../../core/errors.js';
import { uuidv7Derived } from '../../core/ids.js';
import { TakeRefusedError, type Attrs, type Item, type Storage, type TakeOptions } from '../../storage/port.js';
import type { Telemetry } from '../telemetry.js';
import { logKeys, type PartitionRef } from './log-store.js';

/** Partitions whose sequencer state a process keeps in mind to pick slots (least recently used dropped). */
const SEEN_PARTITIONS = 4096;
/** How long a retry waits for its first attempt's segment to land before answering "in progress". */
const IN_FLIGHT_WAITS_MS = [25, 50, 100, 200, 400];

/** A stamped push's share of one partition, as the commit path carries it. */
export interface StampedShare {
  stamp: ProducerStamp;
  /** The entry this attempt writes: its time (its ids derive from it), the take's number, the offsets taken. */
  entry: ProducerEntry;
  /** The slot it goes to. */
  slot: number;
  /** Seed of the share's message ids and minted transactionIds (see {@link stampIds}). */
  seed: Buffer;
  /** The entry of the earlier take this one replaces, when re-storing (the refusal excludes it). */
  past?: ProducerEntry | undefined;
}

/** How a retried share is answered: from the first attempt, or by storing it now. */
export type RetryAnswer = { kind: 'committed'; base: number; at: number } | { kind: 'store'; share: StampedShare };

export interface ProducerSequencesDeps {
  storage: Storage;
  gapCloseMs: number;
  clock: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Closes a range a push took and will not write (a skip, put if absent). */
  closeRange: (partitionId: string, first: number, count: number, at: number) => Promise<void>;
  /** Where `StampEvicted` is counted. */
  telemetry?: Telemetry | undefined;
}

/**
 * The stamped-push half of a commit: take options that remember the stamp, and the answer to a
 * refused take.
 *
 * @example
 * ```ts
 * const share = sequences.share(part, stamp, items.length, now);
 * await storage.items.take('log', logKeys.sequencer(part.id), n, build, sequences.takeOptions(share));
 * ```
 */
export class ProducerSequences {
  /** partition id → the sequencer attributes this process last saw (for slot choice only). */
  private readonly seen = new Map<string, Attrs>();

  constructor(private readonly deps: ProducerSequencesDeps) {}

  /** The share of a first attempt of `stamp` at partition `part`, carrying `count` messages. */
  share(part: PartitionRef, stamp: ProducerStamp, count: number, at: number): StampedShare {
    const entry: ProducerEntry = {
      producerId: stamp.producerId,
      sequence: stamp.sequence,
      count,
      at,
      attempt: 0,
      taken: count,
    };
    return {
      stamp,
      entry,
      slot: chooseSlot(stamp.producerId, this.seen.get(part.id)),
      seed: stampSeed(stamp, part.id),
    };
  }

  /** The share's next take after `past` (a re-store, or a new range after a closed one). */
  next(part: PartitionRef, share: StampedShare, past: ProducerEntry): StampedShare {
    if (past.attempt >= MAX_STAMP_ATTEMPTS)
      throw new SluiceError('unavailable', 'this push was closed too many times before it could be written; retry it');
    // Our own time stays (the segment's ids derive from it); the attempt number orders the entries.
    const entry = { ...share.entry, attempt: past.attempt + 1 };
    return { ...share, entry, past, slot: chooseSlot(share.stamp.producerId, this.seen.get(part.id)) };
  }

  /** What the take of `share` sets and when it is refused (`share.entry.taken` is the take's count). */
  takeOptions(share: StampedShare): TakeOptions {
    const { after, upTo } = refusalRange(share.stamp, share.past);
    return {
      set: { [slotAttr(share.slot)]: encodeEntry(share.entry) },
      setFirst: slotBaseAttr(share.slot),
      refuseIf: { anyOf: [...SLOT_ATTRS], after, upTo },
    };
  }

  /**
   * Before a stamped push uploads a large segment's blob (an S3 PUT costs 8 write units): a read
   * of the sequencer, throwing {@link TakeRefusedError} as the take would when the stamp is
   * committed here already, so a retry of a big push uploads nothing.
   */
  async precheck(part: PartitionRef, share: StampedShare): Promise<void> {
    const item = await this.remembered(part, share);
    if (item) throw new TakeRefusedError(item);
  }

  /** The sequencer item when it holds this stamp (so a take would be refused), else `undefined`. */
  async remembered(part: PartitionRef, share: StampedShare): Promise<Item | undefined> {
    const item = await this.deps.storage.items.get('log', logKeys.sequencer(part.id));
    return item && wouldRefuse(item.attrs, refusalRange(share.stamp, share.past)) ? item : undefined;
  }

  /**
   * After a take of `share` went through (`before`: the sequencer as the take found it): counts
   * `StampEvicted` when the slot it wrote held another producer's entry, which is then forgotten
   * (a retry of that producer's last push here would be stored again), and keeps what it saw.
   * An AWS take recognised as its own retried attempt reports no slot values: nothing is counted.
   */
  took(part: PartitionRef, before: Item | undefined, share: StampedShare, first: number): void {
    const evicted = decodeEntry(before?.attrs[slotAttr(share.slot)]);
    if (evicted && evicted.producerId !== share.stamp.producerId)
      this.deps.telemetry?.count('StampEvicted', 1, {
        queue: part.queue,
        partition: part.name,
        producerId: evicted.producerId,
      });
    this.saw(part.id, before, share, first);
  }

  /**
   * Keeps what a take saw of the sequencer (with `share`: the item before a take that went
   * through, to which its own entry is added), so the next slot choice here is informed.
   */
  saw(partitionId: string, item: Item | undefined, share?: StampedShare, first?: number): void {
    let attrs: Attrs | undefined = item?.attrs;
    if (share && first !== undefined)
      attrs = { ...attrs, [slotAttr(share.slot)]: encodeEntry(share.entry), [slotBaseAttr(share.slot)]: first };
    if (!attrs) return;
    this.seen.delete(partitionId);
    this.seen.set(partitionId, attrs);
    if (this.seen.size > SEEN_PARTITIONS) this.seen.delete(this.seen.keys().next().value as string);
  }

  /**
   * Answers a share whose take was refused, from the sequencer as the refusal found it
   * (`current`): a retry of a committed push gets its base; a retry whose first attempt's
   * offsets were closed is stored now (the returned share); a stale or reused stamp is refused.
   * A first attempt still being written is waited for briefly, then answered 503 (retry later).
   */
  async answerRefusal(part: PartitionRef, share: StampedShare, current: Item | undefined): Promise<RetryAnswer> {
    this.saw(part.id, current);
    const { stamp, entry: mine } = share;
    const verdict = judgeRefusal(stamp, mine.count, current?.attrs);
    const where = `partition ${part.queue}/${part.name}`;
    switch (verdict.kind) {
      case 'stale':
        throw new SluiceError(
          'stale_sequence',
          `producer ${stamp.producerId} already pushed sequence ${verdict.last} to ${where}; sequence ${stamp.sequence} is older and was not stored (a late repeat of a push that was answered)`,
          { producerId: stamp.producerId, sequence: stamp.sequence, lastSequence: verdict.last },
        );
      case 'reused':
        throw invalid(
          `producer ${stamp.producerId} pushed sequence ${stamp.sequence} to ${where} with ${verdict.count} messages; a retry must repeat the same push (this one has ${mine.count})`,
          { producerId: stamp.producerId, sequence: stamp.sequence },
        );
      case 'again':
        // A refusal that named no entry of this producer (an item edited by hand): never guess.
        throw new SluiceError(
          'unavailable',
          `the sequencer of ${where} refused this push without saying why; retry it`,
        );
      case 'retry':
        break;
    }
    const { entry, base } = verdict;
    for (let wait = 0; ; wait++) {
      const seg = await this.deps.storage.items.get('log', logKeys.segment(part.id, base));
      const count = seg ? Number((seg.attrs as { count?: number }).count ?? 0) : 0;
      const state = judgeFirstAttempt({
        now: this.deps.clock(),
        entry,
        segment: seg ? { count } : undefined,
        gapCloseMs: this.deps.gapCloseMs,
      });
      if (state === 'committed') return { kind: 'committed', base, at: entry.at };
      if (state === 'closed') return { kind: 'store', share: this.next(part, share, entry) };
      if (state === 'abandoned') {
        // The first attempt died after its take: close its range as a reader would, then look again
        // (its writer may have landed first, and then it is committed).
        await this.deps.closeRange(part.id, base, entry.taken, this.deps.clock());
        continue;
      }
      const ms = IN_FLIGHT_WAITS_MS[wait];
      if (ms === undefined)
        throw new SluiceError(
          'unavailable',
          `the first attempt of this push (producer ${stamp.producerId}, sequence ${stamp.sequence}) to ${where} is still being written; retry it`,
        );
      await this.deps.sleep(ms);
    }
  }
}

/**
 * The seed of a stamped share's ids: the same stamp and partition give the same message ids
 * (with the first attempt's time), so a retry answers with the ids the first attempt stored.
 */
export function stampSeed(stamp: ProducerStamp, partitionId: string): Buffer {
  return createHash('sha256').update(`${stamp.producerId}\u0000${stamp.sequence}\u0000${partitionId}`).digest();
}

/**
 * Message id and minted transactionId of item `i` of a stamped share.
 *
 * @example
 * ```ts
 * stampIds(seed, at, 0).mid === stampIds(seed, at, 0).mid; // true
 * ```
 */
export function stampIds(seed: Buffer, at: number, i: number): { mid: string; txid: string } {
  return { mid: uuidv7Derived(at, seed, 2 * i), txid: uuidv7Derived(at, seed.subarray(10), 2 * i + 1) };
}
