/**
 * Targets as callers manage them: set (create or replace), read, list, delete, pause, resume,
 * rotate an HTTPS target's signing secret. Every change is validated completely before its one
 * guarded write; a lost race answers 409 rather than overwriting a change the caller never saw.
 *
 * Signing secrets are sealed with the payload key (the key file locally, KMS on AWS) and never
 * returned by a read: the answer that makes one shows it once. A rotation keeps the previous
 * secret signing for {@link ROTATION_GRACE_MS}, so receivers can move to the new one.
 *
 * Flag targets (the local server's `--target`, a handler module) are the process's own: read and
 * listed beside the stored ones, delivered by the same dispatcher, never written. Only a restart
 * with other flags changes one, so every route that would change it answers 409.
 *
 * @example
 * ```ts
 * const { view, signingSecret } = await targets.set('orders', 'billing', settings);
 * await targets.setPaused('orders', 'billing', true);
 * ```
 */
import { TARGET_LIMITS, type TargetSettings } from '../../../contract/targets.js';
import { conflict, invalid, notFound, SluiceError } from '../../core/errors.js';
import { ConditionFailedError, type Storage } from '../../storage/port.js';
import type { PayloadCipherLike } from '../encryption.js';
import type { GroupRegistry } from '../groups/group-registry.js';
import { newSigningSecret } from './signing.js';
import { decodeTarget, targetAttrs, targetKeys, type TargetRecord } from './target-store.js';

/** How long a rotated-out secret keeps signing: a day for receivers to deploy the new one. */
export const ROTATION_GRACE_MS = 24 * 3_600_000;

export interface TargetServiceDeps {
  storage: Storage;
  groups: GroupRegistry;
  /** Seals signing secrets; without it HTTPS targets are refused (their secret would be stored in the clear). */
  cipher: PayloadCipherLike | undefined;
  clock: () => number;
  /** Whether a dispatcher delivers targets in this deployment; without one a target would never be delivered. */
  dispatcher: boolean;
  /** Whether this deployment can invoke Lambda functions (the AWS stack) — the local server cannot. */
  lambdaTargets: boolean;
  /** The local server only: http:// endpoints on loopback, for developing a receiver on this machine. */
  loopbackTargets: boolean;
  /** The targets this process was started with (the local server's `--target`); none by default. */
  flagTargets?: readonly FlagTarget[] | undefined;
}

/** A target the process was started with (the local server's `--target`): in memory only, never stored. */
export interface FlagTarget {
  queue: string;
  group: string;
  settings: TargetSettings;
}

