/**
 * The event a target receives, as JSON text: built once per delivery with each payload spliced
 * in as stored (no parse, no re-encoding), and each record's byte length known before the cut,
 * so an event never passes the invoke payload limit (contract/targets.ts, TargetEvent).
 *
 * @example
 * ```ts
 * const recs = messages.map((m) => recordText(m, 1, 'orders'));
 * const json = eventText({ queue: 'orders', group: 'billing', mode: 'leases', batchId }, recs.map((r) => r.text));
 * ```
 */
import { Buffer } from 'node:buffer';
import { TARGET_EVENT_VERSION } from '../../../contract/targets.js';
import { jsonNumber, jsonString } from '../../codec/json-writer.js';
import { readOutcome, type Invoker, type Outcome } from '../../core/targets/index.js';
import type { TargetCounts } from './target-stats.js';
import type { TargetRecord } from './target-store.js';

export interface EventRecordSource {
  offset: number;
  id: string;
  transactionId: string;
  createdAt: number;
  partitionId: string;
  partition: string;
  /** The payload's JSON text, as stored. */
  payload: Uint8Array;
}

/** One record's JSON text and its UTF-8 length. */
export interface RecordText {
  text: string;
  bytes: number;
}

export function recordText(m: EventRecordSource, attempt: number, queue: string): RecordText {
  const text =
    `{"queue":${jsonString(queue)},"partition":${jsonString(m.partition)},"partitionId":${jsonString(m.partitionId)}` +
    `,"offset":${jsonNumber(m.offset)},"id":${jsonString(m.id)},"transactionId":${jsonString(m.transactionId)}` +
    `,"payload":${Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength).toString('utf8')}` +
    `,"createdAt":"${new Date(m.createdAt).toISOString()}","attempt":${jsonNumber(attempt)}}`;
  return { text, bytes: Buffer.byteLength(text) };
}

export interface EventHead {
  queue: string;
  group: string;
  mode: 'leases' | 'claims';
  batchId: string;
}

/** The event's envelope with no records: its byte length is what the records may add to. */
export const envelopeText = (h: EventHead): string =>
  `{"version":"${TARGET_EVENT_VERSION}","queue":${jsonString(h.queue)},"group":${jsonString(h.group)}` +
  `,"mode":"${h.mode}","batchId":${jsonString(h.batchId)},"records":[]}`;

export const eventText = (h: EventHead, records: readonly string[]): string =>
  `${envelopeText(h).slice(0, -3)}[${records.join(',')}]}`;

/**
 * Sends one event of these records (their texts, their transactionIds) to the target, counts
 * what happened, and reads the answer: what both delivery modes do for every call, bisect halves
 * included.
 *
 * @example
 * ```ts
 * const outcome = await sendEvent(target, head, recs.map((r) => r.text), ids);
 * ```
 */
export async function sendEvent(
  t: { record: TargetRecord; invoker: Invoker; stats: TargetCounts },
  head: EventHead,
  texts: readonly string[],
  ids: readonly string[],
): Promise<Outcome> {
  const s = t.record.settings;
  t.stats.invocations++;
  const result = await t.invoker.invoke(eventText(head, texts), { timeoutMs: s.timeoutSeconds * 1000 });
  if (result.kind === 'throttled') t.stats.throttles++;
  else if (result.kind !== 'answered') t.stats.errors++;
  return readOutcome(result, ids, s.functionResponseTypes.includes('ReportBatchItemFailures'));
}
