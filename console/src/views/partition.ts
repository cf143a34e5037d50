import { api, seg } from '../api.js';
import { errorBox, h, href, json, num, table, when } from '../dom.js';
import type { GetMessageAnswer, LogMessage, LogPage, QueueDetail } from '../types.js';
import { consumerState, groupLink } from './queue.js';

const PAGE = 50;

function messageRow(m: LogMessage): HTMLElement {
  return h(
    'tr',
    { 'data-testid': `message-${m.offset}` },
    num(m.offset),
    h('td', {}, h('code', {}, m.transactionId)),
    h('td', {}, when(m.createdAt)),
    h('td', {}, json(m.data)),
  );
}

/**
 * `#/queues/{queue}/partitions/{partition}?from=N`: the groups on the partition, its messages
 * by offset (a page at a time, without consuming), and a lookup by transactionId.
 */
export async function partitionView(
  root: HTMLElement,
  [queue = '', partition = '']: string[],
  query: URLSearchParams,
): Promise<void> {
  const from = Math.max(0, Number(query.get('from') ?? 0) || 0);
  const [detail, page] = await Promise.all([
    api<QueueDetail>('GET', `/api/v1/resources/queues/${seg(queue)}`),
    api<LogPage>(
      'GET',
      `/api/v1/queues/${seg(queue)}/partitions/${seg(partition)}/messages?from=${from}&limit=${PAGE}`,
    ),
  ]);
  const p = detail.partitions.find((x) => x.name === partition);
  const here = href('queues', queue, 'partitions', partition);
  const groups = (p?.consumers ?? []).map((c) =>
    h(
      'tr',
      { 'data-testid': `group-row-${c.group}` },
      h('td', {}, groupLink(queue, partition, c)),
      h('td', {}, c.kind === 'lease' ? 'partition lease' : 'record claims'),
      num(c.nextOffset),
      num(c.lag, { 'data-testid': `group-lag-${c.group}` }),
      num(c.inFlight),
      h('td', { 'data-testid': `group-state-${c.group}` }, consumerState(c)),
    ),
  );

  const found = h('div', { 'data-testid': 'lookup-result' });
  const lookup = h(
    'form',
    {
      class: 'bar',
      'data-testid': 'lookup-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const tx = (lookup.querySelector('input') as HTMLInputElement).value.trim();
        if (!tx) return;
        found.replaceChildren('Looking up…');
        api<GetMessageAnswer>('GET', `/api/v1/messages/${seg(page.partitionId)}/${seg(tx)}`).then(
          (m) =>
            found.replaceChildren(
              table('lookup-table', ['Offset', 'transactionId', 'Created', 'Payload'], [messageRow(m)], ['Offset']),
            ),
          (err: unknown) => found.replaceChildren(errorBox(err)),
        );
      },
    },
    h('input', { name: 'transactionId', placeholder: 'transactionId', size: 40, 'data-testid': 'lookup-input' }),
    h('button', { type: 'submit', 'data-testid': 'lookup-submit' }, 'Find message'),
  );

  const jump = h(
    'form',
    {
      class: 'bar',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const v = (jump.querySelector('input') as HTMLInputElement).value;
        location.hash = `${here}?from=${Math.max(0, Number(v) || 0)}`;
      },
    },
    'From offset ',
    h('input', { type: 'number', min: 0, value: from, name: 'from', 'data-testid': 'from-input' }),
    h('button', { type: 'submit', 'data-testid': 'from-submit' }, 'Go'),
    from > 0
      ? h('a', { href: `${here}?from=${Math.max(0, from - PAGE)}`, 'data-testid': 'page-prev' }, '← earlier')
      : null,
    page.messages.length === PAGE
      ? h('a', { href: `${here}?from=${page.next}`, 'data-testid': 'page-next' }, 'later →')
      : null,
  );

  root.replaceChildren(
    h(
      'div',
      { class: 'crumbs' },
      h('a', { href: '#/' }, 'Queues'),
      ' / ',
      h('a', { href: href('queues', queue) }, queue),
      ' / ',
      partition,
    ),
    h('h1', { 'data-testid': 'partition-title' }, `Partition ${partition}`),
    h(
      'p',
      { class: 'muted' },
      p
        ? `offsets ${p.firstOffset} to ${p.nextOffset - 1}; ${p.messages.pending} pending, ${p.messages.processing} processing`
        : '',
    ),
    h('h2', {}, 'Consumer groups'),
    groups.length === 0
      ? h('p', { class: 'muted' }, 'No group has read this partition yet.')
      : table('groups', ['Group', 'Kind', 'Next offset', 'Lag', 'In flight', 'State'], groups, [
          'Next offset',
          'Lag',
          'In flight',
        ]),
    h('h2', {}, 'Find by transactionId'),
    lookup,
    found,
    h('h2', {}, 'Messages'),
    jump,
    page.messages.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'no-messages' }, `No messages from offset ${from}.`)
      : table('messages', ['Offset', 'transactionId', 'Created', 'Payload'], page.messages.map(messageRow), ['Offset']),
  );
}
