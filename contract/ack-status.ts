/**
 * Ack statuses, as `/ack`, `/ack/batch`, ack-and-pop and transactions take them: `success` is
 * Queen's alias of `completed`, and an absent status means `completed`.
 *
 * @example
 * ```ts
 * parseAckStatus('success'); // 'completed'
 * parseAckStatus('done');    // undefined
 * ```
 */

/** Ack statuses, as the server reads them. */
export type AckStatus = 'completed' | 'failed' | 'retry' | 'dlq';

/** Parses an ack status (default `completed`); undefined when it is not one. */
export function parseAckStatus(raw: unknown): AckStatus | undefined {
  if (raw === undefined || raw === null) return 'completed';
  if (raw === 'completed' || raw === 'success') return 'completed';
  if (raw === 'failed' || raw === 'retry' || raw === 'dlq') return raw;
  return undefined;
}
