import { claimsBench } from './claims.js';
import { costBench } from './cost.js';
import { leasesBench } from './leases.js';
import { limitsBench } from './limits.js';
import { namespaceBench } from './namespace.js';
import { pushBench } from './push.js';
import { smallBench } from './small.js';
import { sourceMapsBench } from './source-maps.js';
import { targetsBench } from './targets.js';
import { wakeBench } from './wake.js';

/** A benchmark section: returns Markdown (a heading, the command, a table). */
export interface BenchSection {
  name: string;
  /** The document the section is written into (default docs/BENCHMARKS.md). */
  doc?: string;
  run(): Promise<string>;
}

export const SECTIONS: BenchSection[] = [
  { name: 'push', run: pushBench },
  { name: 'small', run: smallBench },
  { name: 'claims', run: claimsBench },
  { name: 'leases', run: leasesBench },
  { name: 'limits', run: limitsBench },
  { name: 'cost', doc: 'docs/DEPLOYING.md', run: costBench },
  { name: 'wake', run: wakeBench },
  { name: 'namespace', run: namespaceBench },
  { name: 'source-maps', run: sourceMapsBench },
  { name: 'targets', run: targetsBench },
];
