// The contract (contract/) is the one declaration of the HTTP API: the server serves exactly its
// routes with its schemas, every route declares its success answers, and the package depends on
// zod only, so the stack, the docs and the tests can load it without the server.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACT, LOCAL_CONTRACT } from '../../contract/index.js';
import { ALL_ROUTES, LOCAL_ROUTES } from '../../server/http/routes.js';

const key = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

describe('the contract', () => {
  it('is what the server serves, route for route and in order (deployed and local-only)', () => {
    expect(ALL_ROUTES.map(key)).toEqual(CONTRACT.map(key));
    expect(LOCAL_ROUTES.map(key)).toEqual(LOCAL_CONTRACT.map(key));
  });

  it.each([...CONTRACT, ...LOCAL_CONTRACT].map((c) => [key(c), c] as const))(
    '%s: the server parses with its schemas and answers by its table',
    (_k, c) => {
      const r = [...ALL_ROUTES, ...LOCAL_ROUTES].find((x) => key(x) === key(c))!;
      const parts = ['body', 'query', 'params', 'response', 'access', 'group', 'summary'] as const;
      expect(parts.filter((p) => r[p] !== c[p])).toEqual([]);
      // At least one success answer, so the OpenAPI document and the clients know its shape.
      expect(Object.keys(c.response).some((s) => Number(s) >= 200 && Number(s) < 300)).toBe(true);
    },
  );

  it('imports nothing but zod and itself', () => {
    const specs = sources('contract').flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)].map((m) => m[1]!),
    );
    expect(specs.length).toBeGreaterThan(20);
    expect(specs.filter((s) => s !== 'zod' && !s.startsWith('./') && !s.startsWith('../'))).toEqual([]);
    // Relative imports stay inside contract/ (the deepest file is two folders down).
    expect(specs.filter((s) => s.startsWith('../../../'))).toEqual([]);
  });
});
