// Targets in tests: a receiver on loopback that records every event (and whether it was
// signed), and a world of services, one target and its dispatcher over a test backend.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyTargetSignature } from '../../client/target-signature.js';
import { TargetSettings, type TargetSettingsInput } from '../../contract/targets.js';
import { loadConfig } from '../../server/config.js';
import { LocalKeyProvider } from '../../server/service/encryption.js';
import { buildServices, type Services } from '../../server/service/runtime.js';
import { TargetDispatcher } from '../../server/service/targets/dispatcher.js';
import { httpsInvoker } from '../../server/service/targets/https-invoker.js';
import type { TestBackend } from './backends.js';
import { json } from './services.js';

export interface Received {
  partition: string;
  offsets: number[];
  transactionIds: string[];
  attempts: number[];
  signed: boolean;
}

export type Reply = (
  event: { records: { transactionId: string; partition: string }[] },
  n: number,
) => {
  /** 0: never answer (the delivery stays in flight until the receiver closes). */
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
};

/** A receiver on loopback that records each event and answers as `reply` says. */
export async function receiver(secret: () => string | undefined, reply: Reply) {
  const received: Received[] = [];
  const inFlight = new Map<string, number>();
  let overlap = 0;
  let n = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const event = JSON.parse(body) as {
        records: { partition: string; offset: number; transactionId: string; attempt: number }[];
      };
      const partition = event.records[0]!.partition;
      if ((inFlight.get(partition) ?? 0) > 0) overlap++;
      inFlight.set(partition, (inFlight.get(partition) ?? 0) + 1);
      const s = secret();
      received.push({
        partition,
        offsets: event.records.map((r) => r.offset),
        transactionIds: event.records.map((r) => r.transactionId),
        attempts: event.records.map((r) => r.attempt),
        signed: s !== undefined && verifyTargetSignature({ header: req.headers['sluice-signature'], body, secret: s }),
      });
      const r = reply(event, n++);
      // A receiver that never answers: the delivery stays in flight (a dispatcher "dies" there).
      if (r.status === 0) return;
      // Answer a moment later, so batches of different partitions overlap if they can.
      setTimeout(() => {
        inFlight.set(partition, (inFlight.get(partition) ?? 1) - 1);
        res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
        res.end(r.body === undefined ? '' : JSON.stringify(r.body));
      }, 5);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    overlap: () => overlap,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
    /** Drops every connection: a delivery left hanging ends (as unreachable) on the dispatcher's side. */
    dropConnections: () => server.closeAllConnections(),
  };
}

/** Waits (polling every 25 ms) until `ok`, or throws naming `what`. */
export async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Services over a new storage of `backend`, a receiver answering as `reply`, a queue with one
 * target (group `billing`) pointing at it, and a dispatcher (not started). `cleanups` gets what
 * to undo, last first.
 */
export async function targetWorld(
  backend: TestBackend,
  cleanups: (() => Promise<void>)[],
  reply: Reply,
  settings: Partial<TargetSettingsInput> & { mode: 'leases' | 'claims' },
) {
  const { storage, cleanup } = await backend.newStorage();
  const keyProvider = new LocalKeyProvider(randomBytes(32));
  const servicesOver = (clock?: () => number): Services =>
    buildServices(
      storage,
      { ...loadConfig({}), queueCacheMs: 0 },
      { keyProvider, targets: { dispatcher: true, loopback: true }, ...(clock ? { clock } : {}) },
    );
  const svc = servicesOver();
  const keys: { secret?: string | undefined } = {};
  const rx = await receiver(() => keys.secret, reply);
  const queue = `tq-${randomBytes(4).toString('hex')}`;
  const set = await svc.targets.set(
    queue,
    'billing',
    TargetSettings.parse({ endpoint: { kind: 'https', url: rx.url }, ...settings }),
  );
  keys.secret = set.signingSecret;
  const dispatcherOf = (on: Services): TargetDispatcher =>
    new TargetDispatcher({
      targets: on.targets,
      leasePops: on.leasePops,
      leaseAcks: on.leaseAcks,
      claims: on.claims,
      queues: on.queues,
      notifier: on.notifier,
      clock: on.clock,
      telemetry: on.telemetry,
      stats: on.targetStats,
      invokerFor: (t, secrets) =>
        httpsInvoker({
          url: rx.url,
          secrets,
          allowLoopback: true,
          userAgent: 'test',
          maxSockets: t.settings.maximumConcurrency,
        }),
    });
  const dispatcher = dispatcherOf(svc);
  cleanups.push(cleanup, rx.close, () => dispatcher.stop());
  const push = async (partition: string, ids: string[]) => {
    const r = await svc.pushes.push(ids.map((id) => ({ queue, partition, transactionId: id, payload: json({ id }) })));
    if (!r.every((x) => x.status === 'queued'))
      throw new Error(`push to ${partition} not queued: ${JSON.stringify(r)}`);
  };
  /**
   * Another process over the same storage (its own services, notifier and clock) with its own
   * dispatcher, stopped by the cleanups. `clock` lets it live later than the first (leases the
   * first took look expired to it).
   */
  const another = (clock?: () => number) => {
    const other = servicesOver(clock);
    const d = dispatcherOf(other);
    cleanups.push(() => d.stop());
    return { svc: other, dispatcher: d };
  };
  return { svc, rx, queue, dispatcher, push, another };
}
