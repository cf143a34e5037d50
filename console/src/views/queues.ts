import { api } from '../api.js';
import { h, href, num, table } from '../dom.js';
import type { QueueRow } from '../types.js';

/** `#/`: every queue the caller may see, with its counters. */
export async function queuesView(root: HTMLElement): Promise<void> {
  const { queues } = await api<{ queues: QueueRow[] }>('GET', '/api/v1/resources/queues');
  const rows = queues.map((q) =>
    h(
      'tr',
      { 'data-testid': `queue-row-${q.name}` },
      h('td', {}, h('a', { href: href('queues', q.name), 'data-testid': `queue-link-${q.name}` }, q.name)),
      h('td', {}, [q.namespace, q.task].filter(Boolean).join(' / ') || '–'),
      num(q.partitionCount),
      num(q.messages.total),
      num(q.messages.pending),
      num(q.messages.processing),
      num(q.messages.completed),
      h('td', {}, h('a', { href: `#/dlq?queue=${encodeURIComponent(q.name)}` }, 'dead letters')),
    ),
  );
  root.replaceChildren(
    h('h1', {}, 'Queues'),
    queues.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'no-queues' }, 'No queues yet (or none this token may read).')
      : table(
          'queues',
          ['Queue', 'Namespace / task', 'Partitions', 'Messages', 'Pending', 'Processing', 'Completed', ''],
          rows,
          ['Partitions', 'Messages', 'Pending', 'Processing', 'Completed'],
        ),
  );
}
