/**
 * The Sluice console: a hash-routed page over the HTTP API (see docs/ARCHITECTURE.md, Console).
 * Each route renders one view into `#app`; a 401 shows the bearer-token form.
 */
import { ApiError, saveToken, savedToken } from './api.js';
import { errorBox, h } from './dom.js';
import { dlqView } from './views/dlq.js';
import { groupView } from './views/group.js';
import { groupsView } from './views/groups.js';
import { partitionView } from './views/partition.js';
import { queueView } from './views/queue.js';
import { queuesView } from './views/queues.js';

type View = (root: HTMLElement, params: string[], query: URLSearchParams) => Promise<void>;

/** Path patterns (`:x` captures a segment) to views, first match wins. */
const ROUTES: [string[], View][] = [
  [[], queuesView],
  [['dlq'], dlqView],
  [['groups'], groupsView],
  [['queues', ':queue'], queueView],
  [['queues', ':queue', 'partitions', ':partition'], partitionView],
  [['queues', ':queue', 'partitions', ':partition', 'groups', ':group'], groupView],
];

function match(parts: string[]): { view: View; params: string[] } | undefined {
  for (const [pattern, view] of ROUTES) {
    if (pattern.length !== parts.length) continue;
    const params: string[] = [];
    if (pattern.every((p, i) => (p.startsWith(':') ? (params.push(parts[i] ?? ''), true) : p === parts[i])))
      return { view, params };
  }
  return undefined;
}

const root = document.getElementById('app') as HTMLElement;
const tokenForm = document.getElementById('token-form') as HTMLFormElement;

let rendering = 0;
async function render(): Promise<void> {
  const mine = ++rendering;
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', qs = ''] = hash.split('?');
  const parts = path === '' ? [] : path.split('/').map(decodeURIComponent);
  const found = match(parts);
  root.setAttribute('aria-busy', 'true');
  try {
    if (!found) root.replaceChildren(h('h1', {}, 'Not found'), h('a', { href: '#/' }, 'Queues'));
    else await found.view(root, found.params, new URLSearchParams(qs));
  } catch (e) {
    if (mine !== rendering) return;
    if (e instanceof ApiError && e.status === 401) tokenForm.hidden = false;
    root.replaceChildren(errorBox(e));
  } finally {
    if (mine === rendering) root.removeAttribute('aria-busy');
  }
}

tokenForm.hidden = savedToken() === undefined;
tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  saveToken((tokenForm.elements.namedItem('token') as HTMLInputElement).value.trim());
  void render();
});
window.addEventListener('hashchange', () => void render());
void render();
