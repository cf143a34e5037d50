import * as claimsApi from '../../../contract/routes/claims.js';
import type { ClaimedRecord } from '../../service/claims/claim-service.js';
import { rawPayload } from '../../codec/json-writer.js';
import { claimPollMeter, claimSettleMeter } from '../meters.js';
import { implement, type RouteDef } from '../route.js';
import { iso } from '../iso.js';

/** A claimed record on the wire: its payload spliced in verbatim. */
function recordJson(record: ClaimedRecord): Record<string, unknown> {
  return {
    offset: record.offset,
    transactionId: record.message.transactionId,
    attempts: record.attempts,
    ...(record.skippedBefore > 0 ? { skippedBefore: record.skippedBefore } : {}),
    createdAt: iso(record.message.createdAt),
    data: rawPayload(record.message.payload),
  };
}

export const claimPoll = implement(
  claimsApi.claimPoll,
  ['claims', 'clock'],
  async ({ params, body, principal, services, signal }) => {
    const r = await services.claims.poll(params.queue, params.partition, params.group, { ...body, principal }, signal);
    return {
      statusCode: 200,
      raw: true,
      body: { records: r.records.map(recordJson), capped: r.capped },
      meter: claimPollMeter(params.queue, r, services.clock()),
      // The wait cap turned the wait away: our client sleeps this long before polling again.
      ...(r.retryAfterSeconds === undefined ? {} : { headers: { 'retry-after': String(r.retryAfterSeconds) } }),
    };
  },
);

export const claimAck = implement(claimsApi.claimAck, ['claims'], async ({ params, body, services }) => {
  const r = await services.claims.ack(params.queue, params.partition, params.group, body.offsets);
  return {
    statusCode: 200,
    body: { committed: r.committed },
    meter: claimSettleMeter(params.queue, 'claimAcks', body.offsets.length),
  };
});

export const claimNack = implement(claimsApi.claimNack, ['claims'], async ({ params, body, services }) => {
  const r = await services.claims.nack(params.queue, params.partition, params.group, body);
  return { statusCode: 200, body: r };
});

export const claimExtend = implement(claimsApi.claimExtend, ['claims'], async ({ params, body, services }) => {
  const r = await services.claims.extend(params.queue, params.partition, params.group, body);
  return { statusCode: 200, body: r };
});

export const claimDeadLetter = implement(claimsApi.claimDeadLetter, ['claims'], async ({ params, body, services }) => {
  const r = await services.claims.deadLetter(params.queue, params.partition, params.group, body);
  return {
    statusCode: 200,
    body: { offset: r.offset, deadLettered: true, committed: r.committed },
    meter: claimSettleMeter(params.queue, 'deadLetters', 1),
  };
});

export const claimListDeadLetters = implement(
  claimsApi.claimListDeadLetters,
  ['claims'],
  async ({ params, query, services }) => {
    const r = await services.claims.listDeadLetters(params.queue, params.partition, params.group, query);
    return { statusCode: 200, body: r };
  },
);

export const claimRedrive = implement(claimsApi.claimRedrive, ['claims'], async ({ params, services }) => {
  return {
    statusCode: 200,
    body: await services.claims.redrive(params.queue, params.partition, params.group, params.offset),
  };
});

export const claimDiscard = implement(claimsApi.claimDiscard, ['claims'], async ({ params, services }) => {
  return {
    statusCode: 200,
    body: await services.claims.discard(params.queue, params.partition, params.group, params.offset),
  };
});

export const claimCreate = implement(claimsApi.claimCreate, ['claims'], async ({ params, body, services }) => {
  return {
    statusCode: 200,
    body: await services.claims.create(params.queue, params.partition, params.group, body.start),
  };
});

export const claimSeek = implement(claimsApi.claimSeek, ['claims'], async ({ params, body, services }) => {
  return {
    statusCode: 200,
    body: await services.claims.seek(params.queue, params.partition, params.group, body.start),
  };
});

export const claimDescribe = implement(claimsApi.claimDescribe, ['claims'], async ({ params, services }) => {
  const described = await services.claims.describe(params.queue, params.partition, params.group);
  return {
    statusCode: 200,
    body: {
      committed: described.committed,
      tail: described.tail,
      lag: described.lag,
      inFlight: described.inFlight,
      owed: described.owed,
      delayed: described.delayed,
      deadLetters: described.deadLetters,
    },
  };
});

export const claimDelete = implement(claimsApi.claimDelete, ['claims'], async ({ params, services }) => {
  return { statusCode: 200, body: await services.claims.deleteGroup(params.queue, params.partition, params.group) };
});

export const claimRoutes: RouteDef[] = [
  claimPoll,
  claimAck,
  claimNack,
  claimExtend,
  claimDeadLetter,
  claimListDeadLetters,
  claimRedrive,
  claimDiscard,
  claimCreate,
  claimSeek,
  claimDescribe,
  claimDelete,
];
