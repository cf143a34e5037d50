import { describe, expect, it } from 'vitest';
import {
  CONNECTION_MAX_MS,
  TICKET_TTL_MS,
  WAIT_HOLD_MS,
  newTicket,
  newWait,
  partitionsOfSequencerKeys,
  ticketRefusal,
  waitRefusal,
} from '../../server/core/notifications.js';

const NOW = 1_800_000_000_000;

describe('notification tickets', () => {
  it('are valid until their expiry, compared with now', () => {
    const t = newTicket({ principal: 'alice', queues: ['orders', 'orders', 'bills'] }, NOW);
    expect(t.queues).toEqual(['orders', 'bills']);
    expect(ticketRefusal(t, NOW)).toBeUndefined();
    expect(ticketRefusal(t, NOW + TICKET_TTL_MS - 1)).toBeUndefined();
    expect(ticketRefusal(t, NOW + TICKET_TTL_MS)).toBe('ticket expired');
    expect(ticketRefusal(undefined, NOW)).toBe('unknown or already used ticket');
  });

  it('refuse a ticket dated well in the future', () => {
    expect(ticketRefusal(newTicket({ principal: 'a', queues: ['q'] }, NOW + 120_000), NOW)).toBe(
      'ticket issued in the future',
    );
  });
});

describe('waits', () => {
  const conn = { principal: 'alice', queues: ['orders'], connectedAt: NOW };

  it('may be registered only on a queue the ticket named, while the connection lives', () => {
    expect(waitRefusal(conn, 'orders', NOW + 1)).toBeUndefined();
    expect(waitRefusal(conn, 'bills', NOW + 1)).toBe('the ticket did not name this queue');
    expect(waitRefusal(conn, 'orders', NOW + CONNECTION_MAX_MS)).toBe('connection expired');
    expect(waitRefusal(undefined, 'orders', NOW)).toBe('unknown connection');
  });

  it('hold for WAIT_HOLD_MS and name their group when the client does', () => {
    expect(newWait('a', NOW)).toEqual({ connectionId: 'a', until: NOW + WAIT_HOLD_MS });
    expect(newWait('a', NOW, 'billing')).toEqual({ connectionId: 'a', until: NOW + WAIT_HOLD_MS, group: 'billing' });
  });

  it('are woken by sequencer keys only, a partition once per batch', () => {
    expect(partitionsOfSequencerKeys(['SEQ#p1', 'p1', 'SEQ#p2', 'SEQ#p1', 'M#x'])).toEqual(['p1', 'p2']);
  });
});
