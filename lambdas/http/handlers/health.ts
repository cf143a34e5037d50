/**
 * `GET /health`: liveness, and whether storage answers (200 healthy, 503 not); public.
 */
import { VERSION } from '../../version.js';
import { defineRoute, type RouteDef } from '../route.js';

export const health = defineRoute({
  method: 'GET',
  path: '/health',
  group: 'log',
  summary: 'Liveness and storage reachability (200 healthy, 503 not).',
  access: { action: 'public' },
  async run({ services }) {
    try {
      await services.storage.items.get('meta', { pk: 'HEALTH', sk: 'probe' });
      return { statusCode: 200, body: { status: 'healthy', backend: services.storage.kind, version: VERSION } };
    } catch (e) {
      return {
        statusCode: 503,
        body: {
          status: 'unhealthy',
          backend: services.storage.kind,
          error: e instanceof Error ? e.name : 'storage unreachable',
        },
      };
    }
  },
});

export const healthRoutes: RouteDef[] = [health];
