/**
 * Message commands: `push` (JSON lines in, batched), `pop` (one lease, acked) and `tail`
 * (follow a queue without consuming it, or consume it as a group with --group).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Option, type Command } from 'commander';
import type { Sluice } from '../../client/sluice.js';
import type { AckStatus, Message, PushItem, ReadMessage } from '../../client/types.js';
import type { CommandContext } from '../command.js';
import { EXIT, UsageError } from '../errors.js';
import { requirePartition, requireQueue } from '../exists.js';
import { follow } from '../follow.js';
import { brief, pushStatus, StatusLine } from '../format.js';
import { LineWriter } from '../line-writer.js';
import {
  ACK_STATUSES,
  batchOption,
  durationOption,
  groupOption,
  int,
  noProgressOption,
  partitionOption,
  positive,
  waitOption,
} from '../options.js';

/** Registers `push`, `pop` and `tail`. */
export function messageCommands(program: Command, ctx: CommandContext): void {
  const { io, out, printJson, json, client, setExit } = ctx;

  // ------------------------------------------------------------------ push
  program
    .command('push')
    .description('Push JSON lines (one message payload per line) from stdin or a file, in batches.')
    .argument('<queue>', 'queue name (created if new)')
    .addOption(partitionOption('partition', 'Default'))
    .option('-f, --file <path>', 'read lines from this file instead of stdin ("-" for stdin)')
    .addOption(batchOption('messages per request', 1000))
    .option('--envelope', 'each line is {data, transactionId?, partition?, traceId?} rather than the payload itself')
    .option('--id-field <field>', "use this field of each line's object as its transactionId (dedup key)")
    .addOption(noProgressOption('no progress line (there is none unless stderr is a terminal)'))
    .action(
      async (
        queue: string,
        o: {
          partition: string;
          file?: string;
          batch: number;
          envelope?: boolean;
          idField?: string;
          progress: boolean;
        },
        cmd: Command,
      ) => {
        const sluice = client(cmd);
        const q = sluice.queue(queue).partition(o.partition);
        const fromFile = o.file !== undefined && o.file !== '-';
        const input = fromFile ? createReadStream(o.file as string) : io.stdin;
        let totalBytes = io.stdinBytes;
        if (fromFile) {
          await new Promise<void>((resolve, reject) => {
            (input as ReturnType<typeof createReadStream>)
              .once('open', () => resolve())
              .once('error', (e) => reject(new UsageError(`cannot read ${o.file}: ${e.message}`)));
          });
          totalBytes = (await stat(o.file as string)).size;
        }
        const totals = { lines: 0, queued: 0, duplicate: 0, failed: 0 };
        // Progress only for a person watching: on a terminal, never into a pipe or a log.
        const status = o.progress && io.stderr.isTTY ? new StatusLine(io.stderr) : undefined;
        const started = Date.now();
        let bytesRead = 0;
        const show = (): string =>
          pushStatus({
            messages: totals.queued + totals.duplicate + totals.failed,
            bytesRead,
            ...(totalBytes !== undefined ? { totalBytes } : {}),
            elapsedMs: Date.now() - started,
          });

        let batch: PushItem[] = [];
        const flush = async (): Promise<void> => {
          if (batch.length === 0) return;
          const results = await q.push(batch, { throwOnFailure: false });
          for (const r of results) totals[r.status]++;
          for (const r of results.filter((x) => x.status === 'failed').slice(0, 5))
            io.stderr.write(
              `${status ? '\n' : ''}item ${totals.lines - batch.length + r.index + 1} failed: ${r.error ?? 'unknown error'}\n`,
            );
          batch = [];
          status?.update(show());
        };
        try {
          for await (const { line, value, bytes } of jsonLines(input)) {
            bytesRead += bytes;
            let item: PushItem;
            if (o.envelope) {
              if (!value || typeof value !== 'object' || Array.isArray(value))
                throw new UsageError(
                  `line ${line}: --envelope lines must be objects like {"data": …, "transactionId": "…"}`,
                );
              item = value;
              if (!('data' in item) && !('payload' in item)) item = { ...item, data: null };
            } else {
              item = { data: value };
              if (o.idField) {
                const id =
                  value && typeof value === 'object' ? (value as Record<string, unknown>)[o.idField] : undefined;
                if (typeof id !== 'string' && typeof id !== 'number')
                  throw new UsageError(`line ${line}: no string or number field "${o.idField}" for --id-field`);
                item.transactionId = String(id);
              }
            }
            batch.push(item);
            totals.lines++;
            if (batch.length >= o.batch) await flush();
          }
          await flush();
          status?.finish(show());
        } catch (e) {
          if (status) io.stderr.write('\n');
          if (e instanceof UsageError && totals.lines > 0)
            e.message +=
              ` (${totals.queued + totals.duplicate} earlier lines were pushed; pushing the file again is ` +
              `safe only with --id-field or --envelope transactionIds)`;
          throw e;
        }
        if (json(cmd)) printJson({ queue, partition: o.partition, ...totals });
        else
          out(
            `pushed ${totals.lines} messages to ${queue}/${o.partition}: ${totals.queued} queued, ${totals.duplicate} duplicate, ${totals.failed} failed\n`,
          );
        if (totals.failed > 0) setExit(EXIT.api);
      },
    );

  // ------------------------------------------------------------------- pop
  program
    .command('pop')
    .description('Pop one batch (a lease) and ack it; prints the messages.')
    .argument('<queue>')
    .addOption(partitionOption('only this partition (default: any with work)'))
    .addOption(groupOption('consumer group (default: queue mode)'))
    .addOption(batchOption('messages at most', 1))
    .addOption(waitOption('long-poll up to this long for messages (0: answer at once)'))
    .addOption(new Option('--status <status>', 'ack status').choices(ACK_STATUSES).default('completed'))
    .option('--no-ack', 'leave the messages leased (they return when the lease lapses)')
    .addOption(
      durationOption('--lease <duration>', "lease length, whole seconds (default: the queue's leaseTime)", {
        min: 1000,
      }),
    )
    .action(
      async (
        queue: string,
        o: {
          partition?: string;
          group?: string;
          batch: number;
          wait: number;
          status: AckStatus;
          ack: boolean;
          lease?: number;
        },
        cmd: Command,
      ) => {
        const sluice = client(cmd);
        let q = sluice
          .queue(queue)
          .batch(o.batch)
          .wait(o.wait > 0)
          .timeout(o.wait || 30_000);
        if (o.partition) q = q.partition(o.partition);
        if (o.group) q = q.group(o.group);
        if (o.lease) q = q.leaseSeconds(Math.ceil(o.lease / 1000));
        const msgs = await q.pop();
        if (o.ack && msgs.length > 0) {
          const results = await sluice.ack(msgs, o.status);
          const bad = results.filter((r) => !r.success);
          if (bad.length > 0) io.stderr.write(`warning: ${bad.length} ack(s) not applied: ${bad[0]?.error ?? ''}\n`);
        }
        // Nothing answered: one more request tells an empty queue (or partition) from one that
        // does not exist; a pop that got messages pays nothing for it.
        if (msgs.length === 0)
          await (o.partition ? requirePartition(sluice, queue, o.partition) : requireQueue(sluice, queue));
        if (json(cmd)) printJson(msgs);
        else if (msgs.length === 0)
          io.stderr.write(`no messages available in ${queue}${o.partition ? `/${o.partition}` : ''}\n`);
        else for (const m of msgs) out(`${messageLine(m)}\n`);
      },
    );

  // ------------------------------------------------------------------ tail
  program
    .command('tail')
    .description(
      'Follow a queue: print its messages as they come, consuming nothing. With --group, consume as that group: pop, print, and ack what was written out (Ctrl-C stops cleanly).',
    )
    .argument('<queue>')
    .addOption(partitionOption('only this partition'))
    .addOption(groupOption('consume as this consumer group (acks what it writes out); without it, nothing is consumed'))
    .addOption(batchOption('messages per pop or read', 1000))
    .option('--limit <n>', 'stop after this many messages', positive('limit'))
    .addOption(durationOption('--idle <duration>', 'stop after this long without a message', { min: 1 }))
    .option('--peek', 'follow without consuming (the default without --group; kept for scripts)')
    .option('--from <offset>', 'without --group, with --partition: first offset to read', int('from'))
    .action(
      async (
        queue: string,
        o: {
          partition?: string;
          group?: string;
          batch: number;
          limit?: number;
          idle?: number;
          peek?: boolean;
          from?: number;
        },
        cmd: Command,
      ) => {
        // Validated before anything is read or leased.
        if (o.group !== undefined && o.peek)
          throw new UsageError('tail --peek consumes nothing: drop --group, or --peek');
        if (o.group !== undefined && o.from !== undefined)
          throw new UsageError('tail --from reads without a group: drop --group (a group reads from its cursor)');
        if (o.from !== undefined && o.partition === undefined)
          throw new UsageError('tail --from is an offset in one partition: add --partition <name>');
        const sluice = client(cmd);
        // tail long-polls until stopped, so what it names is checked first, once: the partition
        // listing when a partition is named (it also proves the queue), else the queue.
        await (o.partition
          ? requirePartition(sluice, queue, o.partition, io.signal)
          : requireQueue(sluice, queue, io.signal));
        const asJson = json(cmd);
        const line = (m: ReadMessage): string => (asJson ? JSON.stringify(m) : messageLine(m));
        const writer = new LineWriter(io.stdout);
        const stop = new AbortController();
        const onAbort = (): void => stop.abort();
        io.signal?.addEventListener('abort', onAbort, { once: true });
        // A signal that aborted already (Ctrl-C while the queue was looked up) fires no event.
        if (io.signal?.aborted) stop.abort();
        const closedNote = (): string => (writer.closed ? '; the reader closed the output' : '');
        try {
          if (o.group === undefined) {
            io.stderr.write(
              `tail: following ${queue}${o.partition ? `/${o.partition}` : ''} without consuming it (nothing is acked; --group <name> consumes)\n`,
            );
            const r = await follow(sluice, {
              queue,
              ...(o.partition !== undefined ? { partition: o.partition } : {}),
              ...(o.from !== undefined ? { from: o.from } : {}),
              batch: o.batch,
              ...(o.limit !== undefined ? { limit: o.limit } : {}),
              ...(o.idle !== undefined ? { idleMs: o.idle } : {}),
              signal: stop.signal,
              print: (msgs) => writer.writeAll(msgs.map(line)),
            });
            if (!asJson) io.stderr.write(`tail: ${r.printed} messages read, none consumed${closedNote()}\n`);
          } else {
            const r = await tailGroup(sluice, queue, o.group, o, stop, writer, line, (e, phase) =>
              io.stderr.write(`warning (${phase}): ${e instanceof Error ? e.message : String(e)}\n`),
            );
            if (!asJson) io.stderr.write(`tail: ${r.written} messages written (${r.acked} acked)${closedNote()}\n`);
          }
          if (writer.error) throw writer.error;
        } finally {
          writer.dispose();
          io.signal?.removeEventListener('abort', onAbort);
        }
      },
    );
}

