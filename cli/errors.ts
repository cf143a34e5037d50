/**
 * Exit codes and what a failure means for a person. Commands only throw; `run` (cli/main.ts)
 * turns the error into a message and an exit code here, so every command fails the same way.
 */
import { SluiceApiError, SluiceNetworkError } from '../client/errors.js';

/** The process exit codes (documented in the header of cli/main.ts and in docs/CLIENT.md). */
export const EXIT = { ok: 0, api: 1, usage: 2, notFound: 3, auth: 4, unreachable: 5 } as const;

/** A usage or input problem: exit 2 with this message. */
export class UsageError extends Error {}

/** What a command names does not exist (a queue, a partition, a record-claim group, a context): exit 3 with this message. */
export class NotFoundError extends Error {}

/** What a failure means for a person, and its exit code. */
export function describeFailure(
  e: unknown,
  endpoint: string,
): { code: number; message: string; json: Record<string, unknown> } {
  if (e instanceof UsageError)
    return { code: EXIT.usage, message: e.message, json: { error: e.message, code: 'usage' } };
  if (e instanceof NotFoundError)
    return { code: EXIT.notFound, message: e.message, json: { error: e.message, code: 'not_found' } };
  if (e instanceof SluiceApiError) {
    let hint = '';
    let code: number = EXIT.api;
    if (e.status === 404) code = EXIT.notFound;
    if (e.status === 401) {
      code = EXIT.auth;
      hint = ' (pass --token or set SLUICE_TOKEN; for an IAM-protected API use --profile/--region)';
    }
    if (e.status === 403) code = EXIT.auth;
    if (e.status >= 500) hint = ' (the server failed after retries; try again, and check its logs if it persists)';
    const what = e.status === 200 || e.status === 201 ? '' : ` [HTTP ${e.status} ${e.code}]`;
    return { code, message: `${e.message}${what}${hint}`, json: { error: e.message, code: e.code, status: e.status } };
  }
  if (e instanceof SluiceNetworkError) {
    const message = `${e.message}. Is the server running (npm start) and is --endpoint right? (now ${endpoint}; env SLUICE_ENDPOINT)`;
    return {
      code: EXIT.unreachable,
      message,
      json: { error: e.message, code: e.name === 'SluiceTimeoutError' ? 'timeout' : 'unreachable' },
    };
  }
  if (e instanceof TypeError && /region|endpoint/i.test(e.message))
    return { code: EXIT.usage, message: e.message, json: { error: e.message, code: 'usage' } };
  if (e instanceof Error && /credential/i.test(e.message))
    return {
      code: EXIT.auth,
      message: `${e.message} (SigV4 found no AWS credentials: set AWS_PROFILE or --profile, or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)`,
      json: { error: e.message, code: 'credentials' },
    };
  const message = e instanceof Error ? e.message : String(e);
  return { code: EXIT.api, message, json: { error: message, code: 'error' } };
}
