/**
 * Delivers events to an HTTPS target (docs/TARGETS.md, "HTTPS targets"): one POST of the
 * event's JSON per invoke, signed ({@link signatureHeader}), over a keep-alive agent of the
 * target's own, connected only to addresses the SSRF guard allows ({@link guardedLookup}).
 * The answer becomes an {@link InvokeResult}:
 *
 * | what happened                                                        | result                                       |
 * | -------------------------------------------------------------------- | -------------------------------------------- |
 * | 2xx, empty body                                                      | answered, `undefined`                        |
 * | 2xx, a body that parses as JSON                                      | answered, the parsed value                   |
 * | 2xx, a body that does not parse, content type not JSON               | answered, `undefined` (all succeeded)        |
 * | 2xx, a body that does not parse, JSON content type                   | function-error (the answer is broken)        |
 * | 2xx, compressed (`content-encoding` other than identity)             | function-error (none was asked for)          |
 * | 3xx                                                                  | function-error: redirects are not followed   |
 * | 429, 503                                                             | throttled, `Retry-After` (seconds or date)   |
 * | any other status                                                     | function-error, status and 200 body bytes    |
 * | an answer over `maxAnswerBytes` (declared or counted)                | function-error; the socket is dropped        |
 * | no answer within `timeoutMs` after the request was written           | function-error: timed out                    |
 * | the connection failed after the request was written                  | function-error (the target may have run)     |
 * | … on a reused keep-alive connection, before any answer               | unreachable (the idle-close race)            |
 * | DNS failure, a refused address, a refused or reset connection, TLS   | unreachable                                  |
 * | not connected within `connectTimeoutMs`, not written in `timeoutMs`  | unreachable                                  |
 * | `http:` but for a loopback target with `allowLoopback`               | unreachable                                  |
 * | the signal aborted, or the invoker closed                            | unreachable                                  |
 *
 * Before the request is fully written the target cannot have run, so nothing there costs a
 * record an attempt; after it, the target may have run, and a failure counts like a Lambda
 * function's. A target that must not be retried on a timeout cannot have that: delivery is at
 * least once either way.
 *
 * @example
 * ```ts
 * const invoker = httpsInvoker({
 *   url: 'https://example.com/hook',
 *   secrets: () => target.secrets,
 *   allowLoopback: false,
 *   userAgent: 'Sluice/0.1 (+targets)',
 *   maxSockets: settings.maximumConcurrency,
 * });
 * const r = await invoker.invoke(JSON.stringify(event), { timeoutMs: settings.timeoutSeconds * 1000, signal });
 * await invoker.close();
 * ```
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { InvokeResult, Invoker } from '../../core/targets/invoke-result.js';
import { AddressRefusedError, addressProblem, guardedLookup } from './address-guard.js';
import { SIGNATURE_HEADER, signatureHeader } from './signing.js';

/** Lambda's synchronous response limit (6 MiB): no bigger answer than a function could give. */
export const DEFAULT_MAX_ANSWER_BYTES = 6 * 1024 * 1024;
/** Time to a connected (TLS: handshaken) socket: a reachable endpoint takes a fraction of it. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
/** Body bytes of a failed answer kept in its error: enough for an error message, not a page. */
export const ERROR_BODY_BYTES = 200;
/**
 * An idle keep-alive socket is closed after this long: below the 5 s keep-alive timeout of
 * Node's own server (and most others'), so Sluice, not the target, closes an idle connection —
 * the target closing it as a request goes out is the race that resets a reused connection.
 */
export const IDLE_SOCKET_MS = 4000;

/** How an invoker reaches its target. */
export interface HttpsInvokerOptions {
  /** The target's URL: https, or http for a loopback host with `allowLoopback` (the local server). */
  url: string;
  /** The target's signing secrets, newest first; read at each invoke, so a rotation takes effect at once. */
  secrets: () => readonly string[];
  /** Loopback addresses may be connected to (the local server); everything else the guard refuses still is. */
  allowLoopback: boolean;
  /** Largest answer read (default 6 MiB). */
  maxAnswerBytes?: number | undefined;
  /** Longest wait for a connection (default 5 s). */
  connectTimeoutMs?: number | undefined;
  /** The `user-agent` sent. */
  userAgent: string;
  /** Connections held open to the target at most: the target's `maximumConcurrency`. */
  maxSockets: number;
}

const unreachable = (error: string): InvokeResult => ({ kind: 'unreachable', error });
const functionError = (error: string): InvokeResult => ({ kind: 'function-error', error });

