import { api } from '../api.js';
import { h, href, num, table } from '../dom.js';

/** A row of `GET /api/v1/consumer-groups`: one group on one queue. */
interface GroupRow {
  name: string;
  kind: 'lease' | 'claim';
  queueName: string;
  partitionsWithLag: number;
  totalLag: number;
  maxTimeLag: number;
  state: string;
}

/** `#/groups`: every consumer group, partition-lease and record-claim, with its lag per queue. */
export async function groupsView(root: HTMLElement): Promise<void> {
  const rows = await api<GroupRow[]>('GET', '/api/v1/consumer-groups');
  root.replaceChildren(
    h('h1', {}, 'Consumer groups'),
    rows.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'no-groups' }, 'No consumer groups yet.')
      : table(
          'consumer-groups',
          ['Group', 'Kind', 'Queue', 'Partitions behind', 'Lag (messages)', 'Lag (seconds)', 'State'],
          rows.map((g) =>
            h(
              'tr',
              { 'data-testid': `cg-row-${g.name}-${g.queueName}` },
              h('td', {}, g.name === '__QUEUE_MODE__' ? h('span', { class: 'muted' }, 'queue mode') : g.name),
              h('td', {}, g.kind === 'lease' ? 'partition lease' : 'record claims'),
              h('td', {}, h('a', { href: href('queues', g.queueName) }, g.queueName)),
              num(g.partitionsWithLag),
              num(g.totalLag, { 'data-testid': `cg-lag-${g.name}-${g.queueName}` }),
              num(g.maxTimeLag),
              h('td', {}, g.state),
            ),
          ),
          ['Partitions behind', 'Lag (messages)', 'Lag (seconds)'],
        ),
  );
}
