/**
 * Producer stamps for idempotent pushes (docs/DELIVERY.md): every push request carries
 * `(producerId, sequence)`, and its retries carry the same stamp, so the server answers a
 * repeat with the first attempt's result and stores nothing twice.
 *
 * The server remembers, per partition, the last sequence of each recent producer and refuses a
 * lower one as stale. So one producer id must never have two pushes in flight (a later push
 * landing first would make the earlier one stale): the client keeps a pool of ids, one per push
 * in flight, each with its own rising sequence. Ids are random per client instance; a restarted
 * process starts new ones, so the guarantee does not outlive the process.
 */
import { randomBytes } from 'node:crypto';

/** One push's stamp; `release()` once the push (with every retry) has settled. */
export interface Stamp {
  producerId: string;
  sequence: number;
  release(): void;
}

/**
 * The pool of producer ids of one client.
 *
 * @example
 * ```ts
 * const stamps = new ProducerStamps();
 * const s = stamps.acquire(); // { producerId: 'Zk3…x.0', sequence: 0 }
 * try { await postPush(http, items, signal, s); } finally { s.release(); }
 * ```
 */
export class ProducerStamps {
  /** 12 random characters (72 bits) shared by this client's ids. */
  readonly base: string;
  private readonly free: { id: string; next: number }[] = [];
  private made = 0;

  constructor(base: string = randomBytes(9).toString('base64url')) {
    this.base = base;
  }

  /** A stamp whose producer id has no other push in flight. */
  acquire(): Stamp {
    const lane = this.free.pop() ?? { id: `${this.base}.${(this.made++).toString(36)}`, next: 0 };
    const sequence = lane.next++;
    let released = false;
    return {
      producerId: lane.id,
      sequence,
      release: () => {
        if (released) return;
        released = true;
        this.free.push(lane);
      },
    };
  }

  /** Producer ids made so far (the most pushes this client had in flight at once). */
  get ids(): number {
    return this.made;
  }
}
