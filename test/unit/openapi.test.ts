// The OpenAPI document against the route table: every route with its path, query and body
// schemas, and docs/openapi.json as `npm run openapi` writes it now.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument, openApiText } from '../../server/http/openapi.js';
import { ALL_ROUTES, LOCAL_ROUTES, SERVER_ROUTES } from '../../server/http/routes.js';

type Operation = {
  operationId: string;
  summary: string;
  parameters?: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { content: { 'application/json': { schema: Record<string, unknown> } } };
  'x-sluice-access': { action: string };
  'x-sluice-local-only'?: boolean;
};
const doc = openApiDocument(ALL_ROUTES, LOCAL_ROUTES) as {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
};
const keysOf = (schema: z.ZodType | undefined): string[] =>
  schema ? Object.keys(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }).properties ?? {}) : [];

/** A body schema as the document holds it (without the dialect line). */
function bodySchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}

describe('OpenAPI from the route table', () => {
  it('is OpenAPI 3.1 with one operation per route, unique operation ids', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p));
    expect(ops).toHaveLength(SERVER_ROUTES.length);
    expect(new Set(ops.map((o) => o.operationId)).size).toBe(ops.length);
  });

  it.each(SERVER_ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))('covers %s and its schemas', (_n, r) => {
    const op = doc.paths[r.path]?.[r.method.toLowerCase()];
    expect(op, `${r.method} ${r.path} is missing`).toBeDefined();
    expect(op!.summary).toBe(r.summary);
    expect(op!['x-sluice-access'].action).toBe(r.access.action);
    const params = op!.parameters ?? [];
    // Every {param} of the path, and every field of the params and query schemas.
    const pathNames = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    expect(params.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(expect.arrayContaining(pathNames));
    expect(params.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(expect.arrayContaining(keysOf(r.params)));
    expect(params.filter((p) => p.in === 'query').map((p) => p.name)).toEqual(keysOf(r.query));
    // The body's schema, as zod writes it.
    expect(op!.requestBody?.content['application/json'].schema).toEqual(r.body ? bodySchema(r.body) : undefined);
    expect(op!['x-sluice-local-only'] === true).toBe(LOCAL_ROUTES.includes(r));
  });

  it('docs/openapi.json is what `npm run openapi` writes now (run it after changing a route)', () => {
    expect(readFileSync('docs/openapi.json', 'utf8')).toBe(openApiText(ALL_ROUTES, LOCAL_ROUTES));
  });
});
