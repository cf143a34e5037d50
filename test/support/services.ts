import { loadConfig, type SluiceConfig } from '../../server/config.js';
import { buildServices, type BuildOptions, type Services } from '../../server/service/runtime.js';
import type { Storage } from '../../server/storage/port.js';

/**
 * A clock tests move by hand: `now` is explicit, nothing sleeps. It starts at the real time:
 * DynamoDB Local deletes items whose TTL has passed by the real clock (so items this clock
 * dates must not look expired to it), and blob modification times are real.
 */
export class TestClock {
  constructor(public t: number = Date.now()) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** Services over a test storage with a hand-driven clock and test-friendly settings. */
export function testServices(
  storage: Storage,
  opts: { clock?: TestClock; config?: Partial<SluiceConfig>; build?: Omit<BuildOptions, 'clock'> } = {},
): Services & { testClock: TestClock } {
  const clock = opts.clock ?? new TestClock();
  const config = { ...loadConfig({}), queueCacheMs: 0, ...opts.config };
  return { ...buildServices(storage, config, { ...opts.build, clock: clock.now }), testClock: clock };
}

export const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
export const text = (b: Uint8Array): string => Buffer.from(b).toString('utf8');
