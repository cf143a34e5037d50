// Pure core of partition leases (seed 002) and consumer-group cursors (seed 004): explicit
// `now`, no I/O, no timers. Test names cite the seed rule they check.
import { describe, expect, it } from 'vitest';
import {
  applyPop,
  applySeek,
  decodeLeaseId,
  DEFAULT_DLQ_ERROR,
  dlqEnabled,
  emptyCursor,
  encodeLeaseId,
  ERR_LEASE,
  ERR_NOT_FOUND,
  fingerprint,
  hintFor,
  isLive,
  laneLag,
  messageProgress,
  offsetsByFingerprint,
  parseAckStatus,
  parseSubscription,
  planAck,
  planExtend,
  planPop,
  selectDeliverable,
  startRule,
  windowHeld,
  type AckItem,
  type CursorState,
  type PopGrant,
} from '../../server/core/leases.js';
import { QUEUE_MODE_GROUP } from '../../server/core/names.js';
import { effectiveLeaseSeconds } from '../../server/core/queue-options.js';

const T0 = Date.UTC(2026, 10, 1);
const txids = (start: number, end: number): string[] =>
  Array.from({ length: end - start + 1 }, (_, i) => `tx-${start + i}`);

/** A pop of offsets [start, end] at `now` with a 60 s lease. */
function pop(s: CursorState, start: number, end: number, now = T0, extra: Partial<PopGrant> = {}): CursorState {
  return applyPop(s, {
    now,
    leaseId: extra.leaseId ?? `L${now}`,
    leaseMs: 60_000,
    start,
    end,
    fp: txids(start, end).map(fingerprint).join(''),
    segs: [start],
    segEnd: end,
    rl: 3,
    dlq: true,
    ...extra,
  });
}
const item = (offset: number | null, status: AckItem['status'], extra: Partial<AckItem> = {}): AckItem => ({
  index: 0,
  offset,
  status,
  ...extra,
});
const items = (...xs: AckItem[]): AckItem[] => xs.map((x, index) => ({ ...x, index }));

describe('unit: seed 002 — what a lease is', () => {
  it('002.1 a pop leases the span (committed, batch_end] and does not move the cursor', () => {
    const s = pop(emptyCursor(4), 5, 9);
    expect(s.committed).toBe(4);
    expect(s.lease).toMatchObject({ start: 5, end: 9, exp: T0 + 60_000 });
    expect(s.delivered).toBe(5);
  });

  it('002.2 the lease id is the broker’s: one id names every partition a pop claimed, and decodes back', () => {
    const pids = ['0190b6a0-0000-7000-8000-000000000001', '0190b6a0-0000-7000-8000-000000000002'];
    const id = encodeLeaseId({ group: 'billing', partitionIds: pids }, Buffer.alloc(16, 7), QUEUE_MODE_GROUP);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeLeaseId(id, QUEUE_MODE_GROUP)).toEqual({ group: 'billing', partitionIds: pids });
    const qm = encodeLeaseId(
      { group: QUEUE_MODE_GROUP, partitionIds: [pids[0] as string] },
      Buffer.alloc(16, 1),
      QUEUE_MODE_GROUP,
    );
    expect(decodeLeaseId(qm, QUEUE_MODE_GROUP)?.group).toBe(QUEUE_MODE_GROUP);
    expect(decodeLeaseId('not-a-lease', QUEUE_MODE_GROUP)).toBeUndefined();
  });

  it('002.3 autoAck takes no lease and commits at delivery (the completed batch resets the budget)', () => {
    const s = pop({ ...emptyCursor(), retry: 2 }, 0, 9, T0, { autoAck: true });
    expect(s.lease).toBeNull();
    expect(s.committed).toBe(9);
    expect(s.retry).toBe(0);
  });
});

