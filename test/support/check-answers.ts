/**
 * Response validation, for tests only: a middleware that holds every answer the handler gives
 * to the contract. A success must be a status the route declares (`response`), with a body its
 * schema accepts (a JSON body parsed, a text body by media type, none for `NO_BODY`); an error
 * must be `ErrorBody` with the status the error table gives its code. A mismatch becomes a 500
 * whose message says what differed, so the test that made the call fails and shows it.
 * test/support/http.ts puts it on every server it starts; production and the bench never do.
 *
 * @example
 * ```ts
 * makeHandler(SERVER_ROUTES, { services, answerCheck: checkAnswers });
 * ```
 */
import { ERRORS, ErrorBody } from '../../contract/errors.js';
import { isTextAnswer } from '../../contract/route.js';
import { stateOf, type ApiMiddleware, type ApiRequest } from '../../server/http/middleware/request-state.js';

/** Every mismatch seen in this process (a test may assert it stayed empty). */
export const answerMismatches: string[] = [];

function problemOf(request: ApiRequest): string | undefined {
  const res = request.response;
  if (!res) return undefined;
  const status = res.statusCode ?? 200;
  const text = typeof res.body === 'string' ? res.body : undefined;
  const json = (): unknown => (text === undefined ? undefined : JSON.parse(text));
  if (status >= 400) {
    const parsed = ErrorBody.safeParse(json());
    if (!parsed.success) return `error body is not {error, code}: ${parsed.error.message}`;
    const expected = ERRORS[parsed.data.code].status;
    return expected === status ? undefined : `code ${parsed.data.code} answered ${status}, the table says ${expected}`;
  }
  const route = stateOf(request.event).route?.def;
  if (!route) return `answered ${status} without a route`;
  if (!(status in route.response)) return `answered ${status}, which the contract does not declare`;
  const answer = route.response[status];
  if (answer === null || answer === undefined)
    return text === undefined || text === '' ? undefined : `answered a body on ${status}, declared bodiless`;
  if (isTextAnswer(answer)) {
    const type = res.headers?.['content-type'];
    if (typeof type !== 'string' || !type.startsWith(answer.mediaType.split(';')[0]!))
      return `content-type ${String(type)}, declared ${answer.mediaType}`;
    const r = answer.schema.safeParse(text);
    return r.success ? undefined : r.error.message;
  }
  const r = answer.safeParse(json());
  return r.success ? undefined : r.error.message;
}

function check(request: ApiRequest): void {
  let problem: string | undefined;
  try {
    problem = problemOf(request);
  } catch (e) {
    problem = `answer is not JSON: ${(e as Error).message}`;
  }
  if (problem === undefined) return;
  const route = stateOf(request.event).route?.def;
  const where = route ? `${route.method} ${route.path}` : request.event.rawPath;
  const message = `answer does not match the contract (${where}, ${request.response?.statusCode}): ${problem}`;
  answerMismatches.push(message);
  request.response = {
    statusCode: 500,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: message, code: 'internal' }),
  };
}

/** The check, as a middleware: it goes between `meter` and `serialise` (see makeHandler). */
export const checkAnswers: ApiMiddleware = { after: check, onError: check };
