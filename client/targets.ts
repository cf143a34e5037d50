/**
 * Targets (docs/TARGETS.md): consumer groups Sluice delivers to an HTTPS endpoint (or, later, a
 * Lambda function) instead of a consumer you run. Set, read, list, delete, pause and resume
 * them, and rotate an HTTPS target's signing secret. The local server serves these routes for
 * now; no AWS deployment does yet.
 */
import type { Transport } from './http.js';
import { seg } from './http.js';
import type {
  DeleteTargetAnswer,
  GetTargetAnswer,
  ListTargetsAnswer,
  PauseTargetAnswer,
  PutTargetAnswer,
  ResumeTargetAnswer,
  RotateTargetSecretAnswer,
  TargetSettingsInput,
} from './wire.js';

const path = (queue: string, group: string, action?: string): string =>
  `/api/v1/targets/${seg(queue)}/${seg(group)}${action ? `/${action}` : ''}`;

/**
 * A deployment's targets: `sluice.targets`.
 *
 * @example
 * ```ts
 * const t = await sluice.targets.set('orders', 'billing', {
 *   endpoint: { kind: 'https', url: 'https://billing.example.com/sluice' },
 *   mode: 'leases',
 *   batchSize: 100,
 *   functionResponseTypes: ['ReportBatchItemFailures'],
 * });
 * if ('signingSecret' in t) await saveSecret(t.signingSecret); // shown this once
 * for (const x of await sluice.targets.list()) console.log(x.queue, x.group, x.state, x.stats.errors);
 * ```
 */
export class Targets {
  constructor(private readonly http: Transport) {}

  /**
   * Sets a consumer group's target (`PUT /api/v1/targets/{queue}/{group}`): creates it, or
   * replaces its settings whole (settings not given go back to their defaults; its state and
   * signing secret stay). An HTTPS target's first answer carries `signingSecret`, once: keep it
   * to check each request's `sluice-signature` (`verifyTargetSignature`). Retried as
   * idempotent (it replaces); should the answer that carried the first secret be lost, the retry
   * answers without one: call {@link rotateSecret} for a secret you hold.
   *
   * @example
   * ```ts
   * const t = await sluice.targets.set('orders', 'billing', {
   *   endpoint: { kind: 'https', url: 'https://billing.example.com/sluice' },
   *   mode: 'claims',
   *   maximumConcurrency: 10,
   * });
   * console.log('signingSecret' in t ? t.signingSecret : 'the secret is unchanged');
   * ```
   */
  async set(
    queue: string,
    group: string,
    settings: TargetSettingsInput,
    opts: { signal?: AbortSignal } = {},
  ): Promise<PutTargetAnswer> {
    return (await this.http.json<PutTargetAnswer>({
      method: 'PUT',
      path: path(queue, group),
      body: settings,
      retry: 'idempotent',
      signal: opts.signal,
    })) as PutTargetAnswer;
  }

  /**
   * One target: its settings (every default filled in), state (`active`, `paused`, `failing`),
   * last error and the serving process's counts; never its secret. Throws `not_found` when the
   * group has no target.
   *
   * @example
   * ```ts
   * const t = await sluice.targets.get('orders', 'billing');
   * if (t.state === 'failing') console.warn(t.lastError?.message);
   * ```
   */
  async get(queue: string, group: string, opts: { signal?: AbortSignal } = {}): Promise<GetTargetAnswer> {
    return (await this.http.json<GetTargetAnswer>({
      method: 'GET',
      path: path(queue, group),
      retry: 'idempotent',
      signal: opts.signal,
    })) as GetTargetAnswer;
  }

  /**
   * Every target on a queue the caller may consume (`GET /api/v1/targets`).
   *
   * @example
   * ```ts
   * const failing = (await sluice.targets.list()).filter((t) => t.state === 'failing');
   * ```
   */
  async list(opts: { signal?: AbortSignal } = {}): Promise<ListTargetsAnswer['targets']> {
    const r = await this.http.json<ListTargetsAnswer>({
      method: 'GET',
      path: '/api/v1/targets',
      retry: 'idempotent',
      signal: opts.signal,
    });
    return r?.targets ?? [];
  }

  /**
   * Removes a target: deliveries stop (a batch in flight settles); the group, its cursors and
   * its dead letters stay. Throws `not_found` when there is none (a retry after a lost answer
   * included).
   *
   * @example
   * ```ts
   * await sluice.targets.delete('orders', 'billing'); // { deleted: true }
   * ```
   */
  async delete(queue: string, group: string, opts: { signal?: AbortSignal } = {}): Promise<DeleteTargetAnswer> {
    return (await this.http.json<DeleteTargetAnswer>({
      method: 'DELETE',
      path: path(queue, group),
      retry: 'idempotent',
      signal: opts.signal,
    })) as DeleteTargetAnswer;
  }

  /**
   * Pauses a target: no new batch starts until {@link resume}; records wait in the log. Answers
   * the target as it now is.
   *
   * @example
   * ```ts
   * await sluice.targets.pause('orders', 'billing'); // state: 'paused'
   * ```
   */
  async pause(queue: string, group: string, opts: { signal?: AbortSignal } = {}): Promise<PauseTargetAnswer> {
    return (await this.http.json<PauseTargetAnswer>({
      method: 'POST',
      path: path(queue, group, 'pause'),
      retry: 'idempotent',
      signal: opts.signal,
    })) as PauseTargetAnswer;
  }

  /**
   * Resumes a paused target. Answers the target as it now is.
   *
   * @example
   * ```ts
   * await sluice.targets.resume('orders', 'billing'); // state: 'active'
   * ```
   */
  async resume(queue: string, group: string, opts: { signal?: AbortSignal } = {}): Promise<ResumeTargetAnswer> {
    return (await this.http.json<ResumeTargetAnswer>({
      method: 'POST',
      path: path(queue, group, 'resume'),
      retry: 'idempotent',
      signal: opts.signal,
    })) as ResumeTargetAnswer;
  }

  /**
   * Makes a new signing secret for an HTTPS target (shown this once); requests carry a
   * signature by the previous one too until `previousValidUntil` (24 hours). Not retried on
   * 5xx or a timeout (`unsafe`): a repeat would make another secret and drop the one the lost
   * answer carried. Retried only when the server certainly did nothing (429, a connection
   * never made).
   *
   * @example
   * ```ts
   * const { signingSecret, previousValidUntil } = await sluice.targets.rotateSecret('orders', 'billing');
   * // accept both secrets until previousValidUntil: verifyTargetSignature({ header, body, secret: [next, previous] })
   * ```
   */
  async rotateSecret(
    queue: string,
    group: string,
    opts: { signal?: AbortSignal } = {},
  ): Promise<RotateTargetSecretAnswer> {
    return (await this.http.json<RotateTargetSecretAnswer>({
      method: 'POST',
      path: path(queue, group, 'rotate-secret'),
      retry: 'unsafe',
      signal: opts.signal,
    })) as RotateTargetSecretAnswer;
  }
}