/**
 * An {@link Invoker} for one HTTPS target: see the module's table for what each outcome
 * becomes. `close()` drops its connections (and ends invokes in flight as unreachable).
 *
 * @example
 * ```ts
 * const invoker = httpsInvoker({ url, secrets: () => [secret], allowLoopback: false, userAgent, maxSockets: 5 });
 * await invoker.invoke(eventJson, { timeoutMs: 60_000 }); // { kind: 'answered', value: { batchItemFailures: [] } }
 * ```
 */
export function httpsInvoker(opts: HttpsInvokerOptions): Invoker {
  const target = parseTarget(opts);
  const maxAnswerBytes = opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets, timeout: IDLE_SOCKET_MS };
  const tls = target.url?.protocol === 'https:';
  const agent = tls ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  const request = tls ? httpsRequest : httpRequest;
  // A plain-http target must not leave the machine, whatever its name resolves to.
  const lookup = guardedLookup({ allowLoopback: opts.allowLoopback, loopbackOnly: !tls });
  /** Ends each invoke in flight (close). */
  const inFlight = new Set<() => void>();
  let closed = false;

  const invoke = (body: string, { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal | undefined }) =>
    new Promise<InvokeResult>((resolve) => {
      const url = target.url;
      if (!url) return resolve(unreachable(target.problem));
      if (closed) return resolve(unreachable('the invoker was closed'));
      if (signal?.aborted) return resolve(unreachable('aborted'));
      let signature: string;
      try {
        signature = signatureHeader(opts.secrets(), body, Date.now());
      } catch (err) {
        return resolve(unreachable(`not sent: ${(err as Error).message}`));
      }

      let settled = false;
      /** The request was handed to the socket in full (or the target answered): it may have run. */
      let written = false;
      let answered = false;
      let timer: NodeJS.Timeout | undefined;
      const arm = (ms: number, result: () => InvokeResult) => {
        clearTimeout(timer);
        timer = setTimeout(() => fail(result()), ms);
      };
      const finish = (r: InvokeResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        inFlight.delete(onClose);
        resolve(r);
      };
      /** Ends the invoke and drops the connection: whatever it still carries is not wanted. */
      const fail = (r: InvokeResult) => {
        finish(r);
        req.destroy();
      };
      const onAbort = () => fail(unreachable('aborted'));
      const onClose = () => fail(unreachable('the invoker was closed'));

      const req = request({
        hostname: target.host,
        port: url.port === '' ? undefined : Number(url.port),
        path: url.pathname + url.search,
        method: 'POST',
        agent,
        lookup,
        ...(target.auth === undefined ? {} : { auth: target.auth }),
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': opts.userAgent,
          [SIGNATURE_HEADER]: signature,
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      inFlight.add(onClose);

      const answerPhase = () => {
        if (written) return;
        written = true;
        arm(timeoutMs, () => functionError(`timed out after ${timeoutMs} ms`));
      };
      const writePhase = () =>
        arm(timeoutMs, () => unreachable(`the request could not be sent within ${timeoutMs} ms`));
      // 'finish' says the request was handed to the socket; a TLS socket takes it before its
      // handshake, so only finished on a connected (handshaken) socket is it on its way.
      let connected = false;
      let handed = false;
      const onConnected = () => {
        connected = true;
        if (written) return;
        writePhase();
        if (handed) answerPhase();
      };
      req.once('socket', (socket: Socket) => {
        if (req.reusedSocket) return onConnected();
        arm(connectTimeoutMs, () => unreachable(`not connected within ${connectTimeoutMs} ms`));
        socket.once(tls ? 'secureConnect' : 'connect', onConnected);
      });
      req.once('finish', () => {
        handed = true;
        if (connected) answerPhase();
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        if (err instanceof AddressRefusedError || !written) return fail(unreachable(describe(err)));
        if (!answered && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE'))
          return fail(unreachable(`${describe(err)}, on a reused keep-alive connection`));
        fail(functionError(`the connection failed after the request was sent: ${describe(err)}`));
      });
      req.once('response', (res: IncomingMessage) => {
        answered = true;
        answerPhase(); // an answer before the body was all sent (a 413, say) still counts as one
        res.on('error', (err) => fail(functionError(`the answer was cut off: ${describe(err)}`)));
        res.once('close', () => {
          if (!res.complete) fail(functionError('the answer was cut off'));
        });
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) return readAnswer(res, maxAnswerBytes, finish, fail);
        readBytes(res, ERROR_BODY_BYTES, (bytes, whole) => {
          const r = failedStatus(res, bytes);
          return whole ? finish(r) : fail(r);
        });
      });
      req.end(body);
    });

  return {
    invoke,
    close: () => {
      closed = true;
      for (const end of [...inFlight]) end();
      agent.destroy();
      return Promise.resolve();
    },
  };
}

/** The target's URL and host, or why no request is sent to it at all. */
type Target =
  { url: URL; host: string; auth: string | undefined; problem?: undefined } | { url?: undefined; problem: string };

function parseTarget(opts: HttpsInvokerOptions): Target {
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch {
    return { problem: `${opts.url} is not a URL` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { problem: `${url.protocol} is not https:` };
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // Node connects to a literal IP without asking `lookup`: the guard is asked here instead.
  const problem = isIP(host) ? addressProblem(host, { allowLoopback: opts.allowLoopback }) : undefined;
  if (problem) return { problem: new AddressRefusedError(host, problem).message };
  if (url.protocol === 'http:') {
    if (!opts.allowLoopback)
      return { problem: 'http: is only for a loopback target of the local server (allowLoopback); use https:' };
    if (isIP(host) && addressProblem(host, { allowLoopback: true, loopbackOnly: true }))
      return { problem: `http: is only for a loopback target; ${host} is not a loopback address, use https:` };
  }
  let auth: string | undefined;
  try {
    // Basic credentials in the URL (https://user:pass@host/) are sent as Authorization.
    if (url.username !== '') auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  } catch {
    return { problem: "the URL's user name or password is not valid percent-encoding" };
  }
  return { url, host, auth };
}

/**
 * Reads up to `limit` body bytes, then calls `done` with them; `whole` says the body ended
 * within the limit (else reading stopped there, and the caller drops the connection).
 */
function readBytes(res: IncomingMessage, limit: number, done: (bytes: Buffer, whole: boolean) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.on('data', (chunk: Buffer) => {
    if (over) return;
    if (size + chunk.length > limit) {
      over = true;
      chunks.push(chunk.subarray(0, limit - size));
      res.pause();
      return done(Buffer.concat(chunks), false);
    }
    chunks.push(chunk);
    size += chunk.length;
  });
  res.once('end', () => {
    if (!over) done(Buffer.concat(chunks), true);
  });
}

/** A 2xx answer, read (up to the cap) and parsed as the module's table says. */
function readAnswer(
  res: IncomingMessage,
  maxBytes: number,
  finish: (r: InvokeResult) => void,
  fail: (r: InvokeResult) => void,
): void {
  const encoding = res.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity')
    return fail(functionError(`HTTP ${res.statusCode}: the answer is ${encoding}-encoded; none was asked for`));
  const tooBig = (declared?: number) =>
    functionError(
      `the answer${declared === undefined ? '' : ` (${declared} bytes)`} is larger than the ${maxBytes}-byte limit`,
    );
  const declared = Number(res.headers['content-length']);
  if (declared > maxBytes) return fail(tooBig(declared));
  readBytes(res, maxBytes, (bytes, whole) => {
    if (!whole) return fail(tooBig());
    const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
    if (text.trim() === '') return finish({ kind: 'answered', value: undefined });
    try {
      return finish({ kind: 'answered', value: JSON.parse(text) as unknown });
    } catch (err) {
      // A plain "OK" from a receiver that says nothing about records means they all succeeded;
      // JSON that does not parse is an answer that went wrong.
      if (!isJsonType(res.headers['content-type'])) return finish({ kind: 'answered', value: undefined });
      return finish(
        functionError(`HTTP ${res.statusCode}: the answer is not JSON (${(err as Error).message}): ${snippet(bytes)}`),
      );
    }
  });
}

/** The result of a non-2xx answer, from its status, headers and first body bytes. */
function failedStatus(res: IncomingMessage, bytes: Buffer): InvokeResult {
  const status = res.statusCode ?? 0;
  const body = snippet(bytes);
  const what = `HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}${body ? `: ${body}` : ''}`;
  if (status === 429 || status === 503)
    return { kind: 'throttled', error: what, retryAfterMs: retryAfterMs(res.headers['retry-after'], Date.now()) };
  if (status >= 300 && status < 400) {
    const location = res.headers.location;
    const to = location ? ` (to ${location.slice(0, ERROR_BODY_BYTES)})` : '';
    return functionError(`HTTP ${status}: redirects are not followed${to}`);
  }
  return functionError(what);
}

/**
 * `Retry-After` as milliseconds from now: delay-seconds, or an HTTP-date (past dates are 0);
 * undefined when absent or neither.
 */
function retryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  const v = value?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Only something that looks like a date (a month or day name) is read as one: Date.parse
  // takes "1.5" for a date too.
  const at = /[a-z]{3}/i.test(v) ? Date.parse(v) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

const isJsonType = (type: string | undefined): boolean => {
  const media = (type ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return media === 'application/json' || media.endsWith('+json');
};

const snippet = (bytes: Buffer): string => bytes.subarray(0, ERROR_BODY_BYTES).toString('utf8').trim();

/** An error's message, with its code when the message does not name it. */
function describe(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}
