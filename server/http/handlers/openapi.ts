/** `GET /api/v1/openapi.json`: the API's OpenAPI 3.1 description, generated from the route table (http/openapi.ts). */
import { defineRoute, type RouteDef } from '../route.js';

/** Built on first request and kept: the route table does not change while the process runs. */
let cached: string | undefined;

export const openApi = defineRoute({
  method: 'GET',
  path: '/api/v1/openapi.json',
  group: 'admin',
  summary: 'This API as an OpenAPI 3.1 document, generated from the route table and its zod schemas.',
  access: { action: 'public' },
  async run() {
    if (cached === undefined) {
      // Loaded when asked: the route table includes this route, so a static import would be a cycle.
      const [{ ALL_ROUTES, LOCAL_ROUTES }, { openApiText }] = await Promise.all([
        import('../routes.js'),
        import('../openapi.js'),
      ]);
      cached = openApiText(ALL_ROUTES, LOCAL_ROUTES);
    }
    return { statusCode: 200, body: cached };
  },
});

export const openApiRoutes: RouteDef[] = [openApi];
