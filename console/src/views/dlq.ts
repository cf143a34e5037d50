import { api, seg } from '../api.js';
import { errorBox, h, json, table, when } from '../dom.js';
import type { DeadLetter, QueueRow, RedrivePage } from '../types.js';

/** Queue mode's internal group name, which the API takes as "no group". */
const QUEUE_MODE = '__QUEUE_MODE__';
/** Dead letters replayed per request of a bulk redrive: small enough that progress moves. */
const REDRIVE_PAGE = 10;

const groupQuery = (g: string): string => (g === QUEUE_MODE ? '' : `?consumerGroup=${encodeURIComponent(g)}`);

/**
 * `#/dlq?queue=Q`: a queue's dead letters (of partition-lease groups and queue mode), each with
 * retry and delete, and a bulk redrive that pages through them showing its progress.
 */
export async function dlqView(root: HTMLElement, params: string[], query: URLSearchParams): Promise<void> {
  const queue = query.get('queue') ?? '';
  const { queues } = await api<{ queues: QueueRow[] }>('GET', '/api/v1/resources/queues');
  const picker = h(
    'select',
    {
      'data-testid': 'dlq-queue',
      onchange: () => (location.hash = `#/dlq?queue=${encodeURIComponent((picker as HTMLSelectElement).value)}`),
    },
    h('option', { value: '' }, 'every queue'),
    ...queues.map((q) => h('option', { value: q.name, selected: q.name === queue }, q.name)),
  );
  const list = await api<{ messages: DeadLetter[] }>(
    'GET',
    `/api/v1/dlq?limit=1000${queue ? `&queue=${encodeURIComponent(queue)}` : ''}`,
  );
  const status = h('div', { 'data-testid': 'dlq-status', role: 'status' });
  const refresh = (): void => void dlqView(root, params, query).catch((e: unknown) => root.append(errorBox(e)));

  const act = (button: HTMLElement, run: () => Promise<string>): void => {
    (button as HTMLButtonElement).disabled = true;
    run().then(
      (msg) => {
        // Shown by the re-render, which replaces this page.
        sessionStorage.setItem('sluice.console.notice', msg);
        refresh();
      },
      (e: unknown) => {
        (button as HTMLButtonElement).disabled = false;
        status.replaceChildren(errorBox(e));
      },
    );
  };

  const rows = list.messages.map((m) => {
    const retry = h('button', { 'data-testid': `dlq-retry-${m.transactionId}` }, 'Retry');
    const del = h('button', { 'data-testid': `dlq-delete-${m.transactionId}` }, 'Delete');
    const path = `/api/v1/messages/${seg(m.partitionId)}/${seg(m.transactionId)}`;
    retry.addEventListener('click', () =>
      act(retry, async () => {
        const r = await api<{ transactionId: string }>('POST', `${path}/retry${groupQuery(m.consumerGroup)}`);
        return `Retried ${m.transactionId} as ${r.transactionId}`;
      }),
    );
    del.addEventListener('click', () => {
      if (!confirm(`Delete the dead letter ${m.transactionId}? The message stays in the log.`)) return;
      act(del, async () => {
        // Queen's shape: a row already gone is 200 with success false, not an error status.
        const r = await api<{ success: boolean; message: string }>('DELETE', `${path}${groupQuery(m.consumerGroup)}`);
        if (!r.success) throw new Error(r.message);
        return `Deleted ${m.transactionId}`;
      });
    });
    return h(
      'tr',
      { 'data-testid': `dlq-row-${m.transactionId}` },
      h('td', {}, m.queue, ' / ', m.partition),
      h('td', {}, m.consumerGroup === QUEUE_MODE ? h('span', { class: 'muted' }, 'queue mode') : m.consumerGroup),
      h('td', {}, h('code', {}, m.transactionId)),
      h('td', {}, m.errorMessage ?? ''),
      h('td', {}, when(m.failedAt)),
      h('td', {}, json(m.data)),
      h('td', {}, retry, ' ', del),
    );
  });

  const progress = h('progress', {
    max: 1,
    value: 0,
    'data-testid': 'redrive-progress',
    hidden: true,
  }) as HTMLProgressElement;
  const progressText = h('span', { 'data-testid': 'redrive-progress-text' });
  const redrive = h(
    'button',
    { 'data-testid': 'redrive-all', disabled: !queue || list.messages.length === 0 },
    'Redrive all',
  );
  redrive.addEventListener('click', () => {
    const total = list.messages.length;
    if (!confirm(`Replay every dead letter of ${queue} (${total})?`)) return;
    (redrive as HTMLButtonElement).disabled = true;
    progress.hidden = false;
    progress.max = total;
    void (async () => {
      let moved = 0;
      let failed = 0;
      let after: string | undefined;
      try {
        for (;;) {
          const page = await api<RedrivePage>('POST', '/api/v1/dlq/retry', {
            queue,
            limit: REDRIVE_PAGE,
            ...(after ? { after } : {}),
          });
          moved += page.moved;
          failed += page.failed;
          progress.value = Math.min(moved + failed, total);
          progressText.textContent = `${moved} of ${total} redriven${failed ? `, ${failed} failed` : ''}`;
          if (!page.more || !page.next) break;
          after = page.next;
        }
        progressText.textContent = `Redrive done: ${moved} redriven${failed ? `, ${failed} failed` : ''}`;
        progressText.setAttribute('data-done', 'true');
      } catch (e) {
        status.replaceChildren(errorBox(e));
        (redrive as HTMLButtonElement).disabled = false;
      }
    })();
  });

  const notice = sessionStorage.getItem('sluice.console.notice');
  sessionStorage.removeItem('sluice.console.notice');
  if (notice) status.replaceChildren(h('div', { class: 'notice' }, notice));
  root.replaceChildren(
    h('h1', {}, 'Dead letters'),
    h(
      'div',
      { class: 'bar' },
      'Queue ',
      picker,
      redrive,
      progress,
      progressText,
      h(
        'a',
        { href: '#', 'data-testid': 'dlq-reload', onclick: (e: Event) => (e.preventDefault(), refresh()) },
        'reload',
      ),
    ),
    status,
    list.messages.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'dlq-empty' }, 'No dead letters.')
      : table('dlq', ['Queue / partition', 'Group', 'transactionId', 'Error', 'Failed', 'Payload', ''], rows),
  );
}
