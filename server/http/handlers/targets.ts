import * as targetsApi from '../../../contract/routes/targets.js';
import { targetView } from '../answers/targets.js';
import { implement, type RouteDef } from '../route.js';

export const putTarget = implement(
  targetsApi.putTarget,
  ['targets', 'targetStats', 'clock'],
  async ({ params, body, services }) => {
    const r = await services.targets.set(params.queue, params.group, body);
    const view = targetView(r.target, services.targetStats.snapshot(params.queue, params.group), services.clock());
    return {
      statusCode: r.created ? 201 : 200,
      body: r.signingSecret === undefined ? view : { ...view, signingSecret: r.signingSecret },
    };
  },
);

export const getTarget = implement(
  targetsApi.getTarget,
  ['targets', 'targetStats', 'clock'],
  async ({ params, services }) => {
    const t = await services.targets.require(params.queue, params.group);
    return { statusCode: 200, body: targetView(t, services.targetStats.snapshot(t.queue, t.group), services.clock()) };
  },
);

export const listTargets = implement(
  targetsApi.listTargets,
  ['targets', 'targetStats', 'clock'],
  async ({ services, allowed }) => {
    const now = services.clock();
    const targets = (await services.targets.list())
      .filter((t) => allowed(t.queue))
      .map((t) => targetView(t, services.targetStats.snapshot(t.queue, t.group), now));
    return { statusCode: 200, body: { targets } };
  },
);

export const deleteTarget = implement(
  targetsApi.deleteTarget,
  ['targets', 'targetStats'],
  async ({ params, services }) => {
    await services.targets.delete(params.queue, params.group);
    services.targetStats.forget(params.queue, params.group);
    return { statusCode: 200, body: { deleted: true } };
  },
);

const pausing = (paused: boolean) =>
  implement(
    paused ? targetsApi.pauseTarget : targetsApi.resumeTarget,
    ['targets', 'targetStats', 'clock'],
    async ({ params, services }) => {
      const t = await services.targets.setPaused(params.queue, params.group, paused);
      return {
        statusCode: 200,
        body: targetView(t, services.targetStats.snapshot(t.queue, t.group), services.clock()),
      };
    },
  );

export const pauseTarget = pausing(true);
export const resumeTarget = pausing(false);

export const rotateTargetSecret = implement(
  targetsApi.rotateTargetSecret,
  ['targets'],
  async ({ params, services }) => {
    const r = await services.targets.rotateSecret(params.queue, params.group);
    return {
      statusCode: 200,
      body: { signingSecret: r.signingSecret, previousValidUntil: new Date(r.previousValidUntil).toISOString() },
    };
  },
);

/** Served by the local server only until the AWS dispatcher exists (docs/TARGETS.md). */
export const targetRoutes: RouteDef[] = [
  putTarget,
  getTarget,
  listTargets,
  deleteTarget,
  pauseTarget,
  resumeTarget,
  rotateTargetSecret,
];
