import { describe, expect, it } from 'vitest';
import { RawJson, toJson } from '../../lambdas/http/json.js';
import { ALL_ROUTES } from '../../lambdas/http/routes.js';
import { STATUS, errorResponse } from '../../lambdas/http/errors.js';
import { SluiceError } from '../../lambdas/core/errors.js';

describe('unit: toJson', () => {
  it('splices raw JSON verbatim and matches JSON.stringify otherwise', () => {
    const v = { a: 1, b: [true, null, 'x'], c: { d: new RawJson('{"raw":1.50}') }, u: undefined };
    expect(toJson(v)).toBe('{"a":1,"b":[true,null,"x"],"c":{"d":{"raw":1.50}}}');
    const plain = { s: 'é"\n', n: [1.5, -0, 1e21], o: {} };
    expect(toJson(plain)).toBe(JSON.stringify(plain));
  });
});

describe('unit: error mapping', () => {
  it('maps domain errors to their status with code and message', () => {
    const r = errorResponse(new SluiceError('payload_too_large', 'too big', { limit: 5 }));
    expect(r).toEqual({ statusCode: 413, body: { error: 'too big', code: 'payload_too_large', limit: 5 } });
    expect(STATUS.stale_claim).toBe(409);
  });
  it('hides unknown errors behind a generic 500', () => {
    const logged: unknown[] = [];
    const r = errorResponse(new Error('secret table name xyz'), { error: (_m, f) => logged.push(f) });
    expect(r.statusCode).toBe(500);
    expect(JSON.stringify(r.body)).not.toContain('secret');
    expect(logged).toHaveLength(1);
  });
});

describe('unit: route table', () => {
  it('has no two routes with the same method and path', () => {
    const keys = ALL_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
