/**
 * Where targets live and how their items are encoded (table `meta`, docs/STORAGE.md "Keys"):
 * one item per (queue, group) under one partition key, so the dispatcher lists every target
 * with one query. Names cannot hold `/` (contract/names.ts), so `<queue>/<group>` is unambiguous.
 *
 * @example
 * ```ts
 * const item = await storage.items.get('meta', targetKeys.target('orders', 'billing'));
 * const t = item ? decodeTarget(item) : undefined;
 * ```
 */
import type { TargetSettings } from '../../../contract/targets.js';
import type { Item, ItemKey, Json } from '../../storage/port.js';

/** A signing secret of an HTTPS target, sealed with the payload key (base64 of the envelope). */
export interface StoredSecret {
  sealed: string;
  createdAt: number;
  /** Epoch ms after which it no longer signs (the previous secret, during a rotation); null: current. */
  validUntil: number | null;
}

export interface TargetRecord {
  queue: string;
  group: string;
  settings: TargetSettings;
  paused: boolean;
  /** Newest first; empty for Lambda targets. */
  secrets: StoredSecret[];
  /** The last delivery that failed or did not run, cleared by the next that succeeds. */
  lastError: { message: string; at: number } | null;
  createdAt: number;
  updatedAt: number;
}

const PK = 'TARGETS';

export const targetKeys = {
  target: (queue: string, group: string): ItemKey => ({ pk: PK, sk: `${queue}/${group}` }),
  /** Every target: one partition, sorted by queue then group. */
  all: PK,
};

export const decodeTarget = (item: Item): TargetRecord => item.attrs as unknown as TargetRecord;

export const targetAttrs = (t: TargetRecord): Record<string, Json> => t as unknown as Record<string, Json>;
