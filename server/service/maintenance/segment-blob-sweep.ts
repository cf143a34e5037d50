import type { SluiceConfig } from '../../config.js';
import type { Storage } from '../../storage/port.js';
import { SEGMENT_BLOB_PREFIX, logKeys, parseSegmentBlobKey } from '../log/log-store.js';
import { markerOrAbort, sweepBlobPage, type SweepReport } from './blob-sweep.js';

export interface SegmentBlobSweepDeps {
  storage: Storage;
  config: Pick<SluiceConfig, 'sweepGraceMs'>;
  clock: () => number;
}

/**
 * Removes segment blobs that no commit references: a push that crashed (or was aborted)
 * between writing its blob and committing (docs/STORAGE.md, "Crashes between blob and
 * commit"). A blob is only judged once older than the grace period; it is deleted only after
 * its push's marker says `aborted`, which this sweep writes itself (put-if-absent) when there
 * is none, so a late commit can never win after the blob is gone.
 *
 * @example
 * ```ts
 * const report = await sweep.sweepOrphanBlobs({ limit: 1000 }); // resumes where the last page ended
 * ```
 */
export class SegmentBlobSweep {
  constructor(private readonly deps: SegmentBlobSweepDeps) {}

  /** One page of the sweep, resuming where the previous run stopped. */
  async sweepOrphanBlobs(opts: { limit?: number } = {}): Promise<SweepReport> {
    const { storage } = this.deps;
    const now = this.deps.clock();
    return sweepBlobPage(storage, {
      prefix: SEGMENT_BLOB_PREFIX,
      cursor: logKeys.sweepCursor(),
      now,
      graceMs: this.deps.config.sweepGraceMs,
      limit: opts.limit ?? 1000,
      orphaned: async (key) => {
        const ref = parseSegmentBlobKey(key);
        if (!ref) return false;
        const marker = await markerOrAbort(storage, 'log', logKeys.marker(ref.partitionId, ref.pushId), now, {
          by: 'sweeper',
        });
        return marker?.attrs.state === 'aborted';
      },
    });
  }
}
