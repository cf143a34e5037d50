// The race checks themselves: a clean log passes, and a log with each kind of violation fails.
// (The race tests can only fail when these do.)
import { describe, expect, it } from 'vitest';
import { checkClaims, checkLeases, checkPushes, checkQueueDelete, type StoredView } from './checks.js';
import type {
  AckEvent,
  ClaimAckEvent,
  DeleteEvent,
  NackEvent,
  PollEvent,
  PopEvent,
  PushEvent,
  RaceEvent,
  RedriveEvent,
  WriteEvent,
} from './protocol.js';

const PID = 'pid-1';
let seq = 0;

const stored = (txids: string[]): StoredView[] => txids.map((txid, offset) => ({ offset, txid, id: `id-${txid}` }));

function push(producer: string, ns: number[], offsets: number[] | 'unavailable', t0 = 0): PushEvent {
  const items = ns.map((n) => ({ seq: n, txid: `${producer}-${n}` }));
  const base = {
    k: 'push' as const,
    inst: producer,
    seq: ++seq,
    t0,
    t1: t0 + 10,
    queue: 'q',
    partition: 'Default',
    producer,
    items,
  };
  if (offsets === 'unavailable') return { ...base, outcome: 'unavailable', error: 'unavailable: too contended' };
  return {
    ...base,
    outcome: 'ok',
    results: items.map((it, j) => ({
      txid: it.txid,
      status: 'queued',
      offset: offsets[j],
      partitionId: PID,
      messageId: `id-${it.txid}`,
    })),
  };
}

describe('race checks: pushes', () => {
  const clean = [push('A', [0, 1], [0, 1]), push('B', [0], 'unavailable'), push('B', [0], [2]), push('A', [2], [3])];
  const txids = ['A-0', 'A-1', 'B-0', 'A-2'];

  it('pass a clean log (a 503 retried is no violation)', () => {
    expect(checkPushes(clean, PID, stored(txids))).toEqual({ lost: 0, duplicated: 0, violations: [] });
  });

  it('count an acknowledged message that is not stored as lost', () => {
    const r = checkPushes(clean, PID, stored(['A-0', 'A-1', 'B-0']));
    expect(r.lost).toBe(1);
    expect(r.violations).toEqual(['A-2 acknowledged but not stored']);
  });

  it('count a message stored twice, and a gap in the offsets', () => {
    const twice = checkPushes(clean, PID, stored([...txids, 'B-0']));
    expect(twice.duplicated).toBe(1);
    expect(twice.violations.join('\n')).toContain('B-0 stored 2 times');
    const gap = checkPushes(clean, PID, [...stored(txids.slice(0, 3)), { offset: 5, txid: 'A-2', id: 'id-A-2' }]);
    expect(gap.violations.join('\n')).toContain('offsets are not 0..N-1');
  });

  it("flag a producer's messages out of its send order, and a wrong reported offset", () => {
    const r = checkPushes(clean, PID, stored(['A-1', 'A-0', 'B-0', 'A-2']));
    expect(r.violations.join('\n')).toContain('A: message 1 stored at 0, before message 0 at 1');
    expect(r.violations.join('\n')).toContain('A-0 reported queued at 0 by A#');
  });
});

