import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Meter } from '../service/admin/activity.js';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResponse = APIGatewayProxyStructuredResultV2;

/** What a route returns before serialisation. A body that is a string is sent as is. */
export interface HttpResult {
  statusCode: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** The body holds `RawJson` splices (payloads): serialise with `toJson` (codec/json-writer.ts), not JSON.stringify. */
  raw?: boolean;
  /**
   * What the request served, reported to this process's activity (`/metrics`, the status and
   * analytics series) after a successful answer: counting happens here, at the HTTP boundary,
   * from the route's own results, never inside the services. Called at most once.
   */
  meter?: (m: Meter) => void;
}
