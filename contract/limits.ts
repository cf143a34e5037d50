/**
 * Limits and patterns the API states on the wire: the route schemas refuse requests past them,
 * and the server's own checks read the same values.
 */

/** Most offsets one claim ack may carry. */
export const MAX_ACK_OFFSETS = 1000;
/** Most queues one notification ticket may name. */
export const MAX_TICKET_QUEUES = 20;
/** Most dead letters one bulk redrive moves. */
export const MAX_REDRIVE = 500;

/** Producer ids: 1 to 64 of `A-Z a-z 0-9 . _ -` (they sort and compare as ASCII in the slots). */
export const PRODUCER_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
