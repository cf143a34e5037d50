// The queue options that act only when the client set them (ttl, retryDelay), the PATCH merge,
// and the order of a namespace/task pop: pure rules with an explicit `now`.
import { describe, expect, it } from 'vitest';
import {
  applyPop,
  emptyCursor,
  fingerprint,
  planAck,
  planPop,
  redeliveryAt,
  selectDeliverable,
  type CursorState,
} from '../../server/core/leases.js';
import { popOrder } from '../../server/core/queue-match.js';
import {
  QUEUE_OPTION_DEFAULTS,
  QueueOptionsInput,
  appliedTimers,
  explicitOptionNames,
  mergeQueueOptions,
  resolveQueueOptions,
} from '../../server/core/queue-options.js';

const T0 = Date.UTC(2026, 11, 1);

function leased(now: number, rd: number): CursorState {
  return applyPop(emptyCursor(), {
    now,
    leaseId: 'L',
    leaseMs: 10_000,
    start: 0,
    end: 0,
    fp: fingerprint('t0'),
    segs: [0],
    segEnd: 0,
    rl: 3,
    dlq: true,
    rd,
  });
}

describe('unit: which options the client set', () => {
  it('names only the options given a value; Queen defaults fill the rest but do not count as set', () => {
    const input = QueueOptionsInput.parse({ leaseTime: 30, ttl: null, retryDelay: 500 });
    expect(explicitOptionNames(input)).toEqual(['leaseTime', 'retryDelay']);
    const o = resolveQueueOptions(input);
    expect([o.ttl, o.retryDelay]).toEqual([3600, 500]);
    expect(explicitOptionNames(undefined)).toEqual([]);
  });

  it('ttl and retryDelay apply only when explicit; defaults echoed but inert', () => {
    expect(appliedTimers(QUEUE_OPTION_DEFAULTS, [])).toEqual({ ttlMs: 0, retryDelayMs: 0 });
    expect(appliedTimers(QUEUE_OPTION_DEFAULTS, undefined)).toEqual({ ttlMs: 0, retryDelayMs: 0 });
    expect(appliedTimers({ ttl: 60, retryDelay: 250 }, ['retryDelay', 'ttl'])).toEqual({
      ttlMs: 60_000,
      retryDelayMs: 250,
    });
    // An explicit 0 is "never" / "at once".
    expect(appliedTimers({ ttl: 0, retryDelay: 0 }, ['retryDelay', 'ttl'])).toEqual({ ttlMs: 0, retryDelayMs: 0 });
  });

  it('a PATCH merges over the stored set; null resets one option and forgets it was set', () => {
    const cur = { options: { ...QUEUE_OPTION_DEFAULTS, leaseTime: 30, ttl: 60 }, explicit: ['leaseTime', 'ttl'] };
    const a = mergeQueueOptions(cur, { retryDelay: 5000 });
    expect(a.options).toMatchObject({ leaseTime: 30, ttl: 60, retryDelay: 5000 });
    expect(a.explicit).toEqual(['leaseTime', 'retryDelay', 'ttl']);
    const b = mergeQueueOptions(a, { ttl: null });
    expect(b.options.ttl).toBe(3600);
    expect(b.explicit).toEqual(['leaseTime', 'retryDelay']);
    expect(
      mergeQueueOptions(cur, { visibilityTimeoutMs: null }, { visibilityTimeoutMs: 7 }).options.visibilityTimeoutMs,
    ).toBe(7);
  });
});

