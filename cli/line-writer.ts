/**
 * Writing lines to stdout while knowing which of them got there, for commands that must act
 * only on what they wrote (`tail --group` acks only the lines it wrote out). A line counts as
 * written once the stream took it: for a pipe, once it is in the pipe's buffer, whether or not
 * the reader ever reads it. A reader that closes the pipe (`| head -3`: EPIPE) ends the writing,
 * quietly: that is how a pipeline says it has seen enough.
 */
import type { Out } from './format.js';

/** A stream that reports each write's outcome (Node's Writable); plain test outs do not. */
interface ReportingStream extends Out {
  write(s: string, cb?: (err?: Error | null) => void): unknown;
  on(event: 'error', listener: (e: Error) => void): unknown;
  off(event: 'error', listener: (e: Error) => void): unknown;
}

const reports = (out: Out): out is ReportingStream =>
  typeof (out as Partial<ReportingStream>).on === 'function' &&
  typeof (out as Partial<ReportingStream>).off === 'function';

/**
 * Writes lines to an output and counts those it took, in order, until it fails.
 *
 * @example
 * ```ts
 * const w = new LineWriter(io.stdout);
 * const n = await w.writeAll(messages.map(line)); // the first n were written
 * if (w.closed) stop(); // the reader went away
 * w.dispose();
 * ```
 */
export class LineWriter {
  private failure: Error | undefined;
  private readonly onError = (e: Error): void => void (this.failure ??= e);

  constructor(private readonly out: Out) {
    // Without a listener a stream's EPIPE would be an uncaught error (a stack trace, exit 1).
    if (reports(out)) out.on('error', this.onError);
  }

  /** True once a write failed: the reader closed the pipe, or the output broke. */
  get closed(): boolean {
    return this.failure !== undefined;
  }

  /** The failure, unless it was the reader closing the pipe (which is not an error for a pipeline). */
  get error(): Error | undefined {
    const failure: NodeJS.ErrnoException | undefined = this.failure;
    const code = failure?.code;
    return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' ? undefined : failure;
  }

  /** Writes each line (a newline is added); resolves with how many were written before a failure. */
  async writeAll(lines: readonly string[]): Promise<number> {
    if (this.closed) return 0;
    const out = this.out;
    if (!reports(out)) {
      for (const l of lines) out.write(`${l}\n`);
      return lines.length;
    }
    let written = 0;
    // Callbacks come in write order; after the first failure every later write fails too.
    const outcomes = lines.map(
      (l) =>
        new Promise<void>((resolve) =>
          out.write(`${l}\n`, (err) => {
            if (err) this.failure ??= err;
            else if (!this.closed) written++;
            resolve();
          }),
        ),
    );
    await Promise.all(outcomes);
    return written;
  }

  /** Stops listening for the output's errors. */
  dispose(): void {
    if (reports(this.out)) this.out.off('error', this.onError);
  }
}
