/**
 * The admin reads (docs/QUEEN-COMPAT.md): queues and partitions with their counters, consumer
 * groups of both designs with their lag, dead letters across queues, message browsing, and
 * this process's activity. Read-only over items the queue keeps anyway: they add nothing to
 * the push or consume paths.
 */
import type { Storage } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import type { DlqService } from '../leases/dlq-service.js';
import type { LeaseGroupAdmin } from '../leases/lease-groups.js';
import type { QueueDirectory } from '../log/queue-directory.js';
import type { SegmentReader } from '../log/segments.js';
import { DeadLetterOverview } from './dead-letters.js';
import { GroupLag } from './group-lag.js';
import { MessageBrowser } from './message-browser.js';
import { QueueStats } from './queue-stats.js';

export interface AdminReads {
  stats: QueueStats;
  groupLag: GroupLag;
  deadLetters: DeadLetterOverview;
  browser: MessageBrowser;
}

export interface AdminReadsDeps {
  storage: Storage;
  queues: QueueDirectory;
  segments: SegmentReader;
  groups: GroupRegistry;
  leaseGroups: LeaseGroupAdmin;
  dlq: DlqService;
  cipher?: PayloadCipherLike | undefined;
  clock: () => number;
}

/**
 * Builds the admin reads over the services they read through.
 *
 * @example
 * ```ts
 * const admin = buildAdminReads({ storage, queues, segments, groups, leaseGroups, dlq, clock });
 * ```
 */
export function buildAdminReads(d: AdminReadsDeps): AdminReads {
  const deadLetters = new DeadLetterOverview({ storage: d.storage, queues: d.queues, dlq: d.dlq });
  const stats = new QueueStats({ storage: d.storage, queues: d.queues, groups: d.groups, deadLetters, clock: d.clock });
  return {
    stats,
    deadLetters,
    groupLag: new GroupLag(d),
    browser: new MessageBrowser({ storage: d.storage, segments: d.segments, stats, cipher: d.cipher }),
  };
}
