/**
 * The local server's target dispatcher: the same delivery code the AWS dispatcher will run,
 * with HTTPS (and, on this machine, http://loopback) endpoints. It runs on the server's event
 * loop, but only waits there: invocations are network calls, and nothing in it blocks.
 *
 * @example
 * ```ts
 * const targets = startTargetDispatcher(svc);
 * await targets.stop(); // on shutdown, before storage closes
 * ```
 */
import type { Services } from '../service/runtime.js';
import { TargetDispatcher } from '../service/targets/dispatcher.js';
import { httpsInvoker } from '../service/targets/https-invoker.js';
import { VERSION } from '../public/version.js';

export function startTargetDispatcher(
  svc: Pick<
    Services,
    'targets' | 'leasePops' | 'leaseAcks' | 'claims' | 'queues' | 'notifier' | 'clock' | 'telemetry' | 'targetStats'
  >,
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
