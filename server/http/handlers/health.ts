/**
 * `GET /health` and `GET /ready`, both public.
 *
 * `/health` keeps Queen's `{"status": "healthy", "database": "connected"}` while all is well
 * (Queen's dashboard shows anything else as degraded; queenctl ping prints `database`);
 * `"degraded"` (still 200, with a reason) while this process's writes are failing (a full disk,
 * an unavailable store: `storageHealth`); 503 `"unhealthy"` only when storage cannot be read at
 * all. `database` says whether this answer's read of the store succeeded: `connected` on a 200,
 * `disconnected` on the 503.
 *
 * `/ready` writes a tiny probe item (TTL collects it): 200 `"ready"` when storage takes it, 503
 * `"not_ready"` when not. A failed probe is a failed write, so `/health` turns `degraded` with it:
 * the two never disagree on a store that cannot be reached.
 */
import * as systemApi from '../../../contract/routes/admin/system.js';
import { VERSION } from '../../version.js';
import { StoreFullError, StoreUnavailableError, type ItemKey } from '../../storage/port.js';
import { DEFAULT_RETRY_AFTER_S } from '../errors.js';
import { implement, type RouteDef } from '../route.js';
import type { HttpResult } from '../types.js';

/** The item `/health` reads: it need not exist, the read is the probe. */
const HEALTH_PROBE: ItemKey = { pk: 'HEALTH', sk: 'probe' };
/** The item `/ready` writes, one per deployment, overwritten by each probe. */
const READY_PROBE: ItemKey = { pk: 'HEALTH', sk: 'ready' };
/** The probe item's lifetime: TTL collects it after the probes stop. */
const READY_PROBE_TTL_S = 3_600;

/** Why a storage call failed, in words that name no internals. */
function reasonOf(e: unknown): string {
  if (e instanceof StoreFullError) return 'storage is full';
  if (e instanceof StoreUnavailableError) {
    return e.reason === 'throttled' ? 'storage is throttling requests' : 'storage cannot be reached';
  }
  return 'storage failed';
}

function notAnswering(status: string, backend: string, e: unknown, extra: Record<string, string> = {}): HttpResult {
  const retryAfter = e instanceof StoreUnavailableError ? e.retryAfterSeconds : DEFAULT_RETRY_AFTER_S;
  return {
    statusCode: 503,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) },
    body: {
      status,
      ...extra,
      backend,
      reason: reasonOf(e),
      error: e instanceof Error ? e.name : 'storage unreachable',
    },
  };
}

export const health = implement(systemApi.health, ['storage', 'storageHealth'], async ({ services }) => {
  const backend = services.storage.kind;
  try {
    await services.storage.items.get('meta', HEALTH_PROBE);
  } catch (e) {
    return notAnswering('unhealthy', backend, e, { database: 'disconnected' });
  }
  // The probe read answered: Queen's value for a reachable database.
  const database = 'connected';
  const recent = services.storageHealth.recent();
  if (recent.failures === 0)
    return { statusCode: 200, body: { status: 'healthy', database, backend, version: VERSION } };
  const seconds = Math.round(services.storageHealth.windowMs / 1000);
  return {
    statusCode: 200,
    body: {
      status: 'degraded',
      database,
      backend,
      version: VERSION,
      reason: recent.full
        ? 'storage is full: writes are failing'
        : `${recent.failures} storage write(s) failed in the last ${seconds} s`,
      writeFailures: recent.failures,
      lastWriteFailure: recent.last && { at: new Date(recent.last.at).toISOString(), kind: recent.last.kind },
    },
  };
});

export const ready = implement(systemApi.ready, ['clock', 'storage'], async ({ services }) => {
  const backend = services.storage.kind;
  const now = services.clock();
  try {
    await services.storage.items.put('meta', {
      ...READY_PROBE,
      ver: 1,
      attrs: { at: now },
      expiresAt: Math.floor(now / 1000) + READY_PROBE_TTL_S,
    });
  } catch (e) {
    return notAnswering('not_ready', backend, e);
  }
  return { statusCode: 200, body: { status: 'ready', backend, version: VERSION } };
});

export const healthRoutes: RouteDef[] = [health, ready];
