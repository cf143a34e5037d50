import type { SluiceConfig } from '../../config.js';
import { judgeReservation, reservationJson, type MarkerState } from '../../core/dedup.js';
import { SluiceError } from '../../core/errors.js';
import { ConditionFailedError, type Item, type Storage, type WriteOp, type WriteResult } from '../../storage/port.js';
import { abortedMarker, decodeReservation, logKeys, markerExpiry, reservationItem } from './log-store.js';
import type { PartitionRef } from './log-store.js';

/** One transactionId a push reserves: `i` is the item's index in the push. */
export interface ReservationEntry {
  i: number;
  txid: string;
  mid: string;
}

export interface DedupReservationsDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'pushStallMs'>;
  clock: () => number;
  sleep: (ms: number) => Promise<void>;
}

/**
 * Dedup by transactionId for pushes: each client-supplied transactionId is reserved with a
 * put-if-absent naming the push, and counts once that push's marker says `committed`
 * (docs/STORAGE.md, "Dedup by transactionId"; the decisions are `core/dedup.ts`).
 *
 * @example
 * ```ts
 * const dups = await reservations.reserve(part, pushId, [{ i: 0, txid: 'order-42', mid }], 3_600_000);
 * dups.get(0); // the original's message id when 'order-42' was already committed
 * ```
 */
export class DedupReservations {
  constructor(private readonly deps: DedupReservationsDeps) {}

  /**
   * Reserves transactionIds for `pushId`. Returns, for each one that is a duplicate of a
   * committed message inside the window, the original's message id.
   */
  async reserve(
    part: PartitionRef,
    pushId: string,
    entries: ReservationEntry[],
    windowMs: number,
  ): Promise<Map<number, string>> {
    const dups = new Map<number, string>();
    const expiresAt = (now: number): number => markerExpiry(now, windowMs);
    const deadline = this.deps.clock() + this.deps.config.pushStallMs * 2 + 5000;
    // First round: put-if-absent every reservation.
    let now = this.deps.clock();
    const exp = expiresAt(now);
    const absent = { kind: 'absent' } as const;
    const json = reservationJson(pushId, now);
    const ops: WriteOp[] = new Array<WriteOp>(entries.length);
    for (let j = 0; j < entries.length; j++) {
      const e = entries[j] as ReservationEntry;
      const item = reservationItem(part.id, e.txid, 1, { push: pushId, mid: e.mid, at: now }, exp, json(e.mid));
      ops[j] = { op: 'put', table: 'dedup', item, cond: absent };
    }
    // Durable with the push's commit: a reservation a crash loses belonged to an unanswered push,
    // and a concurrent duplicate is answered only once the holder's marker is committed.
    const results = await this.deps.storage.items.writeEach(ops, { deferDurability: true });
    // Only the contested ones get an object: usually there are none.
    let contested: { e: ReservationEntry; current: Item | undefined }[] = [];
    for (let j = 0; j < results.length; j++) {
      const r = results[j] as WriteResult;
      if (!r.ok) contested.push({ e: entries[j] as ReservationEntry, current: r.current });
    }
    while (contested.length > 0) {
      if (this.deps.clock() > deadline)
        throw new SluiceError('unavailable', 'could not settle transactionId reservations in time; retry the push');
      now = this.deps.clock();
      // Look up the holders' markers in one batch.
      const holders = [
        ...new Set(
          contested
            .map((c) => (c.current ? decodeReservation(c.current) : undefined)?.push)
            .filter((p): p is string => !!p && p !== pushId),
        ),
      ];
      const markers = new Map<string, MarkerState>();
      for (let k = 0; k < holders.length; k += 100) {
        const chunk = holders.slice(k, k + 100);
        const got = await this.deps.storage.items.getMany(
          'log',
          chunk.map((p) => logKeys.marker(part.id, p)),
        );
        chunk.forEach((p, j) => markers.set(p, (got[j]?.attrs.state as MarkerState | undefined) ?? 'absent'));
      }
      const replace: { e: ReservationEntry; ver: number | undefined }[] = [];
      const replacing = new Set<number>();
      const abort = new Set<string>();
      let waiting = false;
      for (const c of contested) {
        if (!c.current) {
          replace.push({ e: c.e, ver: undefined });
          replacing.add(c.e.i);
          continue;
        }
        const r = decodeReservation(c.current);
        if (r.push === pushId) continue; // already ours
        const d = judgeReservation({
          now,
          windowMs,
          stallMs: this.deps.config.pushStallMs,
          reservation: r,
          marker: markers.get(r.push),
        });
        if (d.kind === 'duplicate') dups.set(c.e.i, d.messageId);
        else if (d.kind === 'take-over') {
          replace.push({ e: c.e, ver: c.current.ver });
          replacing.add(c.e.i);
        } else if (d.kind === 'abort-holder') abort.add(d.push);
        else waiting = true;
      }
      for (const p of abort) {
        try {
          await this.deps.storage.items.put('log', abortedMarker(part.id, p, now, expiresAt(now)), { kind: 'absent' });
        } catch (e) {
          if (!(e instanceof ConditionFailedError)) throw e; // it committed or was aborted meanwhile
        }
      }
      const next: typeof contested = [];
      if (replace.length > 0) {
        const res = await this.deps.storage.items.writeEach(
          replace.map(({ e, ver }) => ({
            op: 'put' as const,
            table: 'dedup' as const,
            item: reservationItem(
              part.id,
              e.txid,
              (ver ?? 0) + 1,
              { push: pushId, mid: e.mid, at: now },
              expiresAt(now),
            ),
            cond: ver === undefined ? { kind: 'absent' as const } : { kind: 'version' as const, ver },
          })),
        );
        replace.forEach((x, j) => {
          const r = res[j];
          if (r && !r.ok) next.push({ e: x.e, current: r.current });
        });
      }
      // Those we must look at again: aborted holders, waiting holders, lost replaces.
      for (const c of contested) {
        if (dups.has(c.e.i) || replacing.has(c.e.i)) continue;
        const r = c.current ? decodeReservation(c.current) : undefined;
        if (r && r.push === pushId) continue;
        const fresh = await this.deps.storage.items.get('dedup', logKeys.dedup(part.id, c.e.txid));
        next.push({ e: c.e, current: fresh });
      }
      if (waiting && abort.size === 0) await this.deps.sleep(50);
      contested = next;
    }
    return dups;
  }

  /** Best effort: marks a push that will not commit as `aborted` (put-if-absent), so its reservations can be taken over. */
  async abortMarker(partitionId: string, pushId: string, windowMs: number): Promise<void> {
    const now = this.deps.clock();
    try {
      await this.deps.storage.items.put('log', abortedMarker(partitionId, pushId, now, markerExpiry(now, windowMs)), {
        kind: 'absent',
      });
    } catch {
      // It committed after all, or storage is down: then others abort it after the stall budget.
    }
  }
}
