// The tests' response validation (test/support/check-answers.ts) refuses what the contract does
// not declare: a body its schema rejects, an undeclared status, an error code at a status the
// table does not give it. The HTTP suites rely on it; here it is shown to bite.
import { describe, expect, it } from 'vitest';
import * as systemApi from '../../contract/routes/admin/system.js';
import { makeHandler } from '../../server/http/handler.js';
import { implement } from '../../server/http/route.js';
import type { HttpEvent, HttpResult } from '../../server/http/types.js';
import { Grants } from '../../server/http/grants.js';
import type { Services } from '../../server/service/runtime.js';
import { Activity } from '../../server/service/admin/activity.js';
import { UsageLedger } from '../../server/service/usage.js';
import { answerMismatches, checkAnswers } from '../support/check-answers.js';

const event = {
  version: '2.0',
  rawPath: '/health',
  headers: {},
  requestContext: { http: { method: 'GET', path: '/health' } },
};
const services = async () =>
  ({
    config: {},
    telemetry: { count() {}, error() {}, warn() {} },
    activity: new Activity(Date.now),
    usage: new UsageLedger(undefined, undefined),
    shutdown: new AbortController().signal,
  }) as unknown as Services;

/** What GET /health answers when its run returns `result`, with the check on. */
async function answerOf(result: HttpResult) {
  const route = implement(systemApi.health, [], () => Promise.resolve(result));
  const handler = makeHandler([route], { grants: Grants.open(), services, answerCheck: checkAnswers });
  const res = await handler({ ...event } as unknown as HttpEvent, {});
  return { status: res.statusCode, body: JSON.parse(res.body as string) as { code?: string; error?: string } };
}

const healthy = { status: 'healthy', database: 'connected', backend: 'embedded', version: '1.0.0' };

describe('response validation (tests only)', () => {
  it('passes an answer the contract declares, unchanged', async () => {
    expect(await answerOf({ statusCode: 200, body: healthy })).toEqual({ status: 200, body: healthy });
  });

  it.each([
    ['a body the schema rejects', { statusCode: 200, body: { ...healthy, database: 'gone' } }, /\/health, 200/],
    ['a field the strict schema does not know', { statusCode: 200, body: { ...healthy, extra: 1 } }, /\/health, 200/],
    [
      'a status the route does not declare',
      { statusCode: 202, body: healthy },
      /202, which the contract does not declare/,
    ],
    [
      'an error code at the wrong status',
      { statusCode: 404, body: { error: 'x', code: 'conflict' } },
      /code conflict answered 404, the table says 409/,
    ],
    ['an error body without a code', { statusCode: 400, body: { error: 'x' } }, /not \{error, code\}/],
  ])('turns %s into a 500 that says so', async (_what, result, message) => {
    const before = answerMismatches.length;
    const r = await answerOf(result);
    expect(r.status).toBe(500);
    expect(r.body.code).toBe('internal');
    expect(r.body.error).toMatch(message);
    expect(answerMismatches).toHaveLength(before + 1);
  });
});
