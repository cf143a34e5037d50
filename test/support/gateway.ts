/**
 * A stand-in for API Gateway built from a synthesized cloud assembly: it routes exactly the
 * route keys of the template to the function each route integrates with, runs that function's
 * bundle (the `index.mjs` esbuild wrote into the assembly), and plays the IAM authorizer (the
 * caller's identity comes from a test header instead of a SigV4 signature).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { HttpEvent } from '../../server/http/types.js';
import type { LambdaHttpHandler } from '../../server/local/server.js';

/** Header carrying the caller's IAM ARN (what SigV4 would prove). */
export const PRINCIPAL_HEADER = 'x-test-iam-principal';

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties: Json;
  Metadata?: Json;
}

export interface AssemblyFunction {
  logicalId: string;
  /** Directory of the function's bundle inside the assembly. */
  assetDir: string;
  bundle: string;
}

export interface AssemblyRoute {
  method: string;
  path: string;
  authorization: string;
  functionId: string;
}

/** Functions and routes of a synthesized stack template (`cdk.out/<Stack>.template.json`). */
export function readAssembly(
  outdir: string,
  stackName: string,
): {
  template: { Resources: Record<string, Resource> };
  functions: Map<string, AssemblyFunction>;
  routes: AssemblyRoute[];
} {
  const template = JSON.parse(readFileSync(join(outdir, `${stackName}.template.json`), 'utf8')) as {
    Resources: Record<string, Resource>;
  };
  const functions = new Map<string, AssemblyFunction>();
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const asset = r.Metadata?.['aws:asset:path'];
    if (typeof asset !== 'string') throw new Error(`function ${id} has no asset path (was it bundled?)`);
    const handler = String(r.Properties['Handler']);
    const [file, exported] = handler.split('.');
    if (exported !== 'handler') throw new Error(`function ${id}: unexpected handler ${handler}`);
    const assetDir = join(outdir, asset);
    functions.set(id, { logicalId: id, assetDir, bundle: join(assetDir, `${file}.mjs`) });
  }
  const ref = (v: unknown): string | undefined => {
    const o = v as Json | undefined;
    if (o && Array.isArray(o['Fn::GetAtt'])) return String(o['Fn::GetAtt'][0]);
    if (o && typeof o['Ref'] === 'string') return o['Ref'];
    return undefined;
  };
  const routes: AssemblyRoute[] = [];
  for (const r of Object.values(template.Resources)) {
    if (r.Type !== 'AWS::ApiGatewayV2::Route') continue;
    // The notifications' WebSocket routes ($connect, …): test/integration/notifications.test.ts covers them.
    if (String(r.Properties['RouteKey']).startsWith('$')) continue;
    const [method, path] = String(r.Properties['RouteKey']).split(' ') as [string, string];
    const target = (r.Properties['Target'] as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    const integration = template.Resources[ref(target[1]) ?? ''];
    const functionId = ref(integration?.Properties['IntegrationUri']);
    if (!functionId || !functions.has(functionId))
      throw new Error(`route ${method} ${path} does not integrate with a function of the stack`);
    routes.push({
      method,
      path,
      authorization: (r.Properties['AuthorizationType'] as string | undefined) ?? 'NONE',
      functionId,
    });
  }
  return { template, functions, routes };
}

/** Loads a bundle as Lambda would (an ES module exporting `handler`). */
export async function loadBundle(
  fn: AssemblyFunction,
): Promise<(event: unknown, context: unknown) => Promise<unknown>> {
  const mod = (await import(pathToFileURL(fn.bundle).href)) as { handler?: unknown };
  if (typeof mod.handler !== 'function') throw new Error(`${fn.bundle} exports no handler`);
  return mod.handler as (event: unknown, context: unknown) => Promise<unknown>;
}

const json = (statusCode: number, message: string) => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message }),
});

/** Matches a request path against an API Gateway route path (`{param}` = one segment). */
function matches(routePath: string, rawPath: string): number | undefined {
  const parts = routePath.split('/').filter(Boolean);
  const segs = rawPath.split('/').filter(Boolean);
  if (parts.length !== segs.length) return undefined;
  let score = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as string;
    if (/^\{[^}]+\}$/.test(p)) continue;
    if (p !== segs[i]) return undefined;
    score += 2 ** (20 - i);
  }
  return score;
}

/**
 * The gateway: unrouted requests get API Gateway's 404, routes with the IAM authorizer need
 * {@link PRINCIPAL_HEADER} (else 403 `{"message":"Forbidden"}`), and the function sees the
 * caller where the IAM authorizer puts it.
 */
export function simulatedGateway(
  routes: AssemblyRoute[],
  handlers: Map<string, (event: unknown, context: unknown) => Promise<unknown>>,
): LambdaHttpHandler {
  return async (event: HttpEvent, context) => {
    const method = event.requestContext.http.method;
    let best: { route: AssemblyRoute; score: number } | undefined;
    for (const route of routes) {
      if (route.method !== method) continue;
      const score = matches(route.path, event.rawPath);
      if (score !== undefined && (!best || score > best.score)) best = { route, score };
    }
    if (!best) return json(404, 'Not Found');
    const principal = event.headers[PRINCIPAL_HEADER];
    let authorizer: Json | undefined;
    if (best.route.authorization === 'AWS_IAM') {
      if (!principal) return json(403, 'Forbidden');
      authorizer = { iam: { userArn: principal, accountId: principal.split(':')[4] ?? '' } };
    }
    const { [PRINCIPAL_HEADER]: _dropped, ...headers } = event.headers;
    const routed: HttpEvent = {
      ...event,
      headers,
      routeKey: `${best.route.method} ${best.route.path}`,
      requestContext: {
        ...event.requestContext,
        routeKey: `${best.route.method} ${best.route.path}`,
        ...(authorizer ? { authorizer } : {}),
      },
    };
    const handler = handlers.get(best.route.functionId);
    if (!handler) throw new Error(`no bundle loaded for ${best.route.functionId}`);
    return (await handler(routed, context)) as Awaited<ReturnType<LambdaHttpHandler>>;
  };
}
