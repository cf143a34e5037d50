/**
 * The console's one way to the Sluice HTTP API: same-origin JSON requests, so they go through
 * whatever authenticates any other client (the local server's bearer tokens, or the signing
 * proxy of `sluice console`). A bearer token typed into the page lives in sessionStorage only.
 */

const TOKEN_KEY = 'sluice.console.token';

/** An answer other than 2xx, with the API's `code` and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function savedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function saveToken(token: string): void {
  if (token === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/** `encodeURIComponent` for one path segment. */
export const seg = (s: string): string => encodeURIComponent(s);

/**
 * Sends one request and parses its JSON answer.
 *
 * @example
 * ```ts
 * const { queues } = await api<{ queues: QueueRow[] }>('GET', '/api/v1/resources/queues');
 * ```
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const token = savedToken();
  if (token) headers['authorization'] = `Bearer ${token}`;
  const res = await fetch(path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    const o = (parsed ?? {}) as { error?: string; code?: string; message?: string };
    throw new ApiError(
      res.status,
      o.code ?? String(res.status),
      o.error ?? o.message ?? `${method} ${path}: ${res.status}`,
    );
  }
  return parsed as T;
}
