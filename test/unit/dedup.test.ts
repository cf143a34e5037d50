import { describe, expect, it } from 'vitest';
import { firstOccurrences, judgeReservation, reservationJson, type Reservation } from '../../server/core/dedup.js';

const r = (at: number, push = 'p1', mid = 'm1'): Reservation => ({ push, mid, at });
const base = { windowMs: 60_000, stallMs: 10_000 };

describe('unit: judgeReservation', () => {
  it('asks for the holder marker before deciding', () => {
    expect(judgeReservation({ ...base, now: 1000, reservation: r(0) })).toEqual({ kind: 'check-marker', push: 'p1' });
  });
  it('reports a duplicate of a committed original inside the window', () => {
    expect(judgeReservation({ ...base, now: 59_999, reservation: r(0), marker: 'committed' })).toEqual({
      kind: 'duplicate',
      messageId: 'm1',
    });
  });
  it('takes over a committed reservation once the window has passed', () => {
    expect(judgeReservation({ ...base, now: 60_000, reservation: r(0), marker: 'committed' })).toEqual({
      kind: 'take-over',
    });
  });
  it('takes over the reservation of an aborted push at once', () => {
    expect(judgeReservation({ ...base, now: 1, reservation: r(0), marker: 'aborted' })).toEqual({ kind: 'take-over' });
  });
  it('waits for a holder still inside its stall budget', () => {
    const d = judgeReservation({ ...base, now: 9_999, reservation: r(0), marker: 'absent' });
    expect(d.kind).toBe('wait');
  });
  it('aborts a holder that stalled past the budget, even outside the window', () => {
    expect(judgeReservation({ ...base, now: 10_000, reservation: r(0), marker: 'absent' })).toEqual({
      kind: 'abort-holder',
      push: 'p1',
    });
    expect(judgeReservation({ ...base, now: 120_000, reservation: r(0), marker: 'absent' })).toEqual({
      kind: 'abort-holder',
      push: 'p1',
    });
  });
});

describe('unit: firstOccurrences', () => {
  it('maps repeats inside one batch to their first occurrence', () => {
    expect(firstOccurrences(['a', 'b', 'a', 'c', 'b', 'a']).firstIndex).toEqual([0, 1, 0, 3, 1, 0]);
  });
  it('keeps distinct ids distinct', () => {
    expect(firstOccurrences(['x', 'y']).firstIndex).toEqual([0, 1]);
  });
});

describe('unit: reservationJson', () => {
  it('writes the JSON.stringify text of { push, mid, at }, whatever the ids hold', () => {
    for (const [push, mid, at] of [
      ['019ad0c4-1b2c-7d3e-8f40-123456789abc', '019ad0c4-1b2c-7d3e-8f40-cba987654321', 1_764_459_000_123],
      ['p"1', 'm\\1\n', 1.5],
      ['ü', '\ud800', 0],
    ] as const) {
      expect(reservationJson(push, at)(mid)).toBe(JSON.stringify({ push, mid, at }));
    }
  });
});
