import { encodeSegment, type Frame } from '../../codec/segment.js';
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import type { Item, Storage, WriteOp } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import {
  MARKER_SLACK_S,
  committedMarker,
  segmentAttrsOf,
  segmentBlobKey,
  segmentItem,
  type PartitionRef,
  type QueueRecord,
  type SegmentAttrs,
} from './log-store.js';
import type { PushItem } from './push.js';
import type { SegmentReader } from './segments.js';
import type { TailHints } from './tail-hints.js';

/**
 * Extra atomic writes another service adds to every commit (an index entry, a guard on the
 * group list). When one of its ops' conditions fails, the commit calls the hook again with
 * `retry: true` (so it can re-read what it depends on) and tries once more.
 */
export type CommitHook = (c: {
  queue: QueueRecord;
  partition: PartitionRef;
  base: number;
  end: number;
  at: number;
  retry: boolean;
}) => Promise<WriteOp[] | HookOps> | WriteOp[] | HookOps;

/** A commit hook's answer: ops to write atomically with the segment, and work to do once it committed. */
export interface HookOps {
  ops: WriteOp[];
  /** Runs after the segment committed (not atomic with it). */
  after?: (() => Promise<void>) | undefined;
}

/** A segment ready to commit: see {@link prepareSegment}. */
export interface PreparedCommit {
  queue: QueueRecord;
  partition: PartitionRef;
  pushId: string;
  /** Push time of every message in it. */
  at: number;
  count: number;
  /** Whether the ops include a commit marker (at index 1). */
  needMarker: boolean;
  /** The messages' ids, in offset order from the base. */
  messages: { id: string; transactionId: string; traceId: string | null }[];
  /** Where to try first (the tail as last seen). */
  firstBase(): Promise<number>;
  /** After the segment put at a base failed: the next base to try. */
  nextBase(current: Item | undefined, collisions: number): Promise<number>;
  /** The ops committing the segment at `base`: segment put first, marker, then the commit hooks' ops. */
  ops(base: number, hookRetry: boolean): Promise<{ ops: WriteOp[]; hookStart: number } | 'hook-conflict'>;
  /** Records a commit at `base`. */
  done(base: number): void;
  /** Runs the commit hooks' after-commit work of the last built ops. */
  afterCommit(): Promise<void>;
}

/** One message of a segment: the pushed item, its transactionId and its message id. */
export interface SegmentMessage {
  item: PushItem;
  txid: string;
  mid: string;
}

export interface SegmentCommitDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'inlineMaxBytes'>;
  clock: () => number;
  cipher: PayloadCipherLike | undefined;
  /** Where the tail is when the hint is missing or stale. */
  segments: Pick<SegmentReader, 'readTail'>;
  tails: TailHints;
  hooks: readonly CommitHook[];
}

/** Refuses (before anything is written) a push to an encrypted queue this process cannot seal for. */
export function assertCanSeal(queue: QueueRecord, cipher: PayloadCipherLike | undefined): void {
  if (queue.options.encryptionEnabled && !cipher) {
    throw new SluiceError(
      'unavailable',
      `queue ${queue.name} has encryptionEnabled, but this server has no encryption key (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)`,
    );
  }
}

/**
 * Everything needed to commit one segment, short of the write itself: frames encoded (and
 * sealed on an encrypted queue), the blob uploaded for a large segment, and the ops for a
 * given base (docs/STORAGE.md, "How a push commits"). A push commits them with one write;
 * a transaction puts the same ops into one atomic write with other changes.
 *
 * @example
 * ```ts
 * const prep = await prepareSegment(deps, { queue, partition, pushId, messages, reserved: false });
 * const built = await prep.ops(await prep.firstBase(), false); // segment put, marker, hook ops
 * ```
 */
