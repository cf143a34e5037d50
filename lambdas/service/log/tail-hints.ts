/**
 * Each partition's next base offset as this process last saw it: where a push tries its
 * segment put first. Only a hint: a stale one costs a collision on the segment key (and
 * after two in a row a tail read), never a wrong offset (docs/STORAGE.md, "How a push
 * commits").
 *
 * @example
 * ```ts
 * const tails = new TailHints();
 * tails.raise(partitionId, 42); // a tail read saw offset 42 next
 * tails.get(partitionId); // 42
 * ```
 */
export class TailHints {
  private readonly next = new Map<string, number>();

  get(partitionId: string): number | undefined {
    return this.next.get(partitionId);
  }

  /** After this process committed up to `next - 1` (or created the partition: 0). */
  set(partitionId: string, next: number): void {
    this.next.set(partitionId, next);
  }

  /** After a read of the tail: the hint only moves forward. */
  raise(partitionId: string, next: number): void {
    this.next.set(partitionId, Math.max(this.next.get(partitionId) ?? 0, next));
  }

  forget(partitionId: string): void {
    this.next.delete(partitionId);
  }
}
