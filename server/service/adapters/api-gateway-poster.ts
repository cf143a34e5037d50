/**
 * PostToConnection through API Gateway's management API: how the notifier wakes a WebSocket
 * connection on AWS. The endpoint is the stage's callback URL (SLUICE_NOTIFY_CALLBACK_URL,
 * `https://{api}.execute-api.{region}.amazonaws.com/{stage}`), set by the CDK stack.
 *
 * @example
 * ```ts
 * const poster = new ApiGatewayPoster('https://abc.execute-api.us-east-1.amazonaws.com/live');
 * await poster.post(connectionId, { type: 'work', queue: 'orders' });
 * ```
 */
import {
  ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { ServerMessage } from '../../core/notifications.js';
import type { ConnectionPoster } from '../notifications/connection-poster.js';

export class ApiGatewayPoster implements ConnectionPoster {
  /** `client`: another management API client (one with other credentials or middleware); by default one for `endpoint`. */
  constructor(
    endpoint: string,
    private readonly client = new ApiGatewayManagementApiClient({ endpoint }),
  ) {}

  async post(connectionId: string, message: ServerMessage): Promise<'sent' | 'gone'> {
    try {
      await this.client.send(
        new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(JSON.stringify(message)) }),
      );
      return 'sent';
    } catch (e) {
      if (e instanceof GoneException) return 'gone';
      throw e;
    }
  }
}
