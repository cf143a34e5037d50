/**
 * Record claims (the Felix design) as pure state transitions: the model and its reading
 * (`model.ts`), polls (`poll.ts`), settling a record (`settle.ts`: ack, nack, extend,
 * dead-letter, redrive, discard) and a group's position (`admin.ts`: create, seek, clean-up).
 * The working copy they share is `draft.ts`. See docs/CLAIMS.md, "The model".
 *
 * @example
 * ```ts
 * import * as core from '../core/claims/index.js';
 * const plan = core.planPoll(view, member, req, now, limits, { inc: 42 });
 * ```
 */
export * from './model.js';
export * from './poll.js';
export * from './settle.js';
export * from './admin.js';
