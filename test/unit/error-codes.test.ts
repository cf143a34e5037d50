// Every error code the server can answer is one the client knows: the contract's table, every
// domain code (a SluiceError answers with the table's status), what storage failures and unknown
// errors become, and the codes the local server's edge answers itself.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { API_ERROR_CODES as CLIENT_CODES, type ApiErrorCode as ClientCode } from '../../client/index.js';
import { API_ERROR_CODES, ERRORS, type ApiErrorCode } from '../../contract/index.js';
import { SluiceError, type ErrorCode } from '../../server/core/errors.js';
import { errorResponse } from '../../server/http/errors.js';
import { ContentionError, StoreFullError, StoreUnavailableError } from '../../server/storage/port.js';

/** The codes of answers built outside SluiceError (`answer('unsupported_media_type', …)`, `json(405, 'method_not_allowed', …)`) in server/local. */
function edgeCodes(): string[] {
  const dir = 'server/local';
  const text = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
  return [...text.matchAll(/\b(?:answer|json)\(\s*(?:\d{3},\s*)?'([a-z_]+)'/g)].map((m) => m[1]!);
}

const codeOf = (e: unknown): string => (errorResponse(e).body as { code: string }).code;

/** Every domain code: the table's but for the two no SluiceError may carry. */
const DOMAIN_CODES = API_ERROR_CODES.filter((c): c is ErrorCode => c !== 'internal' && c !== 'storage_full');

/** Every code the server can put in an error body. */
const serverCodes = [
  ...API_ERROR_CODES,
  ...DOMAIN_CODES.map((c) => codeOf(new SluiceError(c, 'x'))),
  codeOf(new StoreFullError('disk full')),
  codeOf(new StoreUnavailableError('throttled', 1, 'slow down')),
  codeOf(new ContentionError('busy')),
  codeOf(new Error('boom')),
  ...edgeCodes(),
];

describe('error codes', () => {
  it('the client knows every code the server can answer', () => {
    const known = new Set<string>(CLIENT_CODES);
    expect([...new Set(serverCodes)].filter((c) => !known.has(c))).toEqual([]);
    // The ones the hand-written list lacked, and the catch-all.
    expect(CLIENT_CODES).toEqual(expect.arrayContaining(['internal', 'storage_full', 'stale_sequence']));
  });

  it('the client has the contract table exactly, and the server answers each code with its status', () => {
    expect([...CLIENT_CODES]).toEqual(API_ERROR_CODES);
    expectTypeOf<ClientCode>().toEqualTypeOf<ApiErrorCode>();
    for (const code of DOMAIN_CODES) {
      expect([code, errorResponse(new SluiceError(code, 'x')).statusCode]).toEqual([code, ERRORS[code].status]);
    }
    expect(DOMAIN_CODES.length).toBe(API_ERROR_CODES.length - 2);
    expect(errorResponse(new StoreFullError('disk full')).statusCode).toBe(ERRORS.storage_full.status);
    expect(errorResponse(new Error('boom')).statusCode).toBe(ERRORS.internal.status);
  });

  it('finds the edge codes it scans for', () => {
    expect(edgeCodes()).toEqual(expect.arrayContaining(['unsupported_media_type', 'forbidden', 'method_not_allowed']));
  });
});
