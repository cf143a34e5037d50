import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResponse = APIGatewayProxyStructuredResultV2;

/** What a route returns before serialisation. A body that is a string is sent as is. */
export interface HttpResult {
  statusCode: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body holds `RawJson` splices (payloads): serialise with `toJson` (codec/json-writer.ts), not JSON.stringify. */
  raw?: boolean;
}
