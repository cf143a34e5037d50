/**
 * Targets (docs/TARGETS.md): set, read, list, delete, pause and resume a consumer group's
 * target, and rotate an HTTPS target's signing secret. Only `manage` sets or changes one; a
 * read never returns a secret.
 */
import { z } from 'zod';
import { route } from '../route.js';
import { count, isoTime, isoTimeOrNull, nameSchema, newNameSchema } from '../schemas.js';
import { TargetSettings } from '../targets.js';

const TargetParams = z.object({ queue: nameSchema('queue'), group: nameSchema('consumer group') });
const NewTargetParams = z.object({ queue: newNameSchema('queue'), group: newNameSchema('consumer group') });
const onQueue = { queues: ({ params }: { params: { queue: string } }) => [params.queue] };

/** A target as reads show it: its settings, its state, and what this process saw of it. */
export const TargetView = z
  .object({
    queue: z.string(),
    group: z.string(),
    settings: TargetSettings.describe('As stored, every default filled in.'),
    state: z
      .enum(['active', 'paused', 'failing'])
      .describe('failing: active, and the last delivery failed or did not run.'),
    lastError: z.object({ message: z.string(), at: isoTime }).strict().nullable(),
    createdAt: isoTime,
    updatedAt: isoTime,
    signingSecretSetAt: isoTimeOrNull.describe('HTTPS targets: when the current signing secret was made.'),
    stats: z
      .object({
        invocations: count,
        errors: count,
        throttles: count,
        retries: count,
        deadLettered: count,
        inFlight: count,
        oldestUndeliveredAgeSeconds: count.nullable(),
      })
      .strict()
      .describe("This process's counts since it started."),
  })
  .strict();

const WithSecret = TargetView.extend({
  signingSecret: z.string().describe('Shown once, when it is made: keep it to check the sluice-signature header.'),
});

export const putTarget = route({
  method: 'PUT',
  path: '/api/v1/targets/{queue}/{group}',
  group: 'admin',
  summary:
    "Set a consumer group's target (a Lambda function or an HTTPS endpoint) and its knobs; an HTTPS target's first signing secret is in the answer, once.",
  params: NewTargetParams,
  body: TargetSettings,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.union([WithSecret, TargetView]), 201: z.union([WithSecret, TargetView]) },
});

export const getTarget = route({
  method: 'GET',
  path: '/api/v1/targets/{queue}/{group}',
  group: 'admin',
  summary: "A consumer group's target: settings, state, last error and this process's counts.",
  params: TargetParams,
  access: { action: 'consume', ...onQueue },
  response: { 200: TargetView },
});

export const listTargets = route({
  method: 'GET',
  path: '/api/v1/targets',
  group: 'admin',
  summary: 'Every target on a queue the caller may consume.',
  access: { action: 'consume' },
  response: { 200: z.object({ targets: z.array(TargetView) }).strict() },
});

export const deleteTarget = route({
  method: 'DELETE',
  path: '/api/v1/targets/{queue}/{group}',
  group: 'admin',
  summary:
    'Remove a target: deliveries stop (a batch in flight settles); the group, its cursors and dead letters stay.',
  params: TargetParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: z.object({ deleted: z.literal(true) }).strict() },
});

export const pauseTarget = route({
  method: 'POST',
  path: '/api/v1/targets/{queue}/{group}/pause',
  group: 'admin',
  summary: 'Pause a target: no new batch starts until it is resumed; records wait in the log.',
  params: TargetParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: TargetView },
});

export const resumeTarget = route({
  method: 'POST',
  path: '/api/v1/targets/{queue}/{group}/resume',
  group: 'admin',
  summary: 'Resume a paused target.',
  params: TargetParams,
  access: { action: 'manage', ...onQueue },
  response: { 200: TargetView },
});

export const rotateTargetSecret = route({
  method: 'POST',
  path: '/api/v1/targets/{queue}/{group}/rotate-secret',
  group: 'admin',
  summary:
    "Make a new signing secret for an HTTPS target: requests carry signatures by both until the previous one's grace ends.",
  params: TargetParams,
  access: { action: 'manage', ...onQueue },
  response: {
    200: z.object({ signingSecret: z.string(), previousValidUntil: isoTime }).strict(),
  },
});
