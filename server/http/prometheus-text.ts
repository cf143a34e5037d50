/**
 * Prometheus text exposition format 0.0.4: a small writer for the families `/metrics` serves
 * (counters, gauges, histograms with labels). Values are rendered at scrape time from what the
 * process keeps anyway, so nothing is kept per request for it.
 *
 * @example
 * ```ts
 * const w = new PromText();
 * w.family('queen_uptime_seconds', 'gauge', 'Seconds since the process started.');
 * w.sample('queen_uptime_seconds', {}, 12.5);
 * w.text(); // '# HELP queen_uptime_seconds ...\n# TYPE queen_uptime_seconds gauge\nqueen_uptime_seconds 12.5\n'
 * ```
 */

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels = Record<string, string>;

/** A label value escaped as the format requires: backslash, double quote and newline. */
const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
/** HELP text escaped: backslash and newline. */
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeLabel(labels[k] as string)}"`).join(',')}}`;
}

function valueText(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Number.POSITIVE_INFINITY) return '+Inf';
  if (v === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(v);
}

export class PromText {
  private readonly lines: string[] = [];
  private readonly declared = new Set<string>();

  /** Declares a family (HELP and TYPE), once; samples of it follow. */
  family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): this {
    if (this.declared.has(name)) return this;
    this.declared.add(name);
    this.lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    return this;
  }

  /** A family with one sample: `w.one('queen_dlq_depth', 'gauge', 'Dead letters.', {}, 3)`. */
  one(name: string, type: 'counter' | 'gauge', help: string, labels: Labels, value: number): this {
    return this.family(name, type, help).sample(name, labels, value);
  }

  sample(name: string, labels: Labels, value: number): this {
    this.lines.push(`${name}${labelText(labels)} ${valueText(value)}`);
    return this;
  }

  /** A histogram's samples from per-bucket (non-cumulative) counts; the last count is past every bound. */
  histogram(
    name: string,
    labels: Labels,
    h: { bounds: readonly number[]; counts: ArrayLike<number>; sum: number; count: number },
  ): this {
    let running = 0;
    h.bounds.forEach((le, i) => {
      running += h.counts[i] ?? 0;
      this.sample(`${name}_bucket`, { ...labels, le: valueText(le) }, running);
    });
    this.sample(`${name}_bucket`, { ...labels, le: '+Inf' }, h.count);
    this.sample(`${name}_sum`, labels, h.sum);
    this.sample(`${name}_count`, labels, h.count);
    return this;
  }

  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}
