/** A few lines of DOM building, so the views read as markup without a framework. */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | ((e: Event) => void) | undefined>;

/**
 * Creates an element: attributes (`on*` ones as listeners, booleans as presence) and children.
 *
 * @example
 * ```ts
 * h('button', { 'data-testid': 'retry', onclick: () => retry() }, 'Retry');
 * ```
 */
export function h(tag: string, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  }
  return el;
}

/** A table from a header row and body rows. */
export function table(testid: string, head: string[], rows: HTMLElement[], numeric: string[] = []): HTMLElement {
  return h(
    'table',
    { 'data-testid': testid },
    h('thead', {}, h('tr', {}, ...head.map((c) => h('th', numeric.includes(c) ? { class: 'num' } : {}, c)))),
    h('tbody', {}, ...rows),
  );
}

/** A numeric table cell. */
export const num = (v: number | string | null | undefined, attrs: Attrs = {}): HTMLElement =>
  h('td', { class: 'num', ...attrs }, v ?? '–');

/** A JSON payload, pretty-printed. */
export const json = (v: unknown): HTMLElement => h('pre', {}, JSON.stringify(v, null, 2));

/** `#/a/b` from path segments, each encoded. */
export const href = (...parts: string[]): string => `#/${parts.map(encodeURIComponent).join('/')}`;

/** A short local time for an ISO instant. */
export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '–');

/** An error box (the API's message). */
export const errorBox = (e: unknown): HTMLElement =>
  h('div', { class: 'error', 'data-testid': 'error', role: 'alert' }, e instanceof Error ? e.message : String(e));
