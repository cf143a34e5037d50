import { describe, expect, it } from 'vitest';
import { WAIT_HOLD_MS, newWait, type Wait } from '../../server/core/notifications.js';
import {
  WAKES_PER_GROUP,
  decodeRelay,
  encodeRelay,
  planPush,
  planRelay,
  relayTokenOf,
  wakeWaves,
  waitSlot,
} from '../../server/core/wake-plan.js';

const NOW = 1_800_000_000_000;
/** `n` waits of `group`, registered a millisecond apart (the first is the oldest). */
const waitsOf = (group: string | undefined, n: number, from = NOW - 60_000): Wait[] =>
  Array.from({ length: n }, (_, i) => newWait(`${group ?? 'old'}-${i}`, from + i, group));
const slotOrder = (ws: readonly Wait[]): string[] => ws.map((w) => `${waitSlot(w.connectionId)}#${w.connectionId}`);

describe('wake plan: a push', () => {
  it('wakes the two longest-waiting of each group; the rest are split between them in key order', () => {
    const waits = [...waitsOf('a', 9), ...waitsOf('b', 1), ...waitsOf(undefined, 3)];
    const { branches, stale, skipped } = planPush(waits, NOW, 100);
    expect([stale, skipped]).toEqual([[], 0]);
    const heads = branches.map((b) => b.members[0]!.connectionId).sort();
    expect(heads).toEqual(['a-0', 'a-1', 'b-0', 'old-0', 'old-1']);
    const a = branches.filter((b) => b.group === 'a');
    expect(a).toHaveLength(WAKES_PER_GROUP);
    // Every other wait of the group is in exactly one branch, each branch's share contiguous.
    const shares = a.map((b) => b.members.slice(1));
    expect(shares.map((s) => s.length)).toEqual([4, 3]);
    expect(
      shares
        .flat()
        .map((w) => w.connectionId)
        .sort(),
    ).toEqual(['a-2', 'a-3', 'a-4', 'a-5', 'a-6', 'a-7', 'a-8']);
    const order = slotOrder(shares.flat());
    expect(order).toEqual([...order].sort());
  });

  it('leaves stale waits to be removed, and wakes at most `budget`, the longest-waiting groups first', () => {
    const waits = [
      ...waitsOf('new', 3, NOW - 1_000),
      ...waitsOf('old', 3, NOW - 5_000),
      newWait('gone', NOW - WAIT_HOLD_MS),
    ];
    const plan = planPush(waits, NOW, 3);
    expect(plan.stale.map((w) => w.connectionId)).toEqual(['gone']);
    expect(plan.branches.map((b) => b.group)).toEqual(['old', 'old', 'new']);
    expect(plan.skipped).toBe(1);
    // The group cut short keeps all its other waits in the branch it got.
    expect(plan.branches[2]!.members).toHaveLength(3);
  });
});

describe('wake plan: a relay', () => {
  it('hands each woken wait the members after it; a relay wakes two of its range, registered by the push', () => {
    const waits = waitsOf('g', 12);
    const [first] = planPush(waits, NOW, 100).branches;
    const token = relayTokenOf(first!.members, 0, NOW)!;
    const range = decodeRelay(token)!;
    expect(range).toEqual({
      at: NOW,
      from: waitSlot(first!.members[1]!.connectionId),
      to: waitSlot(first!.members.at(-1)!.connectionId),
    });
    const share = first!.members.slice(1);
    const late = newWait(share[0]!.connectionId, NOW + 5, 'g'); // registered again after the push: awake
    const read = [late, ...share.slice(1), newWait('other', NOW - 1, 'h')];
    const relayed = planRelay(read, NOW + 10, 'g', range, first!.members[0]!.connectionId);
    expect(relayed).toHaveLength(2);
    expect(relayed.flatMap((b) => b.members.map((w) => w.connectionId)).sort()).toEqual(
      share
        .slice(1)
        .map((w) => w.connectionId)
        .sort(),
    );
    // Nothing left past the last member: no token.
    expect(relayTokenOf(share, share.length - 1, NOW)).toBeUndefined();
  });

  it('tokens are the range and nothing else', () => {
    const r = { at: NOW, from: '00000000', to: 'ffffffff' };
    expect(decodeRelay(encodeRelay(r))).toEqual(r);
    for (const bad of ['', 'x', `${NOW}.00000000`, 'zz.ffffffff.00000000', 'a.0000000g.ffffffff', 'a.1.2.3'])
      expect(decodeRelay(bad)).toBeUndefined();
  });
});

describe('wake plan: the bound', () => {
  it('wakes n waiters in about log2(n/2) waves: 2,000 in 10', () => {
    expect([0, 1, 2, 3, 6, 14, 2_000].map((n) => wakeWaves(n))).toEqual([0, 1, 1, 2, 2, 3, 10]);
    for (let n = 1; n <= 5_000; n++) expect(wakeWaves(n)).toBe(Math.ceil(Math.log2(n / WAKES_PER_GROUP + 1)));
  });
});