describe('unit: seed 002 — one in-flight batch per partition and group', () => {
  it('002.4 a pop skips a lane whose lease is live; expiry is exp <= now', () => {
    const s = pop(emptyCursor(), 0, 9);
    expect(planPop(s, T0 + 59_999)).toEqual({ kind: 'busy', until: T0 + 60_000 });
    expect(isLive(s.lease, T0 + 60_000)).toBe(false);
    expect(planPop(s, T0 + 60_000)).toEqual({ kind: 'free', from: 0, redelivery: true });
  });
});

describe('unit: seed 002 — effective lease time', () => {
  it('002.5 ?leaseSeconds > 0, else the stored lease_time, else 60 s', () => {
    expect(effectiveLeaseSeconds(5, 300)).toBe(5);
    expect(effectiveLeaseSeconds(0, 300)).toBe(300);
    expect(effectiveLeaseSeconds(undefined, null)).toBe(60);
  });
});

describe('unit: seed 002 — extending a lease', () => {
  it('002.6 renews a live lease to the later of its expiry and now + seconds, never shorter', () => {
    const s = pop(emptyCursor(), 0, 9, T0, { leaseId: 'L' });
    const longer = planExtend(s, 'L', T0 + 50_000, 60);
    expect(longer).toMatchObject({ renewed: true, exp: T0 + 110_000 });
    const shorter = planExtend(s, 'L', T0 + 10_000, 5);
    expect(shorter).toMatchObject({ renewed: true, exp: T0 + 60_000 });
  });

  it('002.6 an expired lease (or another id) renews nothing: expiry is final', () => {
    const s = pop(emptyCursor(), 0, 9, T0, { leaseId: 'L' });
    expect(planExtend(s, 'L', T0 + 60_000, 60)).toEqual({ renewed: false });
    expect(planExtend(s, 'other', T0, 60)).toEqual({ renewed: false });
  });
});

describe('unit: seed 002 — when a lease expires', () => {
  it('002.7 the next pop redelivers the whole un-acked span from committed + 1; the budget is untouched', () => {
    let s = pop(emptyCursor(), 0, 9);
    s = planAck(s, items(item(4, 'completed')), { now: T0 + 1, mode: 'ack' }).next as CursorState;
    expect(s.committed).toBe(4);
    const p = planPop(s, T0 + 60_000);
    expect(p).toEqual({ kind: 'free', from: 5, redelivery: true });
    const again = pop(s, 5, 9, T0 + 60_000);
    expect(again.retry).toBe(0);
    expect(again.deadLettered).toBe(0);
  });

  it('002.7 a batch redelivered at the same start offset counts a redelivery (telemetry only)', () => {
    let s = pop(emptyCursor(), 0, 9);
    s = pop(s, 0, 9, T0 + 60_000);
    expect(s.redeliveries).toBe(1);
    s = pop(s, 0, 9, T0 + 120_000);
    expect(s.redeliveries).toBe(2);
    expect(s.retry).toBe(0);
  });
});