/** The answer that made or rotated a signing secret carries it, once. */
export interface SetResult {
  target: TargetRecord;
  created: boolean;
  signingSecret?: string | undefined;
}

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Names in code-unit order (the target list's order: by queue, then group). */
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const keyOf = (queue: string, group: string): string => `${queue}/${group}`;

export class TargetService {
  private readonly listeners = new Set<() => void>();
  /**
   * The flag targets by `<queue>/<group>`. Their `updatedAt` never changes (the dispatcher would
   * restart a changed target's runner, closing the invoker made for it at start); a new
   * `lastError` replaces the record, as a write would.
   */
  private readonly flags = new Map<string, TargetRecord>();

  constructor(private readonly deps: TargetServiceDeps) {
    const now = deps.clock();
    for (const { queue, group, settings } of deps.flagTargets ?? [])
      this.flags.set(keyOf(queue, group), {
        queue,
        group,
        settings,
        paused: false,
        secrets: [],
        lastError: null,
        createdAt: now,
        updatedAt: now,
      });
  }

  /**
   * Calls `fn` after each change a caller makes here (set, delete, pause, resume, rotate), so this
   * process's dispatcher acts on it at once; other processes see it at their next read.
   * Returns the unsubscribe.
   */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  async get(queue: string, group: string): Promise<TargetRecord | undefined> {
    const flag = this.flags.get(keyOf(queue, group));
    if (flag) return flag;
    const item = await this.deps.storage.items.get('meta', targetKeys.target(queue, group));
    return item ? decodeTarget(item) : undefined;
  }

  /** A target, or 404. */
  async require(queue: string, group: string): Promise<TargetRecord> {
    const t = await this.get(queue, group);
    if (!t) throw notFound(`no target for consumer group ${group} on queue ${queue}`);
    return t;
  }

  /**
   * Every target, by queue then group. A flag target hides one stored on its group (refused at
   * start, but another process over the same storage may PUT one later).
   */
  async list(): Promise<TargetRecord[]> {
    const out: TargetRecord[] = [...this.flags.values()];
    let after: string | undefined;
    do {
      const page = await this.deps.storage.items.query('meta', targetKeys.all, { after });
      out.push(...page.items.map(decodeTarget).filter((t) => !this.flags.has(keyOf(t.queue, t.group))));
      after = page.next;
    } while (after !== undefined);
    if (this.flags.size === 0) return out;
    return out.sort((a, b) => (a.queue === b.queue ? cmp(a.group, b.group) : cmp(a.queue, b.queue)));
  }

  /**
   * Refuses flag targets that storage contradicts: a target stored on the same group (two
   * settings for one group; the flag's would hide it) or a group that consumes by the other
   * mode. The local server runs it once, at start.
   */
  async checkFlagTargets(): Promise<void> {
    for (const t of this.flags.values()) {
      if (await this.deps.storage.items.get('meta', targetKeys.target(t.queue, t.group)))
        throw conflict(
          `--target ${keyOf(t.queue, t.group)}: consumer group ${t.group} on queue ${t.queue} already has a target set through the API; ` +
            `start the server without this --target and DELETE /api/v1/targets/${keyOf(t.queue, t.group)}, or give --target another group`,
        );
      try {
        await this.checkMode(t.queue, t.group, t.settings.mode);
      } catch (e) {
        throw e instanceof SluiceError ? conflict(`--target ${keyOf(t.queue, t.group)}: ${e.message}`) : e;
      }
    }
  }

  /** Creates or replaces a target's settings (its state and secrets stay). */
  async set(queue: string, group: string, settings: TargetSettings): Promise<SetResult> {
    this.refuseFlag(queue, group);
    this.checkEndpoint(settings);
    await this.checkMode(queue, group, settings.mode);
    const key = targetKeys.target(queue, group);
    const item = await this.deps.storage.items.get('meta', key);
    const prev = item ? decodeTarget(item) : undefined;
    if (!prev && (await this.list()).length >= TARGET_LIMITS.perStack)
      throw invalid(`a deployment holds at most ${TARGET_LIMITS.perStack} targets; delete one first`, {
        limit: TARGET_LIMITS.perStack,
      });
    const now = this.deps.clock();
    let signingSecret: string | undefined;
    let secrets = prev?.secrets ?? [];
    if (settings.endpoint.kind === 'https' && secrets.length === 0) {
      signingSecret = newSigningSecret();
      secrets = [await this.seal(signingSecret, now)];
    }
    if (settings.endpoint.kind === 'lambda') secrets = [];
    const next: TargetRecord = {
      queue,
      group,
      settings,
      paused: prev?.paused ?? false,
      secrets,
      lastError: prev?.lastError ?? null,
      createdAt: prev?.createdAt ?? now,
      updatedAt: now,
    };
    await this.write(next, item?.ver);
    this.changed();
    return { target: next, created: !prev, signingSecret };
  }

  async delete(queue: string, group: string): Promise<void> {
    this.refuseFlag(queue, group);
    const key = targetKeys.target(queue, group);
    const item = await this.deps.storage.items.get('meta', key);
    if (!item) throw notFound(`no target for consumer group ${group} on queue ${queue}`);
    await this.guarded(() => this.deps.storage.items.delete('meta', key, { kind: 'version', ver: item.ver }));
    this.changed();
  }

  async setPaused(queue: string, group: string, paused: boolean): Promise<TargetRecord> {
    this.refuseFlag(queue, group);
    const t = await this.update(queue, group, (cur) => ({ ...cur, paused }));
    this.changed();
    return t;
  }

  /** A new signing secret; the previous one signs too until the grace ends. */
  async rotateSecret(queue: string, group: string): Promise<{ signingSecret: string; previousValidUntil: number }> {
    this.refuseFlag(queue, group);
    const now = this.deps.clock();
    const signingSecret = newSigningSecret();
    const sealed = await this.seal(signingSecret, now);
    const previousValidUntil = now + ROTATION_GRACE_MS;
    await this.update(queue, group, (t) => {
      if (t.settings.endpoint.kind !== 'https') throw invalid('only an HTTPS target has a signing secret');
      const current = t.secrets.find((s) => s.validUntil === null);
      return {
        ...t,
        secrets: [sealed, ...(current ? [{ ...current, validUntil: previousValidUntil }] : [])],
      };
    });
    this.changed();
    return { signingSecret, previousValidUntil };
  }

  /** The secrets that sign a request at `now`, newest first, opened. */
  async signingSecrets(t: TargetRecord, now: number): Promise<string[]> {
    const cipher = this.deps.cipher;
    if (!cipher) return [];
    const live = t.secrets.filter((s) => s.validUntil === null || s.validUntil > now);
    return Promise.all(
      live.map(async (s) => Buffer.from(await cipher.open(Buffer.from(s.sealed, 'base64'))).toString('utf8')),
    );
  }

  /**
   * Records how the last delivery went: an error, or null once one succeeds. Writes only when
   * that changes (a failing target does not write per attempt).
   */
  async noteOutcome(queue: string, group: string, error: string | null): Promise<void> {
    const t = await this.get(queue, group);
    if (!t || (error === null) === (t.lastError === null)) return;
    const lastError = error === null ? null : { message: error.slice(0, 1000), at: this.deps.clock() };
    const key = keyOf(queue, group);
    if (this.flags.has(key)) {
      this.flags.set(key, { ...t, lastError });
      return;
    }
    // Not a change of the target (updatedAt stays): the dispatcher keeps its runner.
    await this.update(queue, group, (cur) => ({ ...cur, lastError }), { touch: false }).catch((e: unknown) => {
      // Someone changed the target meanwhile: the next outcome notes it again.
      if (!(e instanceof Error && (e as { code?: string }).code === 'conflict')) throw e;
    });
  }

  /** A flag target changes only with the flags it was started with: 409 for any change through the API. */
  private refuseFlag(queue: string, group: string): void {
    if (this.flags.has(keyOf(queue, group)))
      throw conflict(
        `the target of consumer group ${group} on queue ${queue} was set by --target when the server started; ` +
          'it changes only with the flag (restart the server without it, or with other knobs)',
      );
  }

  /** A group that already consumes by the other mode keeps it (its cursors or claims would mean nothing to the other). */
  private async checkMode(queue: string, group: string, mode: TargetSettings['mode']): Promise<void> {
    const reg = await this.deps.groups.get(queue, group);
    const kind = mode === 'leases' ? 'lease' : 'claim';
    if (reg && reg.kind !== kind)
      throw conflict(
        `consumer group ${group} on queue ${queue} consumes by ${reg.kind === 'lease' ? 'partition leases' : 'record claims'}; ` +
          `give mode "${reg.kind === 'lease' ? 'leases' : 'claims'}" or use another group`,
      );
  }

  private checkEndpoint(s: TargetSettings): void {
    if (s.endpoint.kind === 'module')
      throw invalid(
        "a module endpoint is the local server's --target only (npm start -- --target <queue>/<group>=<file>); set an https endpoint here",
      );
    if (!this.deps.dispatcher)
      throw invalid(
        'this deployment delivers no targets yet: the local server does (npm start); on AWS the dispatcher is still to come (docs/TARGETS.md)',
      );
    const e = s.endpoint;
    if (e.kind === 'lambda' && !this.deps.lambdaTargets)
      throw invalid(
        'this server cannot invoke Lambda functions: set an https endpoint, or run a handler module with the local server (--target)',
      );
    if (e.kind === 'https') {
      if (!this.deps.cipher)
        throw invalid(
          'HTTPS targets need a payload key to keep their signing secret (SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)',
        );
      const url = new URL(e.url);
      if (url.protocol === 'http:' && !(this.deps.loopbackTargets && LOOPBACK_HOST.test(url.host.replace(/:\d+$/, ''))))
        throw invalid('an endpoint must be https:// (http:// only to a loopback address, on the local server)');
      if (url.username || url.password) throw invalid('an endpoint URL must not carry credentials');
    }
    if (s.maximumBatchingWindowInSeconds > 0 && s.timeoutSeconds + s.maximumBatchingWindowInSeconds > 900)
      throw invalid('timeoutSeconds + maximumBatchingWindowInSeconds must be at most 900');
  }

  private async seal(secret: string, now: number): Promise<{ sealed: string; createdAt: number; validUntil: null }> {
    const cipher = this.deps.cipher;
    if (!cipher) throw invalid('HTTPS targets need a payload key to keep their signing secret');
    const sealed = Buffer.from(await cipher.seal(Buffer.from(secret, 'utf8'))).toString('base64');
    return { sealed, createdAt: now, validUntil: null };
  }

  private async update(
    queue: string,
    group: string,
    f: (t: TargetRecord) => TargetRecord,
    opts: { touch: boolean } = { touch: true },
  ): Promise<TargetRecord> {
    const key = targetKeys.target(queue, group);
    const item = await this.deps.storage.items.get('meta', key);
    if (!item) throw notFound(`no target for consumer group ${group} on queue ${queue}`);
    const cur = decodeTarget(item);
    const next = { ...f(cur), updatedAt: opts.touch ? this.deps.clock() : cur.updatedAt };
    await this.write(next, item.ver);
    return next;
  }

  private async write(t: TargetRecord, ver: number | undefined): Promise<void> {
    const key = targetKeys.target(t.queue, t.group);
    await this.guarded(() =>
      this.deps.storage.items.put(
        'meta',
        { ...key, ver: (ver ?? 0) + 1, attrs: targetAttrs(t) },
        ver === undefined ? { kind: 'absent' } : { kind: 'version', ver },
      ),
    );
  }

  private async guarded(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (e) {
      if (e instanceof ConditionFailedError) throw conflict('the target changed meanwhile; read it and try again');
      throw e;
    }
  }
}
