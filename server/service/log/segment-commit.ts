import { encodeSegment, type Frame } from '../../codec/segment.js';
import type { SluiceConfig } from '../../config.js';
import { SluiceError } from '../../core/errors.js';
import type { Attrs, Item, Storage, TakeOptions, Taken, WriteOp } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import type { Telemetry } from '../telemetry.js';
import {
  MARKER_SLACK_S,
  committedMarker,
  segmentBlobKey,
  segmentItem,
  type PartitionRef,
  type QueueRecord,
  type SegmentAttrs,
} from './log-store.js';
import type { PushItem } from './push.js';

/**
 * What another service adds to every commit: attributes the offset take sets on the
 * partition's sequencer, and atomic writes built once the segment's offsets (and the
 * sequencer as the take found it) are known. When one of its ops' conditions fails, the
 * commit calls the hook again with `retry: true` (so it can re-read what it depends on) and
 * tries once more.
 */
export type CommitHook = (c: {
  queue: QueueRecord;
  partition: PartitionRef;
  at: number;
  retry: boolean;
}) => Promise<HookPlan> | HookPlan;

/** A commit hook's answer: ops to write atomically with the segment, and work to do once it committed. */
export interface HookPlan {
  /** Attributes the offset take sets on the partition's sequencer, in the same atomic write. */
  set?: Attrs | undefined;
  /**
   * The ops, for a segment at offsets `base..end` (called synchronously, inside the commit).
   * `befores`: the sequencer as each take of this commit found it, oldest first (a commit
   * whose write failed takes again, and then finds what its own first take set).
   */
  ops: (base: number, end: number, befores: readonly (Item | undefined)[]) => WriteOp[];
  /** Runs after the segment committed at `base..end` (not atomic with it). */
  after?: ((base: number, end: number) => Promise<void>) | undefined;
  /** Runs when the commit gave up after taking offsets (best effort), with what its takes found. */
  abandoned?: ((befores: readonly (Item | undefined)[]) => Promise<void>) | undefined;
}

/** Commit hooks' ops disagree on one key: a hook read stale state (the commit re-plans them). */
export class HookConflictError extends Error {
  override readonly name = 'HookConflictError';
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
  /** Index of the first commit-hook op in what {@link build} answers (segment put, marker, hooks). */
  hookStart: number;
  /** Runs the commit hooks' reads (again, with `retry`, after one of their guards failed). */
  planHooks(retry: boolean): Promise<void>;
  /** What the offset take sets on the sequencer (the hooks' attributes), for `take`'s options. */
  takeOptions(): TakeOptions;
  /**
   * The ops committing the segment at `taken.first`: segment put first (if absent), marker,
   * then the commit hooks' ops. Synchronous, so it can run inside a `take`. Throws
   * {@link HookConflictError} when the hooks' ops disagree.
   */
  build(taken: Taken): WriteOp[];
  /** Runs the commit hooks' after-commit work for the segment committed at `base`. */
  afterCommit(base: number): Promise<void>;
  /** Runs the commit hooks' clean-up after the commit gave up (best effort, errors logged). */
  abandon(): Promise<void>;
}

/** One message of a segment: the pushed item, its transactionId and its message id. */
export interface SegmentMessage {
  item: PushItem;
  txid: string;
  mid: string;
}

export interface SegmentCommitDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'inlineMaxBytes' | 'compressMinBytes'>;
  clock: () => number;
  cipher: PayloadCipherLike | undefined;
  hooks: readonly CommitHook[];
  /** Where a hook's failed after-commit or clean-up work is logged (the commit stands). */
  log: Pick<Telemetry, 'error'>;
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
 * await prep.planHooks(false);
 * await storage.items.take('log', logKeys.sequencer(partition.id), prep.count, (t) => prep.build(t), prep.takeOptions());
 * ```
 */
export async function prepareSegment(
  deps: SegmentCommitDeps,
  c: {
    queue: QueueRecord;
    partition: PartitionRef;
    pushId: string;
    messages: SegmentMessage[];
    reserved: boolean;
    /** Runs before a large segment's blob is uploaded (a check that may make the upload moot by throwing). */
    beforeUpload?: (() => Promise<void>) | undefined;
  },
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
  const bytes = await encodeSegment(frames, deps.config.compressMinBytes ?? 0);
  const inline = bytes.byteLength <= (deps.config.inlineMaxBytes ?? 8192);
  const blob = inline ? undefined : segmentBlobKey(part.id, pushId);
  // The blob goes first: a crash before the commit leaves an unreferenced blob for the
  // sweeper, never a segment pointing at nothing.
  if (blob) {
    await c.beforeUpload?.();
    await deps.storage.blobs.put(blob, bytes);
  }
  const needMarker = c.reserved || blob !== undefined;
  const windowS = queue.options.dedupWindowSeconds ?? 0;
  const count = msgs.length;
  let plans: HookPlan[] = [];
  const befores: (Item | undefined)[] = [];
  const seenTakes = new Set<number>();
  const logFailure = (message: string, e: unknown): void =>
    deps.log.error(message, {
      partitionId: part.id,
      error: e instanceof Error ? { name: e.name, message: e.message, stack: e.stack } : String(e),
    });
  return {
    queue,
    partition: part,
    pushId,
    at,
    count,
    needMarker,
    messages: msgs.map((m) => ({ id: m.mid, transactionId: m.txid, traceId: m.item.traceId ?? null })),
    hookStart: needMarker ? 2 : 1,
    planHooks: async (retry) => {
      plans = await Promise.all(deps.hooks.map(async (hook) => hook({ queue, partition: part, at, retry })));
    },
    takeOptions: () => {
      const set: Attrs = {};
      for (const p of plans) Object.assign(set, p.set);
      return Object.keys(set).length > 0 ? { set } : {};
    },
    build: (taken) => {
      const base = taken.first;
      // The same take may build twice (a hook re-planned): its before-image counts once.
      if (!seenTakes.has(base)) {
        seenTakes.add(base);
        befores.push(taken.before);
      }
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
      const merged = mergeOps(plans.flatMap((p) => p.ops(base, seg.end, befores)));
      if (merged === 'conflict') throw new HookConflictError('commit hooks disagree on an item; re-planning them');
      ops.push(...merged);
      return ops;
    },
    afterCommit: async (base) => {
      // The segment is committed: its after-work (not atomic with it) failing must not turn
      // an acknowledged commit into an error the client would retry (storing it twice).
      for (const p of plans) {
        if (!p.after) continue;
        try {
          await p.after(base, base + count - 1);
        } catch (e) {
          logFailure('after-commit work failed', e);
        }
      }
    },
    abandon: async () => {
      for (const p of plans) {
        if (!p.abandoned || befores.length === 0) continue;
        try {
          await p.abandoned(befores);
        } catch (e) {
          logFailure('clean-up after a failed commit failed', e);
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
