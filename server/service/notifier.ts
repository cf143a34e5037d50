import { EventEmitter } from 'node:events';

/**
 * In-process wake-ups: a push announces its queue and partition, and long-polling pops in the
 * same process return at once. On AWS each Lambda instance only hears its own pushes, so
 * waiting pops there also re-poll storage on a bounded interval.
 */
export class Notifier {
  private readonly ee = new EventEmitter();
  constructor() {
    this.ee.setMaxListeners(0);
  }

  /** Announces new data (or freed work) on a partition. */
  notify(queue: string, partitionId: string): void {
    this.ee.emit(`q:${queue}`, partitionId);
  }

  /**
   * Resolves when `queue` is notified, when `timeoutMs` passes or when `signal` aborts;
   * true only for a notification.
   */
  wait(queue: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const event = `q:${queue}`;
      const done = (v: boolean): void => {
        clearTimeout(timer);
        this.ee.off(event, onNotify);
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      };
      const onNotify = (): void => done(true);
      const onAbort = (): void => done(false);
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      this.ee.on(event, onNotify);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