describe('unit: seed 002 — acknowledgement is an offset commit', () => {
  const leased = (): CursorState => pop(emptyCursor(), 0, 9, T0, { leaseId: 'L' });

  it('002.8 completed at N commits the span up to N; reaching batch_end releases the lease and resets the budget', () => {
    const partial = planAck({ ...leased(), retry: 2 }, items(item(3, 'completed')), { now: T0, mode: 'ack' });
    expect(partial.outcome).toBe('partial');
    expect(partial.next).toMatchObject({ committed: 3, retry: 2 });
    expect(partial.next?.lease).not.toBeNull();
    const done = planAck(partial.next as CursorState, items(item(9, 'completed')), { now: T0, mode: 'ack' });
    expect(done.outcome).toBe('completed');
    expect(done.next).toMatchObject({ committed: 9, lease: null, retry: 0 });
    expect(done.results[0]).toMatchObject({ success: true, leaseReleased: true, dlq: false });
  });

  it('002.9 the lowest explicit signal decides: the cursor stays on the completed prefix before it', () => {
    const r = planAck(
      leased(),
      items(item(0, 'completed'), item(1, 'completed'), item(4, 'completed'), item(2, 'failed'), item(3, 'retry')),
      { now: T0, mode: 'ack' },
    );
    expect(r.outcome).toBe('failed');
    expect(r.next).toMatchObject({ committed: 1, lease: null, retry: 1 });
  });

  it('002.9 a retry below a failed decides as retry (no charge)', () => {
    const r = planAck(leased(), items(item(2, 'failed'), item(1, 'retry')), { now: T0, mode: 'ack' });
    expect(r.outcome).toBe('retry');
    expect(r.next).toMatchObject({ committed: -1, retry: 0, lease: null });
  });

  it('002.10 the leaseId is checked when sent; acks need the live lease', () => {
    const s = leased();
    const foreign = planAck(s, items(item(0, 'completed', { leaseId: 'other' })), { now: T0, mode: 'ack' });
    expect(foreign.results[0]).toMatchObject({ success: false, error: ERR_LEASE });
    expect(foreign.next).toBeNull();
    const expired = planAck(s, items(item(0, 'completed', { leaseId: 'L' })), { now: T0 + 60_000, mode: 'ack' });
    expect(expired.results[0]).toMatchObject({ success: false, error: ERR_LEASE });
    const unknown = planAck(s, items(item(null, 'completed')), { now: T0, mode: 'ack' });
    expect(unknown.results[0]).toMatchObject({ success: false, error: ERR_NOT_FOUND });
    const withoutId = planAck(s, items(item(0, 'completed')), { now: T0, mode: 'ack' });
    expect(withoutId.results[0]?.success).toBe(true);
  });
});

describe('unit: seed 002 — the retry budget', () => {
  const leased = (retry: number, rl = 3, dlq = true): CursorState => ({
    ...pop(emptyCursor(), 0, 9, T0, { rl, dlq }),
    retry,
  });

  it('002.11 failed charges the lane once per ack call while below retryLimit, and releases the lease', () => {
    const r = planAck(leased(0), items(item(0, 'failed'), item(1, 'failed'), item(2, 'failed')), {
      now: T0,
      mode: 'ack',
    });
    expect(r.outcome).toBe('failed');
    expect(r.next).toMatchObject({ retry: 1, committed: -1, lease: null });
    expect(r.results.every((x) => x.leaseReleased)).toBe(true);
  });

  it('002.12 retry charges nothing', () => {
    const r = planAck(leased(2), items(item(0, 'retry')), { now: T0, mode: 'ack' });
    expect(r.next).toMatchObject({ retry: 2, lease: null });
  });

  it('002.13 with retryLimit 3, a batch failed twice and then completed is filed nowhere and resets the counter', () => {
    let s = emptyCursor();
    for (let attempt = 0; attempt < 2; attempt++) {
      s = pop(s, 0, 99, T0 + attempt, { rl: 3 });
      s = planAck(s, items(item(0, 'failed')), { now: T0 + attempt, mode: 'ack' }).next as CursorState;
    }
    expect(s.retry).toBe(2);
    s = pop(s, 0, 99, T0 + 5, { rl: 3 });
    const done = planAck(s, items(item(99, 'completed')), { now: T0 + 5, mode: 'ack' });
    expect(done.file).toBeUndefined();
    expect(done.next).toMatchObject({ committed: 99, retry: 0 });
  });

  it('002.14 the (retryLimit+1)-th failed ack dead-letters the head message (retryLimit 1: the second)', () => {
    let s = pop(emptyCursor(), 0, 9, T0, { rl: 1 });
    s = planAck(s, items(item(0, 'failed')), { now: T0, mode: 'ack' }).next as CursorState;
    s = pop(s, 0, 9, T0 + 1, { rl: 1 });
    const r = planAck(s, items(item(0, 'failed', { error: 'bad input' })), { now: T0 + 1, mode: 'ack' });
    expect(r.outcome).toBe('dead-lettered');
    expect(r.file).toEqual({ offset: 0, error: 'bad input', retryCount: 1 });
    expect(r.next).toMatchObject({ committed: 0, retry: 0, redeliveries: 0, lease: null, deadLettered: 1 });
    expect(r.results[0]).toMatchObject({ dlq: true, leaseReleased: true });
  });
});