describe('unit: ttl', () => {
  const cands = [0, 1, 2].map((i) => ({ offset: i, createdAt: T0 + i * 1000, bytes: 1 }));
  const base = { delayMs: 0, maxWaitMs: 0, retentionMs: 0, batch: 10, maxBytes: 1e9 };

  it('skips and counts unconsumed messages at least ttl old (push time vs now), delivers the rest', () => {
    const sel = selectDeliverable(cands, { ...base, ttlMs: 60_000, now: T0 + 61_000 });
    expect(sel).toMatchObject({ skipThrough: 1, first: 2, count: 1, expired: 2 });
    const next = applyPop(emptyCursor(), {
      now: T0 + 61_000,
      leaseId: '',
      leaseMs: 0,
      start: 0,
      end: -1,
      fp: '',
      segs: [],
      segEnd: -1,
      rl: 0,
      dlq: false,
      skipThrough: sel.skipThrough,
      expired: sel.expired,
    });
    expect([next.committed, next.expired]).toEqual([1, 2]);
  });

  it('without ttl nothing is skipped, however old', () => {
    expect(selectDeliverable(cands, { ...base, now: T0 + 1e9 })).toMatchObject({
      skipThrough: null,
      count: 3,
      expired: 0,
    });
  });

  it('messages retention removed before the ttl ran out are skipped but not counted', () => {
    const sel = selectDeliverable(cands, { ...base, retentionMs: 500, ttlMs: 10_000_000, now: T0 + 1500 });
    expect(sel).toMatchObject({ skipThrough: 1, expired: 0 });
  });
});

describe('unit: retryDelay', () => {
  it('an expired lease is redelivered only retryDelay after its expiry', () => {
    const s = leased(T0, 5_000);
    expect(s.lease?.rd).toBe(5_000);
    expect(redeliveryAt(s)).toBe(T0 + 15_000);
    expect(planPop(s, T0 + 10_000)).toEqual({ kind: 'busy', until: T0 + 15_000 });
    expect(planPop(s, T0 + 14_999).kind).toBe('busy');
    expect(planPop(s, T0 + 15_000)).toEqual({ kind: 'free', from: 0, redelivery: true });
  });

  it('a failed ack holds the lane for retryDelay from the ack; the next delivery clears the hold', () => {
    const s = leased(T0, 5_000);
    const r = planAck(s, [{ index: 0, offset: 0, status: 'failed', leaseId: 'L' }], { now: T0 + 1_000, mode: 'ack' });
    expect(r.outcome).toBe('failed');
    expect(r.next?.heldUntil).toBe(T0 + 6_000);
    expect(planPop(r.next!, T0 + 5_999)).toEqual({ kind: 'busy', until: T0 + 6_000 });
    expect(planPop(r.next!, T0 + 6_000).kind).toBe('free');
    const again = applyPop(r.next!, {
      now: T0 + 6_000,
      leaseId: 'L2',
      leaseMs: 10_000,
      start: 0,
      end: 0,
      fp: fingerprint('t0'),
      segs: [0],
      segEnd: 0,
      rl: 3,
      dlq: true,
      rd: 5_000,
    });
    expect(again.heldUntil).toBe(0);
  });

  it('without an applied retryDelay, failed and expired lanes are free at once; retry redelivers at once', () => {
    const s = leased(T0, 0);
    expect(planPop(s, T0 + 10_000).kind).toBe('free');
    const failed = planAck(s, [{ index: 0, offset: 0, status: 'failed', leaseId: 'L' }], { now: T0, mode: 'ack' });
    expect(planPop(failed.next!, T0).kind).toBe('free');
    const retried = planAck(leased(T0, 5_000), [{ index: 0, offset: 0, status: 'retry', leaseId: 'L' }], {
      now: T0,
      mode: 'ack',
    });
    expect(planPop(retried.next!, T0).kind).toBe('free');
  });
});

describe('unit: order of a namespace/task pop', () => {
  const qs = [
    { name: 'low', priority: 0 },
    { name: 'b', priority: 5 },
    { name: 'a', priority: 5 },
    { name: 'top', priority: 9 },
  ];
  it('highest priority first; equal priorities by name, starting after the one that served last', () => {
    expect(popOrder(qs, undefined)).toEqual(['top', 'a', 'b', 'low']);
    expect(popOrder(qs, 'a')).toEqual(['top', 'b', 'a', 'low']);
    expect(popOrder(qs, 'b')).toEqual(['top', 'a', 'b', 'low']);
    expect(popOrder(qs, 'gone')).toEqual(['top', 'a', 'b', 'low']);
    expect(popOrder([], 'x')).toEqual([]);
  });
});
