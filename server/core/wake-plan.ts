/**
 * The notifier's fan-out (docs/DEPLOYING.md, "Idle consumers"): which waiting connections a push
 * or a relay wakes, as pure functions of the waits and `now` (epoch ms).
 *
 * The model, on one page:
 * - A wait names its consumer group. One woken consumer per group is usually enough: a
 *   (partition, group) has one leased span at a time, so a second one mostly finds nothing. A
 *   wait that names no group (a client from before groups) is a group of its own, `''`.
 * - A push wakes at most {@link WAKES_PER_GROUP} (k = 2) waits per group, the longest-waiting
 *   first, so successive pushes rotate through a group. Two, not one: a wake-up that is lost
 *   (a failed post, a consumer busy elsewhere) does not leave the push unseen by its group.
 * - The rest of the group is split into k contiguous ranges of its key order (the waits'
 *   {@link waitSlot}s), one handed to each woken wait as a relay token in its `work` message.
 * - A woken consumer whose pop finds messages relays once, with its token: its range is split
 *   into k parts and the first wait of each is woken, holding the rest of its part. A consumer
 *   that finds nothing registers again and ends its branch: nobody is woken for work that is gone.
 * - Ranges are disjoint, so while the work lasts every relay wakes k new waiters and all n
 *   waiters of a group are woken within {@link wakeWaves}(n) waves (2,000: 10); a wave is one
 *   wake-up's latency. A relay only reaches waits registered by the push that began it (`at`):
 *   a consumer that registered again since is awake and has looked.
 * - Waits past `until` are stale: never woken, removed when seen.
 *
 * @example
 * ```ts
 * const { branches } = planPush(waits, now, 100); // ≤ 2 branches per group
 * relayTokenOf(branches[0]!.members, 0, now);   // the range the first branch's head relays to
 * ```
 */
import { WAIT_HOLD_MS, type Wait } from './notifications.js';

/** k: waits a push wakes per group, and waits a relay wakes (see the model above). */
export const WAKES_PER_GROUP = 2;

