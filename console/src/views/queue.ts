import { api, seg } from '../api.js';
import { h, href, num, table, when } from '../dom.js';
import type { PartitionConsumer, QueueDetail } from '../types.js';

/** The state of one group on one partition: a live lease, claims in flight, or idle. */
export function consumerState(c: PartitionConsumer): string {
  if (c.kind === 'lease')
    return c.leaseExpiresAt && Date.parse(c.leaseExpiresAt) > Date.now()
      ? `leased until ${when(c.leaseExpiresAt)}`
      : 'no lease';
  return c.inFlight > 0 ? `${c.inFlight} claimed` : 'no claims';
}

/** A group's link: a record-claim group to its own view, a lease group to its partition. */
export function groupLink(queue: string, partition: string, c: PartitionConsumer): HTMLElement {
  return c.kind === 'claim'
    ? h(
        'a',
        {
          href: href('queues', queue, 'partitions', partition, 'groups', c.group),
          'data-testid': `claim-link-${c.group}`,
        },
        c.group,
      )
    : h('span', {}, c.group);
}

/** `#/queues/{queue}`: its partitions and, per partition, every group's position and lag. */
export async function queueView(root: HTMLElement, [queue = '']: string[]): Promise<void> {
  const q = await api<QueueDetail>('GET', `/api/v1/resources/queues/${seg(queue)}`);
  const rows = q.partitions.map((p) =>
    h(
      'tr',
      { 'data-testid': `partition-row-${p.name}` },
      h(
        'td',
        {},
        h(
          'a',
          { href: href('queues', queue, 'partitions', p.name), 'data-testid': `partition-link-${p.name}` },
          p.name,
        ),
      ),
      num(p.messages.total),
      num(p.messages.pending),
      num(p.messages.processing),
      num(p.nextOffset),
      h('td', {}, when(p.lastActivity)),
      h(
        'td',
        {},
        p.consumers.length === 0
          ? h('span', { class: 'muted' }, 'none')
          : h(
              'ul',
              {},
              ...p.consumers.map((c) =>
                h(
                  'li',
                  { 'data-testid': `consumer-${p.name}-${c.group}` },
                  groupLink(queue, p.name, c),
                  ` (${c.kind}) lag ${c.lag}, ${consumerState(c)}`,
                ),
              ),
            ),
      ),
    ),
  );
  root.replaceChildren(
    h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queues'), ' / ', queue),
    h('h1', { 'data-testid': 'queue-title' }, `Queue ${q.name}`),
    h(
      'div',
      { class: 'cards' },
      ...(['total', 'pending', 'processing', 'completed', 'deadLetter'] as const).map((k) =>
        h('div', { class: 'card', 'data-testid': `total-${k}` }, h('b', {}, q.totals[k] ?? 0), k),
      ),
    ),
    h(
      'div',
      { class: 'bar' },
      h('a', { href: `#/dlq?queue=${encodeURIComponent(queue)}` }, 'Dead letters of this queue'),
    ),
    h('h2', {}, 'Partitions'),
    table(
      'partitions',
      ['Partition', 'Messages', 'Pending', 'Processing', 'Next offset', 'Last activity', 'Groups (lag, state)'],
      rows,
      ['Messages', 'Pending', 'Processing', 'Next offset'],
    ),
  );
}
