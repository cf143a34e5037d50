import { claimsBench } from './claims.js';
import { leasesBench } from './leases.js';
import { limitsBench } from './limits.js';
import { pushBench } from './push.js';

/** A benchmark section: returns Markdown (a heading, the command, a table). */
export interface BenchSection {
  name: string;
  run(): Promise<string>;
}

export const SECTIONS: BenchSection[] = [
  { name: 'push', run: pushBench },
  { name: 'claims', run: claimsBench },
  { name: 'leases', run: leasesBench },
  { name: 'limits', run: limitsBench },
];