/**
 * `tail --group`: consumes as the group, acking only what was written out (a line in a pipe's
 * buffer counts); the rest of each pop is handed back at once (`retry`, no budget charged), and
 * a closed output ends the tail.
 */
async function tailGroup(
  sluice: Sluice,
  queue: string,
  group: string,
  o: { partition?: string; batch: number; limit?: number; idle?: number },
  stop: AbortController,
  writer: LineWriter,
  line: (m: Message) => string,
  warn: (e: unknown, phase: string) => void,
): Promise<{ written: number; acked: number }> {
  let q = sluice
    .queue(queue)
    .group(group)
    .batch(Math.min(o.batch, o.limit ?? o.batch))
    .wait(true)
    .timeout(20_000);
  if (o.partition) q = q.partition(o.partition);
  let written = 0;
  let acked = 0;
  const left = (): number => (o.limit === undefined ? Infinity : o.limit - written);
  await q.consume<unknown>(
    async (msgs: Message[]) => {
      const n = await writer.writeAll(msgs.slice(0, Math.max(0, left())).map(line));
      written += n;
      const marked = [
        ...msgs.slice(0, n).map((m) => ({ ...m, _status: 'completed' })),
        ...msgs.slice(n).map((m) => ({ ...m, _status: 'retry' })),
      ];
      const results = await sluice.ack(marked);
      acked += results.filter((r, i) => r.success && i < n).length;
      if (left() <= 0 || writer.closed) stop.abort();
    },
    {
      signal: stop.signal,
      autoAck: false,
      ...(o.idle !== undefined ? { idleMs: o.idle } : {}),
      onError: (e, info) => warn(e, info.phase),
    },
  );
  return { written, acked };
}

/** Reads JSON lines (blank lines skipped) from a file or stdin; `bytes` counts what each took of the input. */
async function* jsonLines(input: Readable): AsyncGenerator<{ line: number; value: unknown; bytes: number }> {
  const rl = createInterface({ input, crlfDelay: Infinity });
  let n = 0;
  let skipped = 0;
  for await (const raw of rl) {
    n++;
    const bytes = Buffer.byteLength(raw) + 1 + skipped;
    const text = raw.trim();
    if (!text) {
      skipped = bytes;
      continue;
    }
    skipped = 0;
    try {
      yield { line: n, value: JSON.parse(text), bytes };
    } catch (e) {
      throw new UsageError(
        `line ${n} is not valid JSON (${e instanceof Error ? e.message : String(e)}): ${brief(text, 80)}`,
      );
    }
  }
}

/** One message as pop and tail print it: partition, offset, transactionId and data, tab-separated. */
function messageLine(m: Message | ReadMessage): string {
  return `${m.partition}\t${m.offset ?? '-'}\t${m.transactionId}\t${JSON.stringify(m.data)}`;
}