/** A wait's place in its group's key order: FNV-1a of the connection id, 8 hex digits (spreads ids evenly). */
export function waitSlot(connectionId: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < connectionId.length; i++) {
    h ^= connectionId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** When a wait was registered: its hold counts from then. */
export const registeredAt = (w: Wait): number => w.until - WAIT_HOLD_MS;

/** The group a wait is woken with: `''` for a wait that names none. */
export const groupOf = (w: Wait): string => w.group ?? '';

/** What a relay token names: the slots `from`..`to` (inclusive) of a group, registered by `at`. */
export interface RelayRange {
  at: number;
  from: string;
  to: string;
}

const SLOT = /^[0-9a-f]{8}$/;

/** The token a `work` message carries and a relay sends back. */
export const encodeRelay = (r: RelayRange): string => `${r.at.toString(36)}.${r.from}.${r.to}`;

/** The range a token names, or undefined for anything that is not one. */
export function decodeRelay(token: string): RelayRange | undefined {
  const [at, from, to, extra] = token.split('.');
  if (extra !== undefined || !at || !/^[0-9a-z]{1,12}$/.test(at) || !from || !to) return undefined;
  if (!SLOT.test(from) || !SLOT.test(to) || from > to) return undefined;
  return { at: parseInt(at, 36), from, to };
}

/**
 * One line of wake-ups: its first member that can be claimed and reached is woken and relays
 * the members after it; a member gone or taken gives its place to the next.
 */
export interface Branch<W extends Wait> {
  group: string;
  members: W[];
}

export interface PushPlan<W extends Wait> {
  branches: Branch<W>[];
  /** Past their hold: to remove. */
  stale: W[];
  /** Wake-ups left out at the budget (whole groups, the longest-waiting groups go first). */
  skipped: number;
}

const byKey = (a: Wait, b: Wait): number => {
  const sa = waitSlot(a.connectionId);
  const sb = waitSlot(b.connectionId);
  if (sa !== sb) return sa < sb ? -1 : 1;
  return a.connectionId < b.connectionId ? -1 : a.connectionId > b.connectionId ? 1 : 0;
};

/** `xs` in `n` contiguous parts whose sizes differ by at most one, larger parts first. */
function split<T>(xs: readonly T[], n: number): T[][] {
  const parts: T[][] = [];
  let start = 0;
  for (let i = 0; i < n; i++) {
    const size = Math.floor(xs.length / n) + (i < xs.length % n ? 1 : 0);
    parts.push(xs.slice(start, start + size));
    start += size;
  }
  return parts;
}

/**
 * What a push on a queue wakes, given the queue's waits: per group, k branches headed by its
 * longest-waiting waits, each holding a contiguous range of the rest; at most `budget`
 * branches in all.
 */
export function planPush<W extends Wait>(waits: readonly W[], now: number, budget: number): PushPlan<W> {
  const stale: W[] = [];
  const groups = new Map<string, W[]>();
  for (const w of waits) {
    if (now >= w.until) stale.push(w);
    else {
      const g = groups.get(groupOf(w));
      if (g) g.push(w);
      else groups.set(groupOf(w), [w]);
    }
  }
  const byAge = (a: W, b: W): number => a.until - b.until || byKey(a, b);
  const ordered = [...groups.entries()].map(([group, ws]) => ({ group, ws: ws.sort(byAge) }));
  ordered.sort((a, b) => byAge(a.ws[0] as W, b.ws[0] as W));
  const branches: Branch<W>[] = [];
  let skipped = 0;
  for (const { group, ws } of ordered) {
    const want = Math.min(WAKES_PER_GROUP, ws.length);
    const room = Math.max(0, Math.min(want, budget - branches.length));
    skipped += want - room;
    if (room === 0) continue;
    const heads = ws.slice(0, room);
    const rest = split(ws.slice(room).sort(byKey), room);
    for (let i = 0; i < room; i++) branches.push({ group, members: [heads[i] as W, ...(rest[i] as W[])] });
  }
  return { branches, stale, skipped };
}

/**
 * What a relay from `relayer` with `range` wakes, given the waits read in that range of `group`:
 * the live ones registered by the push, in k contiguous branches.
 */
export function planRelay<W extends Wait>(
  waits: readonly W[],
  now: number,
  group: string,
  range: RelayRange,
  relayer: string,
): Branch<W>[] {
  const members = waits
    .filter((w) => {
      const slot = waitSlot(w.connectionId);
      return (
        groupOf(w) === group &&
        now < w.until &&
        registeredAt(w) <= range.at &&
        w.connectionId !== relayer &&
        slot >= range.from &&
        slot <= range.to
      );
    })
    .sort(byKey);
  return split(members, WAKES_PER_GROUP)
    .filter((part) => part.length > 0)
    .map((part) => ({ group, members: part }));
}

/**
 * The token for the member at `index` of a branch, woken by a push at `at`: the members after
 * it, which it relays to (undefined: none are left).
 */
export function relayTokenOf(members: readonly Wait[], index: number, at: number): string | undefined {
  const first = members[index + 1];
  const last = members[members.length - 1];
  if (!first || !last) return undefined;
  return encodeRelay({ at, from: waitSlot(first.connectionId), to: waitSlot(last.connectionId) });
}

/**
 * How many waves wake all `n` waiters of a group while each woken consumer finds work and
 * relays: the push's, then one per relay generation. The stated bound of the fan-out.
 *
 * @example
 * ```ts
 * wakeWaves(2_000); // 10
 * ```
 */
export function wakeWaves(n: number, k = WAKES_PER_GROUP): number {
  if (n <= 0) return 0;
  let waves = 1;
  // The push wakes k and hands each an equal share of the rest; a relay splits its share in k
  // parts and wakes the first of each, which holds the rest of its part.
  let share = Math.ceil(Math.max(0, n - k) / k);
  while (share > 0) {
    waves++;
    share = Math.ceil(share / k) - 1;
  }
  return waves;
}
