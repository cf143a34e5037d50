/** `GET /api/v1/openapi.json`: the API's OpenAPI 3.1 description, generated from the contract (http/openapi.ts). */
import { CONTRACT, LOCAL_CONTRACT } from '../../../contract/index.js';
import * as systemApi from '../../../contract/routes/admin/system.js';
import { openApiText } from '../openapi.js';
import { implement, type RouteDef } from '../route.js';

/** Built on first request and kept: the contract does not change while the process runs. */
let cached: string | undefined;

export const openApi = implement(systemApi.openApi, [], () => {
  cached ??= openApiText(CONTRACT, LOCAL_CONTRACT);
  return Promise.resolve({ statusCode: 200, body: cached });
});

export const openApiRoutes: RouteDef[] = [openApi];