describe('unit: seed 002 — transition to the dead-letter queue', () => {
  const leased = (retry = 0): CursorState => ({ ...pop(emptyCursor(), 0, 9), retry });

  it('002.15 dlq bypasses the remaining budget; the cursor passes the head message after the completed prefix', () => {
    const r = planAck(leased(0), items(item(0, 'completed'), item(1, 'completed'), item(2, 'dlq')), {
      now: T0,
      mode: 'ack',
    });
    expect(r.file).toMatchObject({ offset: 2, retryCount: 0 });
    expect(r.next).toMatchObject({ committed: 2, lease: null });
  });

  it('002.16 the recorded error: the nack’s, else another in the call, else “Retries exhausted”', () => {
    const own = planAck(leased(3), items(item(0, 'failed', { error: 'mine' }), item(1, 'failed', { error: 'other' })), {
      now: T0,
      mode: 'ack',
    });
    expect(own.file?.error).toBe('mine');
    const other = planAck(leased(3), items(item(0, 'failed'), item(1, 'failed', { error: 'other' })), {
      now: T0,
      mode: 'ack',
    });
    expect(other.file?.error).toBe('other');
    const none = planAck(leased(3), items(item(0, 'failed')), { now: T0, mode: 'ack' });
    expect(none.file?.error).toBe(DEFAULT_DLQ_ERROR);
  });

  it('002.17 dead-lettering is on when either flag is; both off drops the message deliberately', () => {
    expect(dlqEnabled({ deadLetterQueue: false, dlqAfterMaxRetries: true })).toBe(true);
    expect(dlqEnabled({ deadLetterQueue: true, dlqAfterMaxRetries: false })).toBe(true);
    expect(dlqEnabled({ deadLetterQueue: false, dlqAfterMaxRetries: false })).toBe(false);
    const s = { ...pop(emptyCursor(), 0, 9, T0, { dlq: false }), retry: 3 };
    const r = planAck(s, items(item(0, 'failed')), { now: T0, mode: 'ack' });
    expect(r.outcome).toBe('dropped');
    expect(r.file).toBeUndefined();
    expect(r.drop).toEqual({ offset: 0 });
    expect(r.next).toMatchObject({ committed: 0, retry: 0, lease: null, dropped: 1 });
    expect(r.results[0]?.dlq).toBe(false);
  });

  it('002.18 in a transaction, failed files at once (no budget) and retry is refused', () => {
    const r = planAck(leased(0), items(item(0, 'failed')), { now: T0, mode: 'transaction' });
    expect(r.outcome).toBe('dead-lettered');
    const bad = planAck(leased(0), items(item(0, 'retry')), { now: T0, mode: 'transaction' });
    expect(bad.results[0]?.success).toBe(false);
  });

  it('ack statuses: success is completed; unknown strings and booleans are not statuses', () => {
    expect(parseAckStatus('success')).toBe('completed');
    expect(parseAckStatus(undefined)).toBe('completed');
    expect(parseAckStatus('dlq')).toBe('dlq');
    expect(parseAckStatus(true)).toBeUndefined();
    expect(parseAckStatus('done')).toBeUndefined();
  });
});

