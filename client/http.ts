/**
 * The transport: one JSON request with authentication, a per-request timeout, and retries
 * with exponential backoff and jitter as {@link RetryKind} allows.
 */
import { authenticator, type Auth, type Authenticator } from './auth.js';
import { apiErrorFrom, SluiceNetworkError, SluiceTimeoutError } from './errors.js';
import {
  backoffDelay,
  DEFAULT_RETRY,
  isRetryable,
  parseRetryAfter,
  sleep,
  type RetryKind,
  type RetryPolicy,
} from './retry.js';

export const DEFAULT_ENDPOINT = 'http://127.0.0.1:6632';
/** Per-request timeout when a call does not say otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Added to a long poll's wait to make its request timeout. */
export const LONG_POLL_MARGIN_MS = 5_000;

export interface RetryEvent {
  request: string;
  /** The try that failed (1-based). */
  attempt: number;
  delayMs: number;
  error: unknown;
}

export interface TransportOptions {
  /** Base URL of the API, without a trailing `/` (a stage prefix is fine). */
  endpoint: string;
  auth?: Auth | undefined;
  /** Extra headers on every request. */
  headers?: Record<string, string> | undefined;
  timeoutMs?: number | undefined;
  retry?: Partial<RetryPolicy> | undefined;
  /** Injected for tests; default: the global fetch. */
  fetch?: typeof fetch | undefined;
  /** Injected for tests; default: an abortable setTimeout. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  /** Injected for tests; default Math.random. */
  random?: (() => number) | undefined;
  /** SigV4 signing clock (tests). */
  now?: (() => Date) | undefined;
  /** Called before each retry's wait (logging, metrics). */
  onRetry?: ((e: RetryEvent) => void) | undefined;
}

export interface Request {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined | null> | undefined;
  body?: unknown;
  retry: RetryKind;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /**
   * A long poll: when an answer carries `Retry-After` (the server's wait cap turned the wait
   * away, docs/DEPLOYING.md "The wait cap"), sleep that long before returning it, so a loop
   * that polls again at once does not ask every moment (nor hold a Lambda execution meanwhile).
   */
  paced?: boolean | undefined;
}

export interface Reply<T> {
  status: number;
  /** Parsed JSON; null for 204 or an empty body. */
  body: T | null;
  headers: Headers;
}

/** Percent-encodes one path segment (queue, partition and group names may hold anything). */
export const seg = (s: string | number): string => encodeURIComponent(String(s));

export class Transport {
  readonly endpoint: string;
  private readonly base: URL;
  private readonly auth: Authenticator;
  private readonly fetchFn: typeof fetch;
  private readonly sleepFn: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  readonly policy: RetryPolicy;
  readonly timeoutMs: number;

  constructor(private readonly opts: TransportOptions) {
    this.endpoint = opts.endpoint.replace(/\/+$/, '');
    try {
      this.base = new URL(this.endpoint);
    } catch {
      throw new TypeError(`endpoint ${JSON.stringify(opts.endpoint)} is not a URL (expected e.g. ${DEFAULT_ENDPOINT})`);
    }
    this.auth = authenticator(opts.auth ?? { type: 'none' }, this.base, opts.now ? { now: opts.now } : {});
    this.fetchFn = opts.fetch ?? ((...a) => fetch(...a));
    this.sleepFn = opts.sleep ?? sleep;
    this.random = opts.random ?? Math.random;
    this.policy = { ...DEFAULT_RETRY, ...opts.retry };
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The full URL of a request. */
  url(path: string, query?: Request['query']): URL {
    const u = new URL(this.endpoint + path);
    for (const [k, v] of Object.entries(query ?? {}))
      if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
    return u;
  }

  /** Sends a request, retrying as its kind allows. Throws SluiceApiError for any non-2xx. */
  async send<T>(req: Request): Promise<Reply<T>> {
    const label = `${req.method} ${req.path}`;
    for (let attempt = 1; ; attempt++) {
      try {
        const reply = await this.once<T>(req, label);
        if (req.paced) await this.pace(reply, req.signal);
        return reply;
      } catch (err) {
        if (req.signal?.aborted) throw req.signal.reason;
        if (attempt >= this.policy.attempts || !isRetryable(err, req.retry)) throw err;
        const retryAfter = (err as { retryAfterMs?: number }).retryAfterMs;
        const delayMs = backoffDelay(attempt, this.policy, this.random, retryAfter);
        this.opts.onRetry?.({ request: label, attempt, delayMs, error: err });
        await this.sleepFn(delayMs, req.signal);
      }
    }
  }

  /** Sleeps a paced answer's `Retry-After` (at most the retry ceiling); a stop ends the sleep, not the answer. */
  private async pace(reply: Reply<unknown>, signal: AbortSignal | undefined): Promise<void> {
    const ms = parseRetryAfter(reply.headers.get('retry-after'));
    if (ms === undefined || ms <= 0) return;
    await this.sleepFn(Math.min(ms, this.policy.maxDelayMs), signal).catch(() => undefined);
  }

  /** Shorthand for {@link send} returning only the body. */
  async json<T>(req: Request): Promise<T | null> {
    return (await this.send<T>(req)).body;
  }

  private async once<T>(req: Request, label: string): Promise<Reply<T>> {
    const url = this.url(req.path, req.query);
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const base: Record<string, string> = { accept: 'application/json', ...this.opts.headers };
    if (body !== undefined) base['content-type'] = 'application/json';
    const headers = await this.auth({ method: req.method, url, headers: base, body });
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new SluiceTimeoutError(`${label}: no answer within ${timeoutMs} ms`, label)),
      timeoutMs,
    );
    const signal = req.signal ? AbortSignal.any([req.signal, timeout.signal]) : timeout.signal;
    try {
      let res: Response;
      try {
        res = await this.fetchFn(url, { method: req.method, headers, body, signal });
      } catch (e) {
        throw this.networkError(e, label, req, timeout.signal);
      }
      let text: string;
      try {
        text = await res.text();
      } catch (e) {
        throw this.networkError(e, label, req, timeout.signal);
      }
      let parsed: unknown = null;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      if (res.status >= 400) {
        const err = apiErrorFrom(res.status, parsed, label);
        const ra = parseRetryAfter(res.headers.get('retry-after'));
        if (ra !== undefined) Object.assign(err, { retryAfterMs: ra });
        throw err;
      }
      return { status: res.status, body: (res.status === 204 ? null : parsed) as T | null, headers: res.headers };
    } finally {
      clearTimeout(timer);
    }
  }

  private networkError(e: unknown, label: string, req: Request, timeout: AbortSignal): unknown {
    if (req.signal?.aborted) return req.signal.reason;
    if (timeout.aborted) return timeout.reason;
    const cause = (e as { cause?: { message?: string } }).cause;
    const detail = cause?.message ?? (e instanceof Error ? e.message : String(e));
    return new SluiceNetworkError(`${label}: cannot reach ${this.endpoint} (${detail})`, label, { cause: e });
  }
}
