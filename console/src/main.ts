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

/**
 * Path patterns (`:x` captures a segment) to views, first match wins. `live`: a list the Live
 * toggle reloads; views with forms and actions (messages, dead letters) reload only when asked,
 * so a reload never wipes what the user is typing or an action's result.
 */
const ROUTES: [string[], View, { live: boolean }][] = [
  [[], queuesView, { live: true }],
  [['dlq'], dlqView, { live: false }],
  [['groups'], groupsView, { live: true }],
  [['queues', ':queue'], queueView, { live: true }],
  [['queues', ':queue', 'partitions', ':partition'], partitionView, { live: false }],
  [['queues', ':queue', 'partitions', ':partition', 'groups', ':group'], groupView, { live: true }],
];

/** How often Live reloads a list view. */
const LIVE_MS = 5_000;

function match(parts: string[]): { view: View; params: string[]; live: boolean } | undefined {
  for (const [pattern, view, { live }] of ROUTES) {
    if (pattern.length !== parts.length) continue;
    const params: string[] = [];
    if (pattern.every((p, i) => (p.startsWith(':') ? (params.push(parts[i] ?? ''), true) : p === parts[i])))
      return { view, params, live };
  }
  return undefined;
}

function currentRoute(): { found: ReturnType<typeof match>; qs: string } {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', qs = ''] = hash.split('?');
  const parts = path === '' ? [] : path.split('/').map(decodeURIComponent);
  return { found: match(parts), qs };
}

const root = document.getElementById('app') as HTMLElement;
const tokenForm = document.getElementById('token-form') as HTMLFormElement;

let rendering = 0;
async function render(): Promise<void> {
  const mine = ++rendering;
  const { found, qs } = currentRoute();
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

const live = document.getElementById('live') as HTMLInputElement;
live.checked = localStorage.getItem('sluice.console.live') === 'true';
live.addEventListener('change', () => localStorage.setItem('sluice.console.live', String(live.checked)));
(document.getElementById('refresh') as HTMLButtonElement).addEventListener('click', () => void render());
setInterval(() => {
  // Not while hidden, while a render is under way, or on a view with forms.
  if (!live.checked || document.hidden || root.hasAttribute('aria-busy') || !currentRoute().found?.live) return;
  void render();
}, LIVE_MS);
void render();