describe('unit: fingerprints map transactionIds to offsets', () => {
  it('finds the offset of each id in a leased batch, and nothing for a foreign id', () => {
    const ids = txids(100, 199);
    const lease = { start: 100, fp: ids.map(fingerprint).join('') };
    expect(new Set(ids.map(fingerprint)).size).toBe(100);
    ids.forEach((t, i) => expect(offsetsByFingerprint(lease, t)).toEqual([100 + i]));
    expect(offsetsByFingerprint(lease, 'tx-200')).toEqual([]);
    expect(fingerprint('x')).toHaveLength(8);
  });
});

describe('unit: visibility options', () => {
  const cands = (ats: number[]) => ats.map((createdAt, i) => ({ offset: 10 + i, createdAt, bytes: 100 }));
  const base = { delayMs: 0, maxWaitMs: 0, retentionMs: 0, batch: 100, maxBytes: 1e9 };

  it('delayedProcessing: a message is invisible until createdAt + delay; FIFO stops at it', () => {
    const sel = selectDeliverable(cands([T0, T0 + 500, T0 + 2000]), { ...base, delayMs: 1000, now: T0 + 1600 });
    expect(sel).toMatchObject({ first: 0, count: 2, skipThrough: null, visibleAt: T0 + 3000 });
  });

  it('maxWaitTimeSeconds and retention: leading messages past their window are skipped (the cursor passes them)', () => {
    const sel = selectDeliverable(cands([T0, T0 + 10, T0 + 5000]), { ...base, maxWaitMs: 1000, now: T0 + 1500 });
    expect(sel).toMatchObject({ skipThrough: 11, first: 2, count: 1 });
    const ret = selectDeliverable(cands([T0, T0 + 10]), { ...base, retentionMs: 1000, now: T0 + 2000 });
    expect(ret).toMatchObject({ skipThrough: 11, count: 0 });
  });

  it('batch and byte caps (always at least one message)', () => {
    expect(selectDeliverable(cands([T0, T0, T0]), { ...base, batch: 2, now: T0 }).count).toBe(2);
    expect(selectDeliverable(cands([T0, T0, T0]), { ...base, maxBytes: 150, now: T0 }).count).toBe(1);
    expect(selectDeliverable(cands([T0]), { ...base, maxBytes: 1, now: T0 }).count).toBe(1);
  });

  it('windowBuffer holds a partition until that long after its newest message', () => {
    expect(windowHeld(T0, 2000, T0 + 1999)).toBe(true);
    expect(windowHeld(T0, 2000, T0 + 2000)).toBe(false);
    expect(windowHeld(T0, 0, T0)).toBe(false);
  });

  it('a pop that only skips moves the cursor and takes no lease', () => {
    const s = applyPop(emptyCursor(), {
      now: T0,
      leaseId: 'L',
      leaseMs: 1,
      start: 0,
      end: -1,
      fp: '',
      segs: [],
      segEnd: -1,
      rl: 3,
      dlq: true,
      skipThrough: 7,
    });
    expect(s).toMatchObject({ committed: 7, lease: null });
  });
});

describe('unit: seed 004 — where a group starts', () => {
  it('004.1 subscription parameters: new / new-only / subscriptionFrom=now → new; ISO → from; anything else → all', () => {
    expect(parseSubscription('new', undefined, T0)).toEqual({ mode: 'new', from: T0 });
    expect(parseSubscription('new-only', undefined, T0)).toEqual({ mode: 'new', from: T0 });
    expect(parseSubscription(undefined, 'now', T0)).toEqual({ mode: 'new', from: T0 });
    expect(parseSubscription(undefined, '2026-01-02T03:04:05Z', T0)).toEqual({
      mode: 'from',
      from: Date.UTC(2026, 0, 2, 3, 4, 5),
    });
    expect(parseSubscription('all', undefined, T0)).toEqual({ mode: 'all', from: null });
    expect(parseSubscription('from_beginning', undefined, T0)).toEqual({ mode: 'all', from: null });
    expect(parseSubscription('', 'garbage', T0)).toEqual({ mode: 'all', from: null });
  });

  it('004.2 all (and queue mode) start before the oldest retained message; new/from after the last message before the instant', () => {
    expect(startRule({ mode: 'all', from: null }, false, T0)).toEqual({ kind: 'head' });
    expect(startRule({ mode: 'new', from: T0 }, true, T0 - 5)).toEqual({ kind: 'head' });
    expect(startRule({ mode: 'new', from: T0 }, false, T0 - 5)).toEqual({ kind: 'before', at: T0 });
  });

  it('004.3 a partition created after the registration is read from its start', () => {
    expect(startRule({ mode: 'new', from: T0 }, false, T0 + 1)).toEqual({ kind: 'head' });
    expect(startRule({ mode: 'from', from: T0 }, false, T0)).toEqual({ kind: 'head' });
  });

  it('004.5 a seek moves the cursor, releases the lease and resets the budget', () => {
    const s = applySeek({ ...pop(emptyCursor(), 0, 9), retry: 2 }, 42, null);
    expect(s).toMatchObject({ committed: 42, lease: null, retry: 0 });
  });
});