describe('race checks: leases', () => {
  const LEASE = 1000;
  const txids = ['m0', 'm1', 'm2', 'm3'];
  const write = (inst: string, s: number, ver: number, committed: number, lease: WriteEvent['lease']): WriteEvent => ({
    k: 'w',
    inst,
    seq: s,
    at: 0,
    pk: PID,
    sk: 'g',
    ver,
    committed,
    lease,
  });
  const pop = (inst: string, s: number, t0: number, leaseId: string, offsets: number[]): PopEvent => ({
    k: 'pop',
    inst,
    seq: s,
    t0,
    t1: t0 + 10,
    queue: 'q',
    route: 'partition',
    leaseMs: LEASE,
    leaseId,
    msgs: offsets.map((o) => ({ offset: o, txid: txids[o]!, id: `id-${o}`, partitionId: PID })),
  });
  const ack = (inst: string, s: number, t0: number, leaseId: string, offsets: number[], ok: boolean): AckEvent => ({
    k: 'ack',
    inst,
    seq: s,
    t0,
    t1: t0 + 10,
    leaseId,
    partitionId: PID,
    items: offsets.map((o) => ({ txid: txids[o]!, offset: o, status: 'completed' })),
    results: offsets.map(() => ({ success: ok, error: ok ? null : 'Invalid or expired lease', leaseReleased: ok })),
  });
  const L1 = { id: 'L1', exp: 1000 + LEASE, start: 0, end: 1 };
  const L2 = { id: 'L2', exp: 3000 + LEASE, start: 2, end: 3 };
  // a pops 0..1 at 1000, acks them; b pops 2..3 at 3000; a's stale ack of L1 is refused; b acks.
  const clean: RaceEvent[] = [
    pop('a', 1, 1000, 'L1', [0, 1]),
    write('a', 1, 1, -1, L1),
    ack('a', 2, 1100, 'L1', [0, 1], true),
    write('a', 2, 2, 1, null),
    pop('b', 1, 3000, 'L2', [2, 3]),
    write('b', 1, 3, 1, L2),
    ack('a', 3, 3100, 'L1', [2, 3], false),
    ack('b', 2, 3200, 'L2', [2, 3], true),
    write('b', 2, 4, 3, null),
  ];
  const input = (events: RaceEvent[], final = 3) => ({
    partitionId: PID,
    group: 'g',
    leaseMs: LEASE,
    stored: stored(txids),
    events,
    final: { committed: final },
    killed: new Set<string>(),
  });

  it('pass a clean history', () => {
    expect(checkLeases(input(clean))).toEqual({ lost: 0, duplicated: 0, violations: [] });
  });

  it('flag a pop that took the lane while another lease was live, seen in the chain and from the clocks', () => {
    const L3 = { id: 'L3', exp: 3000 + LEASE, start: 2, end: 3 };
    const events: RaceEvent[] = [
      pop('a', 1, 1000, 'L1', [0, 1]),
      write('a', 1, 1, -1, L1),
      pop('b', 1, 1500, 'L2', [0, 1]),
      write('b', 1, 2, -1, { id: 'L2', exp: 1500 + LEASE, start: 0, end: 1 }),
      ack('b', 2, 1600, 'L2', [0, 1], true),
      write('b', 2, 3, 1, null),
      pop('c', 1, 3000, 'L3', [2, 3]),
      write('c', 1, 4, 1, L3),
      ack('c', 2, 3100, 'L3', [2, 3], true),
      write('c', 2, 5, 3, null),
    ];
    const v = checkLeases(input(events)).violations;
    expect(v).toHaveLength(2);
    expect(v[0]).toContain('b#1 took the lane at 1500 (lease L2 over 0..1) while L1 over 0..1 was live until 2000');
    expect(v[1]).toContain('pops a#1 (0..1, 1000-1010) and b#1 (0..1, 1500-1510) held overlapping spans at once');
  });

  it('flag a stale ack that moved the cursor, and a version written twice', () => {
    const events: RaceEvent[] = [
      ...clean.slice(0, 6),
      ack('a', 3, 3100, 'L1', [2, 3], true),
      write('a', 3, 4, 3, null),
    ];
    const r = checkLeases(input(events));
    expect(r.violations.join('\n')).toContain(
      'an ack with lease L1, moved the cursor to 3 while the lane was leased to L2',
    );
    const twice = checkLeases(input([...clean, write('c', 1, 4, 3, null)]));
    expect(twice.duplicated).toBe(1);
    expect(twice.violations.join('\n')).toContain('cursor version 4 written twice');
  });

  it('count offsets never acked, or acked twice, and a cursor that did not reach the end', () => {
    const never = checkLeases(input(clean.slice(0, 7), 1));
    expect(never.lost).toBe(2);
    expect(never.violations.join('\n')).toContain('the cursor ended at 1, not 3');
    const twice = checkLeases(input([...clean, ack('c', 1, 3300, 'L2', [3], true)]));
    expect(twice.duplicated).toBe(1);
  });
});