export async function prepareSegment(
  deps: SegmentCommitDeps,
  c: { queue: QueueRecord; partition: PartitionRef; pushId: string; messages: SegmentMessage[]; reserved: boolean },
): Promise<PreparedCommit> {
  const { queue, partition: part, pushId, messages: msgs } = c;
  const at = deps.clock();
  const sealed = queue.options.encryptionEnabled;
  const cipher = deps.cipher;
  assertCanSeal(queue, cipher);
  const frames: Frame[] = await Promise.all(
    msgs.map(async (m) => ({
      id: m.mid,
      transactionId: m.txid,
      traceId: m.item.traceId ?? null,
      createdAt: at,
      payload: sealed && cipher ? await cipher.seal(m.item.payload) : m.item.payload,
      sealed: sealed ? true : undefined,
    })),
  );
  const raw = frames.reduce((n, f) => n + f.payload.byteLength + 64, 0);
  const bytes = await encodeSegment(frames);
  const inline = bytes.byteLength <= (deps.config.inlineMaxBytes ?? 4096);
  const blob = inline ? undefined : segmentBlobKey(part.id, pushId);
  // The blob goes first: a crash before the commit leaves an unreferenced blob for the
  // sweeper, never a segment pointing at nothing.
  if (blob) await deps.storage.blobs.put(blob, bytes);
  const needMarker = c.reserved || blob !== undefined;
  const windowS = queue.options.dedupWindowSeconds ?? 0;
  const count = msgs.length;
  let afters: (() => Promise<void>)[] = [];
  return {
    queue,
    partition: part,
    pushId,
    at,
    count,
    needMarker,
    messages: msgs.map((m) => ({ id: m.mid, transactionId: m.txid, traceId: m.item.traceId ?? null })),
    // On a queue with retention the hint may point into a prefix retention has deleted since
    // (another process pushed on meanwhile): a segment put there would find its key free and
    // reuse offsets below the head. So such queues read the tail (one query); retention never
    // deletes the newest segment, so a put at the tail collides with any segment after it.
    firstBase: async () =>
      (queue.options.retentionEnabled ? undefined : deps.tails.get(part.id)) ??
      (await deps.segments.readTail(part.id)).next,
    // A stale hint (another process has been pushing here) would walk one segment per
    // failed write, so after two collisions in a row ask for the tail instead.
    nextBase: async (current, collisions) => {
      const cur = current ? segmentAttrsOf(current) : undefined;
      return cur && collisions <= 2 ? cur.end + 1 : (await deps.segments.readTail(part.id)).next;
    },
    ops: async (base, hookRetry) => {
      const seg: SegmentAttrs = { base, end: base + count - 1, count, at, push: pushId, size: bytes.byteLength, raw };
      if (blob) seg.blob = blob;
      const ops: WriteOp[] = [
        {
          op: 'put',
          table: 'log',
          item: segmentItem(part.id, seg, inline ? bytes : undefined),
          cond: { kind: 'absent' },
        },
      ];
      if (needMarker) {
        // A marker guarding a blob lives as long as the segment; a dedup-only one, as long as its reservations.
        const expiresAt = blob ? undefined : Math.ceil(at / 1000) + windowS + MARKER_SLACK_S;
        ops.push({
          op: 'put',
          table: 'log',
          item: committedMarker(part.id, pushId, { base, count, at }, expiresAt),
          cond: { kind: 'absent' },
        });
      }
      const hookStart = ops.length;
      const extra: WriteOp[] = [];
      afters = [];
      for (const hook of deps.hooks) {
        const r = await hook({ queue, partition: part, base, end: seg.end, at, retry: hookRetry });
        if (Array.isArray(r)) extra.push(...r);
        else {
          extra.push(...r.ops);
          if (r.after) afters.push(r.after);
        }
      }
      const merged = mergeOps(extra);
      if (merged === 'conflict') return 'hook-conflict';
      ops.push(...merged);
      return { ops, hookStart };
    },
    done: (base) => {
      deps.tails.set(part.id, base + count);
    },
    afterCommit: async () => {
      // The segment is committed: its after-work (not atomic with it) failing must not turn
      // an acknowledged commit into an error the client would retry (storing it twice).
      for (const f of afters) {
        try {
          await f();
        } catch (e) {
          console.error(
            JSON.stringify({
              level: 'ERROR',
              message: 'after-commit work failed',
              partitionId: part.id,
              error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
            }),
          );
        }
      }
    },
  };
}

/**
 * Merges the ops several commit hooks contributed: identical ops on one key collapse into
 * one (two hooks may both guard the group-list version); different ops on one key mean a
 * hook read stale state, so the caller re-runs the hooks with `retry: true`.
 */
export function mergeOps(ops: readonly WriteOp[]): WriteOp[] | 'conflict' {
  const seen = new Map<string, string>();
  const out: WriteOp[] = [];
  for (const op of ops) {
    const key = op.op === 'put' ? op.item : op.key;
    const id = JSON.stringify([op.table, key.pk, key.sk]);
    const body = JSON.stringify(op, (_k, v: unknown) =>
      v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
    );
    const prev = seen.get(id);
    if (prev === undefined) {
      seen.set(id, body);
      out.push(op);
    } else if (prev !== body) return 'conflict';
  }
  return out;
}