describe('unit: seed 004 — watching the groups diverge', () => {
  it('004.6 per-message progress: consumed once a group’s cursor passed it; completed only when every group has', () => {
    const done = { ...emptyCursor(7) };
    const holding = pop(emptyCursor(4), 5, 9, T0);
    const lanes = [
      { group: 'one', state: done },
      { group: 'two', state: holding },
      { group: 'three', state: undefined },
    ];
    expect(messageProgress(lanes, 6, T0 + 1)).toEqual({
      consumerGroups: [
        { name: 'one', consumed: true, leaseExpiresAt: null },
        { name: 'two', consumed: false, leaseExpiresAt: T0 + 60_000 },
        { name: 'three', consumed: false, leaseExpiresAt: null },
      ],
      status: 'processing',
    });
    // The lease lapsed: nobody is processing it any more.
    expect(messageProgress(lanes, 6, T0 + 60_000).status).toBe('pending');
    // A group with no cursor row on the partition has not passed anything.
    expect(messageProgress(lanes.slice(0, 1).concat({ group: 'three', state: undefined }), 3, T0).status).toBe(
      'pending',
    );
    expect(
      messageProgress(
        [
          { group: 'one', state: done },
          { group: 'two', state: emptyCursor(6) },
        ],
        6,
        T0,
      ).status,
    ).toBe('completed');
    expect(messageProgress([], 0, T0).status).toBe('pending');
  });

  it('004.5 lag: messages from the next wanted offset to the end, and the age of the oldest (retention-removed offsets do not count)', () => {
    expect(laneLag({ committed: 0, next: 3, oldest: { base: 0, at: T0 }, now: T0 + 600_000 })).toEqual({
      lagMessages: 2,
      lagSeconds: 600,
    });
    expect(laneLag({ committed: 2, next: 3, oldest: { base: 0, at: T0 }, now: T0 + 600_000 })).toEqual({
      lagMessages: 0,
      lagSeconds: 0,
    });
    // Offsets 1..9 were removed by retention: the oldest owed segment starts at 10.
    expect(laneLag({ committed: 0, next: 15, oldest: { base: 10, at: T0 + 1000 }, now: T0 + 61_000 })).toEqual({
      lagMessages: 5,
      lagSeconds: 60,
    });
    expect(laneLag({ committed: -1, next: 5, oldest: undefined, now: T0 })).toEqual({ lagMessages: 0, lagSeconds: 0 });
  });
});

describe('unit: segment hints', () => {
  it('names the segment holding an offset from the lease’s segment bases', () => {
    expect(hintFor(5, [0, 4, 8], 11, null)).toBe(4);
    expect(hintFor(12, [0, 4, 8], 11, null)).toBe(12);
    expect(hintFor(13, [0, 4, 8], 11, 99)).toBe(99);
    expect(hintFor(0, [], -1, 7)).toBe(7);
  });
});
