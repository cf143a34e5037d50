/**
 * The OpenAPI 3.1 description of the HTTP API, generated from the contract: one operation per
 * route, its path, query, body and answer schemas from the contract route's zod schemas (zod 4's JSON
 * Schema output, as requests are written: `io: 'input'`), its access rule, and the error shape
 * every route shares. Served at `/api/v1/openapi.json` and written to `docs/openapi.json` by
 * `npm run openapi` (a test fails when that file is stale).
 *
 * @example
 * ```ts
 * const doc = openApiDocument(ALL_ROUTES, metricsRoutes);
 * doc.paths['/api/v1/push'].post.requestBody; // the push body's JSON Schema
 * ```
 */
import { z } from 'zod';
import { API_ERROR_CODES, ERRORS, ErrorBody } from '../../contract/errors.js';
import { isTextAnswer, type Answers, type RouteContract } from '../../contract/route.js';
import { VERSION } from '../version.js';

type JsonSchema = Record<string, unknown>;

/**
 * A zod schema as JSON Schema: of what a request may send (`input`, transforms and refinements
 * left out), or of what an answer holds (`output`).
 */
function schemaOf(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as JsonSchema;
  return rest;
}

/** The object properties of a params or query schema, as OpenAPI parameters. */
function parametersOf(schema: z.ZodType | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (!schema) return [];
  const s = schemaOf(schema);
  const properties = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required ?? []) as string[]);
  return Object.entries(properties).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: p,
  }));
}

/** The path's `{param}` names, in order. */
const pathParams = (path: string): string[] => [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1] as string);

/** The route's answers by status: a JSON body's schema, a text body, or none. */
function responsesOf(answers: Answers): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [status, a] of Object.entries(answers)) {
    if (a === undefined) continue;
    const description = status === '204' ? 'No content.' : `HTTP ${status}.`;
    if (a === null) out[status] = { description };
    else if (isTextAnswer(a))
      out[status] = { description, content: { [a.mediaType]: { schema: schemaOf(a.schema, 'output') } } };
    else out[status] = { description, content: { 'application/json': { schema: schemaOf(a, 'output') } } };
  }
  return out;
}

function operationOf(r: RouteContract, localOnly: boolean): JsonSchema {
  const parameters = [...parametersOf(r.params, 'path'), ...parametersOf(r.query, 'query')];
  // A path parameter the params schema does not describe is still a parameter.
  for (const name of pathParams(r.path))
    if (!parameters.some((p) => p.name === name && p.in === 'path'))
      parameters.unshift({ name, in: 'path', required: true, schema: { type: 'string' } });
  return {
    operationId: `${r.method.toLowerCase()}${r.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: r.summary,
    tags: [r.group],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(r.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(r.body) } } } }
      : {}),
    responses: {
      ...responsesOf(r.response),
      default: {
        description: 'An error: `code` names it (the table in components.schemas.Error, contract/errors.ts).',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    },
    'x-sluice-access': {
      action: r.access.action,
      ...(r.access.also ? { also: r.access.also } : {}),
    },
    ...(localOnly ? { 'x-sluice-local-only': true } : {}),
  };
}

/**
 * The OpenAPI document of `routes` (deployed everywhere) and `localRoutes` (the local server
 * only), paths in route-table order.
 */
export function openApiDocument(
  routes: readonly RouteContract[],
  localRoutes: readonly RouteContract[] = [],
): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const add = (r: RouteContract, localOnly: boolean): void => {
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operationOf(r, localOnly);
  };
  for (const r of routes) add(r, false);
  for (const r of localRoutes) add(r, true);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version: VERSION,
      description:
        'A serverless message queue: one log, partition leases and record claims, Queen-compatible HTTP API. ' +
        'Generated from the contract (contract/index.ts); `x-sluice-access` is the grant a route needs ' +
        '(docs/DEPLOYING.md, Grants), `x-sluice-local-only` marks routes only the local server serves.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: 'http://127.0.0.1:6632', description: 'the local server (npm start)' }],
    paths,
    components: {
      schemas: {
        Error: {
          ...schemaOf(ErrorBody, 'output'),
          // Each code's status and meaning, as the server answers them.
          'x-sluice-error-codes': Object.fromEntries(API_ERROR_CODES.map((c) => [c, ERRORS[c]])),
        },
      },
    },
  };
}

/** The document as `docs/openapi.json` holds it (two-space JSON and a final newline). */
export const openApiText = (routes: readonly RouteContract[], localRoutes: readonly RouteContract[] = []): string =>
  `${JSON.stringify(openApiDocument(routes, localRoutes), null, 2)}\n`;
