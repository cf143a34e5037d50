import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import * as core from '../../server/core/claims/index.js';
import { SluiceError } from '../../server/core/errors.js';
import { resolveQueueOptions } from '../../server/core/queue-options.js';
import { World } from './claims-world.js';

/** Runs `fn` and returns the SluiceError code it threw. */
function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof SluiceError) return e.code;
    throw e;
  }
  throw new Error('expected a SluiceError');
}

// Every scenario the Felix design names (../shared/reference/felix-group-scenarios.md), on
// the pure core with an explicit `now`.
describe('unit: claim scenarios (pure core)', () => {
  it('an_offset_in_flight_is_not_handed_out_again', () => {
    const w = new World();
    w.push(4);
    expect(w.offsets({ max: 2 })).toEqual([0, 1]);
    expect(w.offsets({ max: 2 })).toEqual([2, 3]);
    expect(w.offsets({ max: 2 })).toEqual([]);
  });

  it('a_lapsed_claim_is_handed_out_again', () => {
    const w = new World();
    w.push(3);
    expect(w.offsets({ max: 3 })).toEqual([0, 1, 2]);
    w.advance(29_999);
    expect(w.offsets({ max: 3 })).toEqual([]);
    w.advance(1); // until <= now: lapsed
    const again = w.poll({ max: 3 });
    expect(again.map((r) => [r.offset, r.attempts])).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
  });

  it('the_cursor_does_not_advance_over_a_gap', () => {
    const w = new World();
    w.push(4);
    w.poll({ max: 4 });
    expect(w.ack([1, 3])).toBe(0);
    expect(w.ack([0])).toBe(2);
    expect(w.ack([2])).toBe(4);
    expect(w.view.items).toEqual([]);
  });

  it('owed_records_go_out_before_new_ones', () => {
    const w = new World();
    w.push(2);
    w.poll({ max: 2 });
    w.nack(0);
    w.nack(1);
    w.push(3);
    expect(w.offsets({ max: 3 })).toEqual([0, 1, 2]);
  });

  it('a_record_is_given_up_on_after_the_attempt_bound', () => {
    const w = new World({ maxAttempts: 3 });
    w.push(1);
    for (let i = 1; i <= 3; i++) {
      expect(w.poll({ max: 1 }).map((r) => r.attempts)).toEqual([i]);
      w.advance(30_000); // abandoned: the claim lapses
    }
    expect(w.offsets({ max: 1 })).toEqual([]);
    expect(w.deadList()).toEqual([0]);
    expect(w.committed).toBe(1);
    expect(w.describe()).toMatchObject({ deadLetters: 1, inFlight: 0, owed: 0 });
  });

  it('a_redriven_record_is_handed_out_again', () => {
    const w = new World({ maxAttempts: 1 });
    w.push(3);
    expect(w.offsets({ max: 2 })).toEqual([0, 1]);
    w.advance(30_000);
    // 0 and 1 are out of attempts: dead-lettered by this poll, which hands out 2.
    expect(w.offsets({ max: 3 })).toEqual([2]);
    expect(w.ack([2])).toBe(3);
    expect(w.deadList()).toEqual([0, 1]);
    w.redrive(0);
    expect(w.offsets({ max: 3 })).toEqual([0]);
    expect(w.committed).toBe(3);
    expect(w.deadList()).toEqual([1]);
  });

  it('a_redriven_record_gets_its_attempts_back', () => {
    const w = new World({ maxAttempts: 2 });
    w.push(1);
    w.poll();
    w.advance(30_000);
    expect(w.poll().map((r) => r.attempts)).toEqual([2]);
    w.advance(30_000);
    expect(w.poll()).toEqual([]);
    w.redrive(0);
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
    // Acknowledging the redriven record finishes it; the cursor never moved back.
    expect(w.ack([0])).toBe(1);
    expect(w.describe()).toMatchObject({ committed: 1, inFlight: 0, owed: 0, deadLetters: 0 });
  });

  it('a_redriven_record_is_still_owed_after_a_restart', () => {
    const w = new World({ maxAttempts: 1 });
    w.push(2);
    w.poll({ max: 1 });
    w.deadLetter(0);
    w.redrive(0);
    w.restart();
    expect(w.poll({ max: 1 }).map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
    expect(w.deadList()).toEqual([]);
  });

  it('an_extended_claim_outlasts_the_visibility_timeout', () => {
    const w = new World();
    w.push(1);
    w.poll();
    w.advance(25_000);
    expect(w.extend(0, 1, 120_000)).toBe(120_000);
    w.advance(5_001); // past the original lapse
    expect(w.offsets()).toEqual([]);
    w.advance(120_000 - 5_001 - 1);
    expect(w.offsets()).toEqual([]);
    w.advance(1); // the extension lapsed
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
  });

  it('an_extend_after_the_record_was_handed_out_again_is_refused', () => {
    const w = new World();
    w.push(1);
    w.poll();
    w.advance(30_000);
    expect(w.poll().map((r) => r.attempts)).toEqual([2]);
    const before = JSON.stringify(w.view);
    expect(codeOf(() => w.extend(0, 1, 60_000))).toBe('stale_claim');
    expect(JSON.stringify(w.view)).toBe(before);
    expect(w.extend(0, 2, 60_000)).toBe(60_000);
    w.advance(59_999);
    expect(w.offsets()).toEqual([]);
  });

  it('a_delayed_nack_is_redelivered_after_the_delay', () => {
    const w = new World();
    w.push(1);
    w.poll();
    w.nack(0, { attempts: 1, delayMs: 10_000 });
    w.advance(9_999);
    expect(w.offsets()).toEqual([]);
    expect(w.describe()).toMatchObject({ inFlight: 1, delayed: 1, owed: 0 });
    w.advance(1);
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
  });

  it('a_refunded_nack_gives_the_attempt_back_so_a_target_that_did_not_run_never_spends_the_budget', () => {
    const w = new World({ maxAttempts: 2 });
    w.push(1);
    for (let i = 0; i < 5; i++) {
      expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
      w.nack(0, { attempts: 1, refund: true });
    }
    // Charged nacks still spend it: the second charged delivery is the last.
    expect(w.poll().map((r) => r.attempts)).toEqual([1]);
    w.nack(0, { attempts: 1 });
    expect(w.poll().map((r) => r.attempts)).toEqual([2]);
    w.nack(0, { attempts: 2 });
    expect(w.poll()).toEqual([]);
    expect(w.deadList()).toEqual([0]);
  });

  it('a_consumer_dead_letter_is_listed_finished_and_redrivable', () => {
    const w = new World();
    w.push(2);
    w.poll({ max: 2 });
    w.deadLetter(0, 1);
    expect(w.ack([1])).toBe(2);
    expect(w.deadList()).toEqual([0]);
    expect(w.dead.get(0)).toMatchObject({ reason: 'consumer', attempts: 1 });
    expect(w.offsets()).toEqual([]);
    w.redrive(0);
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
    // A record already finished is refused, and not listed.
    expect(codeOf(() => w.deadLetter(1))).toBe('stale_claim');
    expect(w.deadList()).toEqual([]);
  });

  it('a_tracker_with_a_standing_claim_is_not_evicted', () => {
    const w = new World();
    w.push(2);
    w.poll({ max: 1, visibilityMs: 12 * 3600_000 });
    // A seek elsewhere would leave garbage; here there is none, and an idle hour changes nothing.
    w.advance(3600_000);
    expect(core.sweepable(w.view)).toEqual([]);
    expect(w.describe()).toMatchObject({ inFlight: 1 });
    expect(w.offsets({ max: 1 })).toEqual([1]);
    w.ack([1]);
    // Once it lapses the record is owed, not lost: the clean-up still keeps it.
    w.advance(11 * 3600_000);
    expect(core.sweepable(w.view)).toEqual([]);
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
    // Only what a seek voided is collectable.
    w.seek({ offset: 0 });
    const garbage = core.sweepable(w.view);
    expect(garbage.every((g) => !w.view.items.some((it) => it.kind === g.kind && it.first === g.first))).toBe(true);
  });

  it('a_consumer_extends_delays_and_dead_letters_its_claims', () => {
    const w = new World();
    w.push(3);
    const got = w.poll({ max: 3 });
    expect(got.map((r) => r.offset)).toEqual([0, 1, 2]);
    w.advance(20_000);
    expect(w.extend(0, 1, 60_000)).toBe(60_000);
    w.nack(1, { attempts: 1, delayMs: 5_000 });
    w.deadLetter(2, 1);
    w.advance(10_001); // original claims lapse; 0 was extended; 1's delay passed
    expect(w.poll({ max: 3 }).map((r) => [r.offset, r.attempts])).toEqual([[1, 2]]);
    expect(w.deadList()).toEqual([2]);
    w.ack([0, 1]);
    expect(w.committed).toBe(3);
  });

  it('a_seek_backwards_replays_what_the_group_finished', () => {
    const w = new World();
    w.push(3);
    w.poll({ max: 3 });
    expect(w.ack([0, 1, 2])).toBe(3);
    expect(w.seek({ offset: 1 })).toEqual({ offset: 1, moved: true });
    expect(w.poll({ max: 3 }).map((r) => [r.offset, r.attempts])).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });

  it('an_ack_for_a_claim_from_before_a_seek_is_refused', () => {
    const w = new World();
    w.push(3);
    w.poll({ max: 3 });
    w.seek({ offset: 0 });
    expect(codeOf(() => w.ack([1]))).toBe('stale_claim');
    expect(w.offsets({ max: 3 })).toEqual([0, 1, 2]);
    // Delivered again after the seek: now the ack counts.
    expect(w.ack([0, 1, 2])).toBe(3);
  });

  it('an_ack_racing_a_seek_does_not_move_the_new_cursor', () => {
    const w = new World();
    w.push(3);
    w.poll({ max: 3 });
    // The ack is decided on the view before the seek...
    const basedOn = w.view.stateVer;
    const racing = core.ack(w.view, [0, 1, 2], w.now);
    expect(racing.committed).toBe(3);
    // ...the seek lands first...
    w.seek({ offset: 0 });
    // ...so the ack's guarded write is refused, and decided again it is stale.
    expect(() => w.commit(racing.changes as core.Changes, basedOn)).toThrow(/guard failed/);
    expect(codeOf(() => w.ack([0, 1, 2]))).toBe('stale_claim');
    expect(w.committed).toBe(0);
    expect(w.offsets({ max: 3 })).toEqual([0, 1, 2]);
  });

  it('a_group_is_created_moved_described_and_deleted', () => {
    const w = new World();
    w.push(5);
    expect(w.create('latest')).toEqual({ offset: 5, moved: true });
    expect(w.create('earliest')).toEqual({ offset: 5, moved: false });
    w.push(3);
    expect(w.offsets({ max: 2 })).toEqual([5, 6]);
    w.nack(6);
    expect(w.describe()).toMatchObject({ committed: 5, inFlight: 1, owed: 1, deadLetters: 0 });
    expect(w.seek('earliest')).toEqual({ offset: 0, moved: true });
    expect(w.describe()).toMatchObject({ committed: 0, inFlight: 0, owed: 0 });
    // Delete: the position goes, and what the old incarnation left is garbage to a new one.
    const old = w.view;
    w.view = {
      state: undefined,
      stateVer: undefined,
      items: [],
      garbage: old.items.map((i) => ({ kind: i.kind, first: i.first, ver: i.ver ?? 1 })),
    };
    expect(w.offsets({ max: 2 })).toEqual([0, 1]);
    expect(w.view.state?.inc).not.toBe(old.state?.inc);
  });
});

describe('unit: claim rules beyond the scenarios (pure core)', () => {
  it('refuses to settle what was never handed out, or at or past the tail, as invalid_request', () => {
    const w = new World();
    w.push(3);
    expect(codeOf(() => w.ack([0]))).toBe('invalid_request'); // no state yet
    w.poll({ max: 1 });
    expect(codeOf(() => w.ack([1]))).toBe('invalid_request');
    expect(codeOf(() => w.ack([3]))).toBe('invalid_request');
    expect(codeOf(() => w.nack(2))).toBe('invalid_request');
    expect(codeOf(() => w.extend(5, 1, 1000))).toBe('invalid_request');
    // All or nothing: the valid offset in a refused list is not acknowledged.
    expect(codeOf(() => w.ack([0, 1]))).toBe('invalid_request');
    expect(w.committed).toBe(0);
    // A duplicate ack is harmless.
    expect(w.ack([0])).toBe(1);
    expect(w.ack([0])).toBe(1);
  });

  it('names a nack by its delivery: a late nack is stale and cannot take the record from its new holder', () => {
    const w = new World();
    w.push(1);
    w.poll();
    w.advance(30_000);
    w.poll(); // attempt 2
    expect(codeOf(() => w.nack(0, { attempts: 1 }))).toBe('stale_claim');
    expect(codeOf(() => w.nack(0, { attempts: 1, delayMs: 1000 }))).toBe('stale_claim');
    expect(w.describe()).toMatchObject({ inFlight: 1 });
    w.nack(0, { attempts: 2 });
    expect(w.describe()).toMatchObject({ inFlight: 0, owed: 1 });
  });

  it('refuses to nack, extend or dead-letter a redriven record not handed out since: nothing is parked or listed', () => {
    const w = new World({ maxInFlight: 1 });
    w.push(2);
    w.poll({ max: 1 });
    w.deadLetter(0, 1);
    w.poll({ max: 1 });
    w.ack([1]);
    w.redrive(0);
    // No delivery of 0 is current: a delayed nack would take an in-flight slot nobody was granted.
    expect(codeOf(() => w.nack(0, { delayMs: 60_000 }))).toBe('stale_claim');
    expect(codeOf(() => w.nack(0))).toBe('stale_claim');
    expect(codeOf(() => w.nack(0, { attempts: 1 }))).toBe('stale_claim');
    expect(codeOf(() => w.extend(0, 1, 1000))).toBe('stale_claim');
    expect(codeOf(() => w.deadLetter(0))).toBe('stale_claim');
    expect(w.deadList()).toEqual([]);
    expect(w.describe()).toMatchObject({ inFlight: 0, owed: 1, delayed: 0 });
    // Once handed out, the delivery is current again.
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 1]]);
    w.nack(0, { delayMs: 60_000 });
    expect(w.describe()).toMatchObject({ inFlight: 1, delayed: 1 });
  });

  it('does not extend a record that was handed back or is waiting out a delay', () => {
    const w = new World();
    w.push(2);
    w.poll({ max: 2 });
    w.nack(0);
    w.nack(1, { delayMs: 5000 });
    expect(codeOf(() => w.extend(0, 1, 1000))).toBe('stale_claim');
    expect(codeOf(() => w.extend(1, 1, 1000))).toBe('stale_claim');
  });

  it('caps visibility, extensions and delays at maxVisibilityMs', () => {
    const w = new World({ maxVisibilityMs: 60_000 });
    w.push(1);
    w.poll();
    // Capped, not refused: the answer is the duration granted.
    expect(w.extend(0, 1, 600_000)).toBe(60_000);
    expect(w.extend(0, 1, 30_000)).toBe(30_000);
    w.nack(0, { delayMs: 600_000 });
    w.now += 60_000 - 1;
    expect(w.offsets()).toEqual([]);
    w.now += 1;
    expect(w.offsets()).toEqual([0]);
  });

  it('answers capped at the in-flight cap, counting delayed nacks, and frees room on settle or lapse', () => {
    const w = new World({ maxInFlight: 3 });
    w.push(10);
    expect(w.offsets({ max: 5 })).toEqual([0, 1, 2]);
    expect(w.offsets({ max: 5 })).toEqual([]);
    expect(w.lastCapped).toBe(true);
    w.nack(0, { delayMs: 10_000 }); // still holds its slot
    expect(w.offsets()).toEqual([]);
    expect(w.lastCapped).toBe(true);
    w.ack([1]);
    expect(w.offsets({ max: 5 })).toEqual([3]);
    expect(w.lastCapped).toBe(false);
    w.advance(30_000); // 2 and 3 lapse, and the delay passed
    expect(w.offsets({ max: 5 })).toEqual([0, 2, 3]);
  });

  it('hands out at most 1,000 records per poll whatever max asks', () => {
    const w = new World();
    w.push(1500);
    expect(w.poll({ max: 5000 })).toHaveLength(1000);
    expect(w.poll({ max: 5000 })).toHaveLength(500);
  });

  it('reports skippedBefore for offsets retention removed before the group got to them', () => {
    const w = new World();
    w.push(10);
    w.head = 4; // retention removed 0..3
    const got = w.poll({ max: 2 });
    expect(got).toEqual([
      { offset: 4, attempts: 1, skippedBefore: 4 },
      { offset: 5, attempts: 1, skippedBefore: 0 },
    ]);
    expect(w.committed).toBe(4);
    // A redelivery of the same record says the same.
    w.advance(30_000);
    expect(w.poll({ max: 1 })[0]).toEqual({ offset: 4, attempts: 2, skippedBefore: 4 });
    // An owed record retention removed since is settled without delivery.
    w.nack(4);
    w.head = 6;
    // 4 (nacked) and 5 (lapsed) are owed, but gone: settled without delivery, then 6 is new.
    expect(w.poll({ max: 3 })).toEqual([{ offset: 6, attempts: 1, skippedBefore: 0 }]);
    expect(w.committed).toBe(6);
    expect(w.describe()).toMatchObject({ inFlight: 1, owed: 0 });
  });

  it('merges small consecutive hand-outs into one batch, and keeps large ones apart', () => {
    const w = new World();
    w.push(500);
    for (let i = 0; i < 10; i++) w.poll({ max: 1 });
    expect(w.view.items.map((i) => [i.first, i.count])).toEqual([[0, 10]]);
    w.poll({ max: 200 });
    expect(w.view.items.map((i) => [i.first, i.count])).toEqual([
      [0, 10],
      [10, 200],
    ]);
    w.ack(Array.from({ length: 210 }, (_, i) => i));
    expect(w.view.items).toEqual([]);
    expect(w.committed).toBe(210);
  });

  it('splits an ack touching more batches than one write holds, and settles all of it', () => {
    const w = new World();
    w.push(7000);
    for (let i = 0; i < 70; i++) w.poll({ max: 100 });
    expect(w.view.items.length).toBeGreaterThan(core.MAX_TOUCHED_ITEMS);
    const all = Array.from({ length: 7000 }, (_, i) => i);
    const first = core.ack(w.view, all, w.now);
    expect(first.rest.length).toBeGreaterThan(0);
    w.commit(first.changes as core.Changes, w.view.stateVer);
    const second = core.ack(w.view, first.rest, w.now);
    w.commit(second.changes as core.Changes, w.view.stateVer);
    expect(second.rest).toEqual([]);
    expect(w.committed).toBe(7000);
  });

  it('dead-letters an out-of-attempts record even on a capped poll, and not twice', () => {
    const w = new World({ maxAttempts: 1, maxInFlight: 1 });
    w.push(2);
    w.poll({ max: 1 });
    w.advance(30_000);
    expect(w.offsets({ max: 1 })).toEqual([1]);
    expect(w.deadList()).toEqual([0]);
    expect(w.describe().deadLetters).toBe(1);
  });

  describe('named members and reclaim', () => {
    const setup = (): World => {
      const w = new World();
      w.push(10);
      expect(w.offsets({ max: 3, consumer: 'worker', session: 's1' })).toEqual([0, 1, 2]);
      w.advance(1000);
      return w;
    };

    it('a new session reclaims what the name holds under older sessions, before owed records', () => {
      const w = setup();
      w.offsets({ max: 1 }); // 3, anonymous
      w.nack(3); // owed to the group
      const got = w.poll({ max: 2, consumer: 'worker', session: 's2', reclaim: true });
      expect(got.map((r) => [r.offset, r.attempts])).toEqual([
        [0, 2],
        [1, 2],
      ]);
      // Over as many polls as it takes; nobody else gets them meanwhile.
      expect(w.offsets({ max: 1 })).toEqual([3]);
      expect(w.offsets({ max: 5, consumer: 'worker', session: 's2' })).toEqual([2, 4, 5, 6, 7]);
    });

    it('only the first reclaiming poll of a session reclaims; an older session never takes back', () => {
      const w = setup();
      expect(w.offsets({ max: 3, consumer: 'worker', session: 's2', reclaim: true })).toEqual([0, 1, 2]);
      // s1 (older) reclaiming gets nothing back.
      expect(w.offsets({ max: 3, consumer: 'worker', session: 's1', reclaim: true })).toEqual([3, 4, 5]);
      // s2 again with reclaim set: harmless, it does not reclaim 3..5 from s1.
      expect(w.offsets({ max: 1, consumer: 'worker', session: 's2', reclaim: true })).toEqual([6]);
      // A newer session s3 takes what the name holds under s1 and s2.
      expect(w.offsets({ max: 10, consumer: 'worker', session: 's3', reclaim: true })).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
      ]);
    });

    it('another principal using the same name gets nothing of it', () => {
      const w = setup();
      expect(w.offsets({ max: 3, principal: 'mallory', consumer: 'worker', session: 's9', reclaim: true })).toEqual([
        3, 4, 5,
      ]);
    });

    it('a reserved record whose claim lapses before it is taken back goes to the whole group', () => {
      const w = setup();
      expect(w.offsets({ max: 1, consumer: 'worker', session: 's2', reclaim: true })).toEqual([0]);
      w.advance(29_500); // 1 and 2 (still s1's claims, reserved for s2) lapse; 0 (s2's) stands
      expect(w.offsets({ max: 2 })).toEqual([1, 2]);
    });

    it('claims a reclaimer takes after its reclaim stay with whoever made them', () => {
      const w = setup();
      w.offsets({ max: 3, consumer: 'worker', session: 's2', reclaim: true }); // 0,1,2
      // s1 keeps working and claims more; s2 does not snatch them.
      expect(w.offsets({ max: 2, consumer: 'worker', session: 's1' })).toEqual([3, 4]);
      expect(w.offsets({ max: 2, consumer: 'worker', session: 's2' })).toEqual([5, 6]);
    });

    it('does not hand back a record that is out of attempts: it waits out its claim and is dead-lettered', () => {
      // A member crash-looping on a poison record must not reclaim it for ever.
      const w = new World({ maxAttempts: 2 });
      w.push(3);
      expect(w.offsets({ max: 2, consumer: 'worker', session: 's1' })).toEqual([0, 1]);
      w.advance(30_000);
      expect(w.poll({ max: 1, consumer: 'worker', session: 's1' }).map((r) => [r.offset, r.attempts])).toEqual([
        [0, 2],
      ]);
      // s2 reclaims: 0 had its maxAttempts deliveries, 1 had one.
      expect(
        w.poll({ max: 3, consumer: 'worker', session: 's2', reclaim: true }).map((r) => [r.offset, r.attempts]),
      ).toEqual([
        [1, 2],
        [2, 1],
      ]);
      expect(w.describe()).toMatchObject({ inFlight: 3, owed: 0 });
      w.advance(30_000);
      // Every claim lapsed: 0 and 1 are out of attempts and dead-lettered, 2 goes out again.
      expect(
        w.poll({ max: 3, consumer: 'worker', session: 's3', reclaim: true }).map((r) => [r.offset, r.attempts]),
      ).toEqual([[2, 2]]);
      expect(w.deadList()).toEqual([0, 1]);
      expect(w.ack([2])).toBe(3);
    });

    it('does not reclaim a delayed nack: nobody holds it', () => {
      const w = setup(); // s1 holds 0, 1, 2
      w.nack(0, { attempts: 1, delayMs: 60_000 });
      expect(w.offsets({ max: 5, consumer: 'worker', session: 's2', reclaim: true })).toEqual([1, 2, 3, 4, 5]);
      expect(w.describe()).toMatchObject({ delayed: 1 });
    });

    it('remembers the most recent sessions of a name', () => {
      let m: core.Member | undefined;
      for (let i = 0; i < core.MAX_SESSIONS_PER_MEMBER + 10; i++) m = core.seeSession(m, 1, `s${i}`).member;
      expect(Object.keys(m!.sessions)).toHaveLength(core.MAX_SESSIONS_PER_MEMBER);
      expect(m!.sessions['s0']).toBeUndefined();
      expect(core.seeSession(m, 1, `s${core.MAX_SESSIONS_PER_MEMBER + 9}`)).toMatchObject({
        seq: core.MAX_SESSIONS_PER_MEMBER + 10,
        changed: false,
      });
    });
  });

  it('keeps redriven records owed across a seek, and voids a claim on one made before it', () => {
    const w = new World({ maxAttempts: 2 });
    w.push(5);
    w.poll({ max: 1 });
    w.deadLetter(0);
    w.poll({ max: 4 });
    w.ack([1, 2, 3, 4]);
    w.redrive(0);
    expect(w.offsets({ max: 1 })).toEqual([0]);
    w.seek({ offset: 5 });
    expect(codeOf(() => w.ack([0]))).toBe('stale_claim');
    expect(w.describe()).toMatchObject({ committed: 5, owed: 1, deadLetters: 0 });
    expect(w.poll().map((r) => [r.offset, r.attempts])).toEqual([[0, 2]]);
    w.ack([0]);
    expect(w.describe()).toMatchObject({ committed: 5, owed: 0, inFlight: 0 });
  });

  it('a seek back over a redriven record hands it out once, with the replay', () => {
    const w = new World();
    w.push(5);
    w.poll({ max: 3 });
    w.deadLetter(2, 1);
    w.ack([0, 1]);
    w.poll({ max: 2 });
    expect(w.ack([3, 4])).toBe(5);
    w.redrive(2);
    expect(w.poll({ max: 1 }).map((r) => [r.offset, r.attempts])).toEqual([[2, 1]]); // claimed, then...
    w.seek({ offset: 0 }); // ...voided: the group replays 0..4, 2 among them
    expect(w.poll({ max: 10 }).map((r) => [r.offset, r.attempts])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
    expect(w.offsets({ max: 10 })).toEqual([]);
    expect(w.describe()).toMatchObject({ inFlight: 5, owed: 0, deadLetters: 0 });
    expect(w.ack([0, 1, 2, 3, 4])).toBe(5);
    expect(w.view.items).toEqual([]);
  });

  it('refuses a seek back over more redriven records than one write replaces, as a conflict', () => {
    const w = new World();
    w.push(100);
    w.poll({ max: 100 });
    for (let o = 0; o < 95; o++) w.deadLetter(o, 1);
    w.ack([95, 96, 97, 98, 99]);
    for (let o = 0; o < 95; o++) w.redrive(o);
    expect(codeOf(() => w.seek('earliest'))).toBe('conflict');
    expect(w.describe()).toMatchObject({ committed: 100, owed: 95 });
    // One fewer fits: the replay then owes all of them once.
    w.poll({ max: 1 });
    w.ack([0]);
    expect(w.seek('earliest')).toEqual({ offset: 0, moved: true });
    expect(w.view.items).toEqual([]);
    expect(w.offsets({ max: 1000 })).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('resolves starts inside the retained range only', () => {
    expect(core.resolveStart('earliest', 3, 9)).toBe(3);
    expect(core.resolveStart('latest', 3, 9)).toBe(9);
    expect(core.resolveStart({ offset: 9 }, 3, 9)).toBe(9);
    expect(codeOf(() => core.resolveStart({ offset: 2 }, 3, 9))).toBe('invalid_request');
    expect(codeOf(() => core.resolveStart({ offset: 10 }, 3, 9))).toBe('invalid_request');
  });

  it('seeks only a group that exists', () => {
    const w = new World();
    w.push(1);
    expect(codeOf(() => w.seek('earliest'))).toBe('not_found');
    expect(codeOf(() => w.describe())).toBe('not_found');
  });
});

describe('unit: claim configuration', () => {
  it('reads the service-wide defaults of the claim options from SLUICE_GROUP_*, and the wait cap', () => {
    const d = loadConfig({});
    expect(d.claimDefaults).toEqual({
      visibilityTimeoutMs: 30_000,
      maxAttempts: 5,
      maxInFlight: 10_000,
      maxVisibilityMs: 43_200_000,
    });
    expect(d.claimMaxWaitMs).toBe(25_000);
    const c = loadConfig({
      SLUICE_GROUP_VISIBILITY_TIMEOUT_MS: '5000',
      SLUICE_GROUP_MAX_ATTEMPTS: '2',
      SLUICE_GROUP_MAX_IN_FLIGHT: '50',
      SLUICE_GROUP_MAX_VISIBILITY_MS: '60000',
      SLUICE_CLAIM_MAX_WAIT_MS: '1000',
    });
    expect(c.claimDefaults).toEqual({
      visibilityTimeoutMs: 5000,
      maxAttempts: 2,
      maxInFlight: 50,
      maxVisibilityMs: 60_000,
    });
    expect(c.claimMaxWaitMs).toBe(1000);
    expect(() =>
      loadConfig({ SLUICE_GROUP_VISIBILITY_TIMEOUT_MS: '70000', SLUICE_GROUP_MAX_VISIBILITY_MS: '60000' }),
    ).toThrow(/SLUICE_GROUP_MAX_VISIBILITY_MS/);
    expect(() => loadConfig({ SLUICE_GROUP_MAX_ATTEMPTS: '0' })).toThrow(/SLUICE_GROUP_MAX_ATTEMPTS/);
  });

  it('fills claim options a /configure leaves out from those defaults', () => {
    const defaults = loadConfig({ SLUICE_GROUP_VISIBILITY_TIMEOUT_MS: '5000' }).claimDefaults;
    const o = resolveQueueOptions({ maxAttempts: 9 }, defaults);
    expect(o).toMatchObject({
      visibilityTimeoutMs: 5000,
      maxAttempts: 9,
      maxInFlight: 10_000,
      maxVisibilityMs: 43_200_000,
    });
    expect(resolveQueueOptions({}).visibilityTimeoutMs).toBe(30_000);
  });
});
