/** Terminal output helpers for the CLI: tables, a progress bar, durations. */

export interface Out {
  write(s: string): unknown;
  isTTY?: boolean;
}

/**
 * A plain-text table: a header row, columns padded to their widest cell, numbers right-aligned.
 *
 * @example
 * ```ts
 * table([['GROUP', 'LAG'], ['billing', 3]]); // "GROUP    LAG\nbilling    3\n"
 * ```
 */
export function table(rows: (string | number | null | undefined)[][]): string {
  if (rows.length === 0) return '';
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const numeric = (rows[0] ?? []).map(
    (_, i) =>
      rows.slice(1).length > 0 &&
      rows.slice(1).every((r) => typeof r[i] === 'number' || r[i] === null || r[i] === undefined),
  );
  const widths = (cells[0] ?? []).map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return (
    cells
      .map((r) =>
        r
          .map((c, i) => (numeric[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** `65` → `1m05s`; `3700` → `1h01m`. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/** A one-line JSON value, cut to `max` characters. */
export function brief(v: unknown, max = 120): string {
  const s = JSON.stringify(v) ?? 'undefined';
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * A progress bar on stderr. On a terminal it redraws one line; elsewhere (a pipe, a log) it
 * prints a line at most once a second and once at the end.
 */
export class Progress {
  private lastLine = -Infinity;
  private readonly started: number;

  constructor(
    private readonly out: Out,
    private readonly label: string,
    private total: number | undefined,
    private readonly now: () => number = Date.now,
    private readonly width = 30,
  ) {
    this.started = now();
  }

  setTotal(total: number | undefined): void {
    this.total = total;
  }

  render(done: number, extra = ''): string {
    const elapsed = Math.max(0.001, (this.now() - this.started) / 1000);
    const rate = done / elapsed;
    const tail = `${extra ? ` ${extra}` : ''} ${rate.toFixed(rate < 10 ? 1 : 0)}/s`;
    if (this.total === undefined || this.total <= 0) return `${this.label} ${done}${tail}`;
    const frac = Math.min(1, done / this.total);
    const filled = Math.round(frac * this.width);
    return `${this.label} [${'#'.repeat(filled)}${'.'.repeat(this.width - filled)}] ${done}/${this.total} ${Math.round(frac * 100)}%${tail}`;
  }

  update(done: number, extra = ''): void {
    const text = this.render(done, extra);
    if (this.out.isTTY) {
      this.out.write(`\r${text}\u001b[K`);
      return;
    }
    const t = this.now();
    if (t - this.lastLine >= 1000) {
      this.lastLine = t;
      this.out.write(`${text}\n`);
    }
  }

  finish(done: number, extra = ''): void {
    const text = this.render(done, extra);
    this.out.write(this.out.isTTY ? `\r${text}\u001b[K\n` : `${text}\n`);
  }
}

/** `250` → `250ms`; from a second up as {@link duration} writes it (`1m05s`). */
export function millisText(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)}ms` : duration(ms / 1000);
}

/** `1536` → `1.5 KB`; bytes in powers of 1024, one decimal. */
export function bytesText(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/**
 * The line `push` keeps on a terminal: messages pushed, their rate and, when the input's size
 * is known, the share read and the time left at the rate so far.
 *
 * @example
 * ```ts
 * pushStatus({ messages: 1200, bytesRead: 512, totalBytes: 1024, elapsedMs: 2000 });
 * // 'push 1200 messages 600/s 50% of 1.0 KB ETA 2s'
 * ```
 */
export function pushStatus(p: { messages: number; bytesRead: number; totalBytes?: number; elapsedMs: number }): string {
  const seconds = Math.max(0.001, p.elapsedMs / 1000);
  const rate = p.messages / seconds;
  let text = `push ${p.messages} messages ${rate.toFixed(rate < 10 ? 1 : 0)}/s`;
  if (p.totalBytes !== undefined && p.totalBytes > 0) {
    const frac = Math.min(1, p.bytesRead / p.totalBytes);
    text += ` ${Math.floor(frac * 100)}% of ${bytesText(p.totalBytes)}`;
    if (frac > 0 && frac < 1) text += ` ETA ${duration((seconds * (1 - frac)) / frac)}`;
  }
  return text;
}

/**
 * One status line redrawn in place on a terminal, at most every `everyMs`; {@link finish}
 * leaves it with a newline. Meant for terminals only: the caller makes none on a pipe.
 */
export class StatusLine {
  private last = -Infinity;

  constructor(
    private readonly out: Out,
    private readonly now: () => number = Date.now,
    private readonly everyMs = 100,
  ) {}

  update(text: string): void {
    const t = this.now();
    if (t - this.last < this.everyMs) return;
    this.last = t;
    this.out.write(`\r${text}\u001b[K`);
  }

  finish(text: string): void {
    this.out.write(`\r${text}\u001b[K\n`);
  }
}
