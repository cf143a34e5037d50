/**
 * Message commands: `push` (JSON lines in, batched), `pop` (one lease, acked) and `tail`
 * (follow a queue, or read a partition with --peek).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { Option, type Command } from 'commander';
import type { AckStatus, Message, PushItem } from '../../client/types.js';
import type { CommandContext } from '../command.js';
import { EXIT, UsageError } from '../errors.js';
import { requirePartition, requireQueue } from '../exists.js';
import { brief, pushStatus, StatusLine } from '../format.js';
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
      'Follow a queue: pop, print and ack messages until interrupted (Ctrl-C stops cleanly). With --peek, read a partition without consuming it.',
    )
    .argument('<queue>')
    .addOption(partitionOption('only this partition'))
    .addOption(groupOption('consumer group (default: queue mode)'))
    .addOption(batchOption('messages per pop', 1000))
    .option('--limit <n>', 'stop after this many messages', positive('limit'))
    .addOption(durationOption('--idle <duration>', 'stop after this long without a message', { min: 1 }))
    .option('--peek', 'read the partition in offset order without a group, lease or ack (needs --partition)')
    .option('--from <offset>', 'with --peek: first offset to read', int('from'), 0)
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
          from: number;
        },
        cmd: Command,
      ) => {
        const sluice = client(cmd);
        // tail long-polls until stopped, so what it names is checked first, once: the partition
        // listing when a partition is named (it also proves the queue), else the queue.
        await (o.partition
          ? requirePartition(sluice, queue, o.partition, io.signal)
          : requireQueue(sluice, queue, io.signal));
        const asJson = json(cmd);
        const print = (m: Message): void => out(asJson ? `${JSON.stringify(m)}\n` : `${messageLine(m)}\n`);
        const stop = new AbortController();
        const onAbort = (): void => stop.abort();
        io.signal?.addEventListener('abort', onAbort, { once: true });
        // A signal that aborted already (Ctrl-C while the queue was looked up) fires no event.
        if (io.signal?.aborted) stop.abort();
        let printed = 0;
        const left = (): number => (o.limit === undefined ? Infinity : o.limit - printed);
        try {
          if (o.peek) {
            if (!o.partition) throw new UsageError('tail --peek reads one partition: add --partition <name>');
            const q = sluice.queue(queue).partition(o.partition);
            let from = o.from;
            let idleSince = Date.now();
            while (!stop.signal.aborted && left() > 0) {
              const r = await q
                .read({ from, limit: Math.min(1000, o.batch, left()), signal: stop.signal })
                .catch((e: unknown) => {
                  if (stop.signal.aborted) return { messages: [], next: from };
                  throw e;
                });
              for (const m of r.messages) print(m);
              printed += r.messages.length;
              from = r.next;
              if (r.messages.length > 0) idleSince = Date.now();
              else {
                if (o.idle !== undefined && Date.now() - idleSince >= o.idle) break;
                await new Promise((res) => setTimeout(res, 500));
              }
            }
            if (!asJson) io.stderr.write(`tail: ${printed} messages read; next offset ${from}\n`);
            return;
          }
          let q = sluice
            .queue(queue)
            .batch(Math.min(o.batch, o.limit ?? o.batch))
            .wait(true)
            .timeout(20_000);
          if (o.partition) q = q.partition(o.partition);
          if (o.group) q = q.group(o.group);
          let acked = 0;
          await q.consume<unknown>(
            async (msgs: Message[]) => {
              const shown = msgs.slice(0, Math.max(0, left()));
              for (const m of shown) print(m);
              printed += shown.length;
              // Ack what was printed; hand the rest back at once (status retry: no budget charged).
              const marked = [
                ...shown.map((m) => ({ ...m, _status: 'completed' })),
                ...msgs.slice(shown.length).map((m) => ({ ...m, _status: 'retry' })),
              ];
              const results = await sluice.ack(marked);
              acked += results.filter((r, i) => r.success && i < shown.length).length;
              if (left() <= 0) stop.abort();
            },
            {
              signal: stop.signal,
              autoAck: false,
              ...(o.idle !== undefined ? { idleMs: o.idle } : {}),
              onError: (e, info) =>
                io.stderr.write(`warning (${info.phase}): ${e instanceof Error ? e.message : String(e)}\n`),
            },
          );
          if (!asJson) io.stderr.write(`tail: ${printed} messages (${acked} acked)\n`);
        } finally {
          io.signal?.removeEventListener('abort', onAbort);
        }
      },
    );
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
function messageLine(m: Message): string {
  return `${m.partition}\t${m.offset ?? '-'}\t${m.transactionId}\t${JSON.stringify(m.data)}`;
}
