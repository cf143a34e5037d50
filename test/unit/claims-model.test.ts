import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../server/core/errors.js';
import { World } from './claims-world.js';

/**
 * Model-based runs of the pure claim core: random polls (anonymous and named, several
 * principals and sessions, with and without reclaim), acks, nacks (with and without a delay or
 * `attempts`), extends (current and stale), consumer dead letters, redrives, seeks, restarts
 * and time passing, each checked against a small shadow of what the group promised:
 *
 * - a record with a standing claim goes to nobody else, except a reclaim by a newer session of
 *   the same principal and name; a delayed nack goes to nobody before its delay passes;
 * - `attempts` counts the deliveries since the record was (re)started, this one included, and
 *   never exceeds `maxAttempts`;
 * - nothing finished is delivered again (until a seek back or a redrive);
 * - a new offset goes out only when no owed record is left behind;
 * - `committed` is exactly the lowest unfinished offset (redriven records below it aside);
 * - the in-flight count stays within `maxInFlight` (plus the redriven records, which a
 *   redrive makes owed whatever the cap).
 */

interface Config {
  maxAttempts: number;
  maxInFlight: number;
}

function run(seed0: number, cfg: Config, steps: number): void {
  let seed = seed0;
  const rnd = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)] as T;
  const w = new World(cfg);
  w.push(40);
  const deliveries = new Map<number, number>(); // offset -> deliveries since (re)start; 0: redriven, not handed out since
  const until = new Map<number, number>(); // standing claim (or delay) until
  const delayed = new Set<number>();
  const holder = new Map<number, string>(); // principal#consumer#session, or 'anon'
  const finished = new Set<number>();
  const redriven = new Set<number>(); // redriven below the frontier: never holds the cursor
  const claimed = new Set<number>(); // status claimed (standing or lapsed), as opposed to handed back
  const voided = new Set<number>(); // redriven records whose claim a seek voided: settling them is stale
  let redrives = 0;
  const log: string[] = [];
  const check = (ok: boolean, what: string): void => {
    if (!ok) throw new Error(what);
  };
  const unfinished = (): number[] => [...deliveries.keys()].filter((o) => !finished.has(o) && !voided.has(o));
  const refusedStale = (fn: () => unknown): boolean => {
    try {
      fn();
      return false;
    } catch (e) {
      if (e instanceof SluiceError && e.code === 'stale_claim') return true;
      throw e;
    }
  };

  try {
    for (let step = 0; step < steps; step++) {
      const x = rnd();
      if (x < 0.35) {
        const named = rnd() < 0.6;
        const principal = rnd() < 0.8 ? 'alice' : 'bob';
        const session = pick(['s1', 's2', 's3']);
        const reclaim = rnd() < 0.5;
        const max = 1 + Math.floor(rnd() * 5);
        const who = named ? `${principal}#w#${session}` : 'anon';
        const deadBefore = new Set(w.deadList());
        const got = w.poll(named ? { max, principal, consumer: 'w', session, reclaim } : { max, principal });
        log.push(
          `poll ${who} max=${max} reclaim=${reclaim} -> ${JSON.stringify(got.map((r) => [r.offset, r.attempts]))}`,
        );
        const fresh = got.filter((r) => !deliveries.has(r.offset)).map((r) => r.offset);
        const seen = new Set<number>();
        for (const r of got) {
          check(!seen.has(r.offset), `${r.offset} twice in one poll`);
          seen.add(r.offset);
          check(!finished.has(r.offset), `finished ${r.offset} delivered`);
          if ((until.get(r.offset) ?? 0) > w.now) {
            check(!delayed.has(r.offset), `delayed ${r.offset} delivered before its delay passed`);
            const h = holder.get(r.offset) ?? 'anon';
            check(
              named && h.startsWith(`${principal}#w#`) && h !== who,
              `standing claim on ${r.offset} (${h}) given to ${who}`,
            );
          }
          const n = (deliveries.get(r.offset) ?? 0) + 1;
          deliveries.set(r.offset, n);
          check(r.attempts === n, `attempts of ${r.offset}: ${r.attempts}, expected ${n}`);
          check(r.attempts <= cfg.maxAttempts, `${r.offset} delivered past maxAttempts (${r.attempts})`);
          until.set(r.offset, w.now + 30_000);
          delayed.delete(r.offset);
          claimed.add(r.offset);
          voided.delete(r.offset);
          holder.set(r.offset, who);
        }
        if (fresh.length > 0) {
          for (const [o, n] of deliveries) {
            if (finished.has(o) || seen.has(o) || (until.get(o) ?? 0) > w.now || n >= cfg.maxAttempts) continue;
            throw new Error(`owed ${o} left behind while new ${fresh.join(',')} went out`);
          }
        }
        // What the poll dead-lettered (out of attempts) is finished.
        for (const o of w.deadList()) {
          if (deadBefore.has(o)) continue;
          finished.add(o);
          voided.delete(o);
        }
        for (const o of [...deliveries.keys()].filter((x) => !finished.has(x))) {
          if ((deliveries.get(o) ?? 0) > 0 && !w.view.items.some((it) => it.records.some((r) => r.offset === o))) {
            check(w.deadList().includes(o), `${o} vanished without a dead letter`);
            finished.add(o);
            voided.delete(o);
          }
        }
      } else if (x < 0.55) {
        if (voided.size > 0 && rnd() < 0.2) {
          const o = pick([...voided]);
          log.push(`ack ${o} (voided by a seek)`);
          check(
            refusedStale(() => w.ack([o])),
            `ack of ${o}, whose claim a seek voided, accepted`,
          );
          continue;
        }
        const list = unfinished().filter(() => rnd() < 0.5);
        if (list.length === 0) continue;
        log.push(`ack ${list.join(',')}`);
        w.ack(list);
        for (const o of list) finished.add(o);
      } else if (x < 0.65) {
        const held = unfinished();
        if (held.length === 0) continue;
        const o = pick(held);
        const current = deliveries.get(o) as number;
        const attempts = rnd() < 0.3 ? undefined : current;
        const delayMs = rnd() < 0.5 ? 10_000 : 0;
        log.push(`nack ${o} attempts=${attempts} delay=${delayMs}`);
        if (current === 0) {
          check(
            refusedStale(() => w.nack(o, { attempts, delayMs })),
            `nack of ${o}, redriven and not handed out since, accepted`,
          );
          continue;
        }
        w.nack(o, { attempts, delayMs });
        if (delayMs > 0) {
          until.set(o, w.now + delayMs);
          delayed.add(o);
        } else until.delete(o);
        claimed.delete(o);
        holder.delete(o);
      } else if (x < 0.72) {
        const held = unfinished();
        if (held.length === 0) continue;
        const o = pick(held);
        const current = deliveries.get(o) as number;
        const stale = current > 1 && rnd() < 0.3;
        log.push(`extend ${o} attempts=${stale ? current - 1 : current}`);
        if (refusedStale(() => w.extend(o, stale ? current - 1 : current, 45_000))) continue;
        check(!stale, `extend naming an old delivery of ${o} accepted`);
        check(!delayed.has(o), `delayed ${o} extended`);
        until.set(o, w.now + 45_000);
      } else if (x < 0.76) {
        const held = unfinished();
        if (held.length === 0) continue;
        const o = pick(held);
        const current = deliveries.get(o) as number;
        log.push(`dead-letter ${o}`);
        if (current === 0) {
          check(
            refusedStale(() => w.deadLetter(o)),
            `dead-letter of ${o}, redriven and not handed out since, accepted`,
          );
          continue;
        }
        w.deadLetter(o, current);
        finished.add(o);
        check(w.deadList().includes(o), `consumer dead letter ${o} not listed`);
      } else if (x < 0.8) {
        const dead = w.deadList();
        if (dead.length === 0) continue;
        const o = pick(dead);
        log.push(`redrive ${o}`);
        // Listed but in play again (a seek back re-delivered it): the redrive only drops the pointer.
        const inPlay = !finished.has(o) && deliveries.has(o);
        w.redrive(o);
        redrives++;
        if (inPlay) continue;
        finished.delete(o);
        if (o >= (w.view.state?.frontier ?? 0))
          deliveries.delete(o); // the group gets there anyway
        else {
          redriven.add(o);
          deliveries.set(o, 0);
        }
        until.delete(o);
        delayed.delete(o);
        holder.delete(o);
      } else if (x < 0.83 && w.view.state) {
        const to = Math.floor(rnd() * (Math.min(w.view.state.frontier + 3, w.tail) + 1));
        log.push(`seek ${to}`);
        w.seek({ offset: to });
        // Every claim is void. From `to` on, the group replays (attempts start again, redriven
        // records included); below it, only redriven records are still owed (a claim on one is
        // void, a delayed nack of one still waits).
        for (const o of [...deliveries.keys()]) {
          const keep = o < to && redriven.has(o) && !finished.has(o);
          if (keep && claimed.has(o) && (deliveries.get(o) ?? 0) > 0) voided.add(o);
          if (keep && delayed.has(o)) continue;
          until.delete(o);
          delayed.delete(o);
          holder.delete(o);
          if (o >= to) {
            deliveries.delete(o);
            claimed.delete(o);
            voided.delete(o);
          }
        }
        for (let o = 0; o < w.tail; o++) {
          if (o >= to) finished.delete(o);
          else if (!redriven.has(o) || !deliveries.has(o)) finished.add(o);
        }
        for (const o of [...redriven]) if (o >= to || finished.has(o)) redriven.delete(o);
      } else if (x < 0.85) {
        log.push('restart');
        w.restart();
      } else {
        const ms = Math.floor(rnd() * 20_000);
        log.push(`advance ${ms}`);
        w.advance(ms);
        for (const o of [...delayed]) if ((until.get(o) ?? 0) <= w.now) delayed.delete(o);
      }

      if (!w.view.state) continue;
      let lowest = w.view.state.frontier;
      for (let o = 0; o < lowest; o++) {
        if (!finished.has(o) && !redriven.has(o)) {
          lowest = o;
          break;
        }
      }
      check(w.committed === lowest, `committed ${w.committed}, but the lowest unfinished offset is ${lowest}`);
      const inFlight = w.describe().inFlight;
      check(inFlight <= cfg.maxInFlight + redrives, `${inFlight} in flight, over the cap ${cfg.maxInFlight}`);
    }
  } catch (e) {
    // The last steps, to replay by hand.
    console.error(`seed ${seed0}:\n${log.slice(-30).join('\n')}`);
    throw e;
  }
}

describe('unit: claim core against a shadow model (random operations)', () => {
  it('keeps every promise over 300 random runs of 200 steps', () => {
    for (let s = 1; s <= 150; s++) {
      expect(() => run(s, { maxAttempts: 3, maxInFlight: 8 }, 200)).not.toThrow();
      expect(() => run(1000 + s, { maxAttempts: 1 + (s % 3), maxInFlight: 3 + (s % 7) }, 200)).not.toThrow();
    }
  });
});