describe('race checks: claims', () => {
  const VIS = 1000;
  const txids = ['r0', 'r1'];
  const poll = (inst: string, t0: number, records: [number, number][]): PollEvent => ({
    k: 'poll',
    inst,
    seq: ++seq,
    t0,
    t1: t0 + 10,
    vis: VIS,
    records: records.map(([offset, attempts]) => ({ offset, attempts, txid: txids[offset]! })),
  });
  const cack = (inst: string, t0: number, offsets: number[], committed: number): ClaimAckEvent => ({
    k: 'cack',
    inst,
    seq: ++seq,
    t0,
    t1: t0 + 10,
    offsets,
    committed,
  });
  const nack = (inst: string, t0: number, offset: number, attempts: number): NackEvent => ({
    k: 'nack',
    inst,
    seq: ++seq,
    t0,
    t1: t0 + 10,
    offset,
    attempts,
    ok: true,
  });
  const redrive = (t0: number, offset: number): RedriveEvent => ({
    k: 'redrive',
    inst: 'r',
    seq: ++seq,
    t0,
    t1: t0 + 10,
    offset,
    ok: true,
  });
  const done = { committed: 2, inFlight: 0, owed: 0, deadLetters: 0, dead: [] as number[] };
  const input = (events: RaceEvent[], over: Partial<Parameters<typeof checkClaims>[0]> = {}) => ({
    stored: stored(txids),
    events,
    poison: new Set<number>(),
    maxAttempts: 5,
    final: done,
    killed: new Set<string>(),
    ...over,
  });
  // a gets 0 and 1, hands 1 back; b gets 1 again; a lapses nothing; both ack.
  const clean: RaceEvent[] = [
    poll('a', 0, [
      [0, 1],
      [1, 1],
    ]),
    nack('a', 20, 1, 1),
    poll('b', 40, [[1, 2]]),
    cack('a', 60, [0], 1),
    cack('b', 80, [1], 2),
  ];

  it('pass a clean history', () => {
    expect(checkClaims(input(clean))).toEqual({ lost: 0, duplicated: 0, violations: [] });
  });

  it('flag a record handed out twice as one attempt, or to a second holder while the first claim stood', () => {
    const same = checkClaims(input([...clean.slice(0, 2), poll('b', 40, [[1, 1]]), ...clean.slice(3)]));
    expect(same.duplicated).toBe(1);
    expect(same.violations.join('\n')).toContain('offset 1 handed out 2 times as attempt 1');
    const unsettled = checkClaims(input([clean[0]!, poll('b', 40, [[1, 2]]), ...clean.slice(3)]));
    expect(unsettled.violations.join('\n')).toContain('offset 1 held twice at once');
  });

  it('flag a position past a record nobody acked, a record handed out after its ack, and a redrive never delivered', () => {
    const past = checkClaims(input([...clean.slice(0, 3), cack('a', 60, [0], 2), cack('b', 80, [1], 2)]));
    expect(past.violations.join('\n')).toContain('answered committed 2, past offset 1 nobody had acked');
    const again = checkClaims(input([...clean, poll('c', 200, [[1, 3]])]));
    expect(again.violations.join('\n')).toContain('offset 1 handed out by');
    const lost = checkClaims(
      input(
        [
          poll('a', 0, [[0, 1]]),
          nack('a', 20, 0, 1),
          redrive(100, 0),
          poll('b', 300, [[1, 1]]),
          cack('b', 320, [1], 2),
        ],
        {
          poison: new Set([0]),
          final: { ...done, deadLetters: 1, dead: [0] },
        },
      ),
    );
    expect(lost.violations.join('\n')).toContain('offset 0 redriven by r#');
  });
});

describe('race checks: queue delete', () => {
  const del = (t0: number, queueId: string): DeleteEvent => ({
    k: 'delete',
    inst: 'd',
    seq: ++seq,
    t0,
    t1: t0 + 10,
    queue: 'q',
    existed: true,
    queueId,
  });
  const pushTo = (pid: string, n: number, t0: number): PushEvent => {
    const p = push('A', [n], [0], t0);
    return { ...p, results: p.results!.map((r) => ({ ...r, partitionId: pid })) };
  };
  const input = (events: RaceEvent[], over: Partial<Parameters<typeof checkQueueDelete>[0]> = {}) => ({
    events,
    queueCacheMs: 300,
    storedBefore: new Map([
      ['old', stored(['A-0'])],
      ['new', stored(['A-1'])],
    ]),
    finalPartitionId: 'new',
    queueIdOf: new Map([
      ['old', 'Q1'],
      ['new', 'Q2'],
    ]),
    finalAfter: stored(['A-1']),
    leftovers: [],
    tombstonesLeft: 0,
    ...over,
  });

  it('pass pushes on either side of the delete', () => {
    const r = checkQueueDelete(input([pushTo('old', 0, 0), del(100, 'Q1'), pushTo('new', 1, 500)]));
    expect(r.violations).toEqual([]);
  });

  it('flag a push past the cache window that landed in the deleted incarnation, and what maintenance left', () => {
    const late = checkQueueDelete(
      input([pushTo('old', 0, 0), del(100, 'Q1'), pushTo('old', 1, 500)], {
        storedBefore: new Map([
          ['old', stored(['A-0', 'A-1'])],
          ['new', []],
        ]),
        finalAfter: [],
      }),
    );
    expect(late.violations.join('\n')).toContain('landed in the deleted incarnation');
    const left = checkQueueDelete(
      input([pushTo('old', 0, 0), del(100, 'Q1'), pushTo('new', 1, 500)], {
        leftovers: ['log old: S#0'],
        tombstonesLeft: 1,
      }),
    );
    expect(left.violations).toEqual(['left after maintenance: log old: S#0', '1 tombstones left after maintenance']);
  });
});
