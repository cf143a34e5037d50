/**
 * The local server's target dispatcher: the same delivery code the AWS dispatcher will run,
 * with HTTPS (and, on this machine, http://loopback) endpoints and the handler modules of its
 * `--target` flags. It runs on the server's event loop, but only waits there: invocations are
 * network calls or messages to worker threads, and nothing in it blocks.
 *
 * A module's invoker is made at start, before the server listens ({@link openModuleTargets}):
 * making one bundles the module and imports it in a first worker, which is async and can fail
 * (no such file, no `handler` export), and a bad `--target` must stop the start rather than
 * fail each delivery later. The dispatcher is handed each invoker once and closes it when it
 * stops.
 *
 * @example
 * ```ts
 * const modules = await openModuleTargets(flagTargets);
 * const targets = startTargetDispatcher(svc, modules);
 * await targets.stop(); // on shutdown, before storage closes; closes the modules' workers too
 * ```
 */
import type { Invoker } from '../core/targets/invoke-result.js';
import type { Services } from '../service/runtime.js';
import { TargetDispatcher } from '../service/targets/dispatcher.js';
import { httpsInvoker } from '../service/targets/https-invoker.js';
import type { FlagTarget } from '../service/targets/target-service.js';
import { VERSION } from '../public/version.js';

/** The invokers of the `--target` handler modules, by `<queue>/<group>`, each handed to the dispatcher once. */
export interface ModuleTargets {
  /** The invoker made for the target on this group; it is the dispatcher's (to close) from then on. */
  take(queue: string, group: string): Invoker;
  /** Closes those not yet taken (a start that failed after they were made): their workers, their bundles. */
  close(): Promise<void>;
}

const NO_MODULES: ModuleTargets = {
  take: (queue, group) => {
    throw new Error(`no handler module was started for consumer group ${group} on queue ${queue}`);
  },
  close: () => Promise.resolve(),
};

/**
 * Makes the invoker of every flag target: its module bundled and imported in a first worker,
 * up to `maximumConcurrency` workers. Rejects with the first that could not be made, in one
 * line naming its `--target` (the others are closed first).
 *
 * @example
 * ```ts
 * await openModuleTargets([{ queue: 'orders', group: 'billing', settings }]);
 * // rejects: --target orders/billing: handler module /work/handler.ts exports no handler function (its exports: main)
 * ```
 */
export async function openModuleTargets(targets: readonly FlagTarget[]): Promise<ModuleTargets> {
  if (targets.length === 0) return NO_MODULES;
  // Loaded only for a server given --target: esbuild and the worker pool are no other server's cost.
  const { moduleInvoker } = await import('./handler-module.js');
  const made = await Promise.allSettled(
    targets.map(async (t) => {
      const e = t.settings.endpoint;
      if (e.kind !== 'module') throw new Error(`${t.queue}/${t.group} is not a module target`);
      // Its output goes to the server's stderr as `[target <file>] <line>` (the module's
      // default): told apart from the server's JSON log lines, and never mixed into them.
      return moduleInvoker({ path: e.path, concurrency: t.settings.maximumConcurrency });
    }),
  );
  const invokers = new Map<string, Invoker>();
  made.forEach((r, i) => {
    if (r.status === 'fulfilled') invokers.set(`${targets[i]!.queue}/${targets[i]!.group}`, r.value);
  });
  const modules: ModuleTargets = {
    take: (queue, group) => {
      const invoker = invokers.get(`${queue}/${group}`);
      if (!invoker) return NO_MODULES.take(queue, group);
      // Once: the dispatcher closes what it was given when it halts the target's runner.
      invokers.delete(`${queue}/${group}`);
      return invoker;
    },
    close: async () => {
      await Promise.all([...invokers.values()].map((i) => i.close?.() ?? Promise.resolve()));
      invokers.clear();
    },
  };
  const failed = made.findIndex((r) => r.status === 'rejected');
  if (failed >= 0) {
    await modules.close();
    const t = targets[failed]!;
    const why = (made[failed] as PromiseRejectedResult).reason as Error;
    // esbuild's errors come one per line: one line here, as every reason the server did not start.
    throw new Error(`--target ${t.queue}/${t.group}: ${why.message.replace(/:\n/g, ': ').replace(/\n/g, '; ')}`);
  }
  return modules;
}

export function startTargetDispatcher(
  svc: Pick<
    Services,
    'targets' | 'leasePops' | 'leaseAcks' | 'claims' | 'queues' | 'notifier' | 'clock' | 'telemetry' | 'targetStats'
  >,
  modules: ModuleTargets = NO_MODULES,
): TargetDispatcher {
  const d = new TargetDispatcher({
    targets: svc.targets,
    leasePops: svc.leasePops,
    leaseAcks: svc.leaseAcks,
    claims: svc.claims,
    queues: svc.queues,
    notifier: svc.notifier,
    clock: svc.clock,
    telemetry: svc.telemetry,
    stats: svc.targetStats,
    invokerFor: (t, secrets) => {
      const e = t.settings.endpoint;
      if (e.kind === 'module') return modules.take(t.queue, t.group);
      if (e.kind !== 'https') throw new Error(`the local server cannot deliver to a ${e.kind} target`);
      return httpsInvoker({
        url: e.url,
        secrets,
        allowLoopback: true,
        userAgent: `sluice/${VERSION}`,
        maxSockets: t.settings.maximumConcurrency,
      });
    },
  });
  d.start();
  return d;
}
