import type { ServerMessage } from '../../core/notifications.js';

/**
 * Sends a message to one open WebSocket connection: API Gateway's PostToConnection on AWS
 * (`adapters/api-gateway-poster.ts`), a local server in the tests.
 *
 * @example
 * ```ts
 * if ((await poster.post(connectionId, { type: 'work', queue: 'orders' })) === 'gone') forget(connectionId);
 * ```
 */
export interface ConnectionPoster {
  /** `gone`: the connection is closed (API Gateway answered 410); anything else throws. */
  post(connectionId: string, message: ServerMessage): Promise<'sent' | 'gone'>;
}
