/**
 * A scripted fetch for client unit tests: records every request and answers from a list
 * (a Response, a function of the request, or an error to throw).
 */
export interface Recorded {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: unknown;
}

export type Answer = Response | Error | ((req: Recorded) => Response | Promise<Response>);

export const jsonResponse = (status: number, body?: unknown, headers: Record<string, string> = {}): Response =>
  new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

export function fakeFetch(answers: Answer[] | ((req: Recorded) => Response | Promise<Response>)): {
  fetch: typeof fetch;
  calls: Recorded[];
} {
  const calls: Recorded[] = [];
  let i = 0;
  const f = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries((init?.headers ?? {}) as Record<string, string>)) headers[k.toLowerCase()] = v;
    const raw = init?.body;
    const rec: Recorded = {
      method: init?.method ?? 'GET',
      url,
      headers,
      body: typeof raw === 'string' ? JSON.parse(raw) : undefined,
    };
    calls.push(rec);
    if (init?.signal?.aborted) throw init.signal.reason;
    if (typeof answers === 'function') return answers(rec);
    const a = answers[Math.min(i++, answers.length - 1)];
    if (a === undefined) throw new Error('fakeFetch: no answer scripted');
    if (a instanceof Error) throw a;
    if (typeof a === 'function') return a(rec);
    return a.clone();
  };
  return { fetch: f, calls };
}

/** A network failure shaped like undici's: TypeError('fetch failed') with an errno cause. */
export function netError(code: string): Error {
  return new TypeError('fetch failed', { cause: Object.assign(new Error(`connect ${code} 127.0.0.1:1`), { code }) });
}
