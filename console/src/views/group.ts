import { api, seg } from '../api.js';
import { errorBox, h, href, json, num, table } from '../dom.js';
import type { ClaimGroup, LogPage } from '../types.js';

/**
 * `#/queues/{queue}/partitions/{partition}/groups/{group}`: a record-claim group — where its
 * cursor stands, what is in flight, owed and delayed — and its dead letters, each with the
 * record's payload, redrive and discard.
 */
export async function groupView(root: HTMLElement, [queue = '', partition = '', group = '']: string[]): Promise<void> {
  const base = `/api/v1/queues/${seg(queue)}/partitions/${seg(partition)}/groups/${seg(group)}`;
  const [g, dead] = await Promise.all([
    api<ClaimGroup>('GET', base),
    api<{ offsets: number[] }>('GET', `${base}/dead-letters?limit=200`),
  ]);
  // One read per dead letter for its payload (at most a page of them).
  const records = await Promise.all(
    dead.offsets.map((o) =>
      api<LogPage>('GET', `/api/v1/queues/${seg(queue)}/partitions/${seg(partition)}/messages?from=${o}&limit=1`).then(
        (p) => p.messages.find((m) => m.offset === o),
        () => undefined,
      ),
    ),
  );
  const status = h('div', { 'data-testid': 'group-status', role: 'status' });
  const refresh = (): void =>
    void groupView(root, [queue, partition, group]).catch((e: unknown) => root.append(errorBox(e)));
  const action = (label: string, testid: string, run: () => Promise<unknown>): HTMLElement => {
    const b = h('button', { 'data-testid': testid }, label) as HTMLButtonElement;
    b.addEventListener('click', () => {
      b.disabled = true;
      run().then(refresh, (e: unknown) => {
        b.disabled = false;
        status.replaceChildren(errorBox(e));
      });
    });
    return b;
  };
  const rows = dead.offsets.map((o, i) =>
    h(
      'tr',
      { 'data-testid': `claim-dead-${o}` },
      num(o),
      h('td', {}, records[i] ? h('code', {}, records[i].transactionId) : '–'),
      h('td', {}, records[i] ? json(records[i].data) : h('span', { class: 'muted' }, 'no longer in the log')),
      h(
        'td',
        {},
        action('Redrive', `claim-redrive-${o}`, () => api('POST', `${base}/dead-letters/${o}/redrive`)),
        ' ',
        action('Discard', `claim-discard-${o}`, () => api('DELETE', `${base}/dead-letters/${o}`)),
      ),
    ),
  );
  const card = (k: keyof ClaimGroup, label: string): HTMLElement =>
    h('div', { class: 'card', 'data-testid': `claim-${k}` }, h('b', {}, g[k]), label);
  root.replaceChildren(
    h(
      'div',
      { class: 'crumbs' },
      h('a', { href: '#/' }, 'Queues'),
      ' / ',
      h('a', { href: href('queues', queue) }, queue),
      ' / ',
      h('a', { href: href('queues', queue, 'partitions', partition) }, partition),
      ' / ',
      group,
    ),
    h('h1', { 'data-testid': 'group-title' }, `Record-claim group ${group}`),
    h(
      'div',
      { class: 'cards' },
      card('inFlight', 'in flight'),
      card('owed', 'owed'),
      card('delayed', 'delayed'),
      card('deadLetters', 'dead letters'),
      card('lag', 'lag'),
      card('committed', 'committed'),
      card('tail', 'tail'),
    ),
    status,
    h('h2', {}, 'Dead letters'),
    rows.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'claim-dead-empty' }, 'No dead letters.')
      : table('claim-dead-letters', ['Offset', 'transactionId', 'Payload', ''], rows, ['Offset']),
  );
}
