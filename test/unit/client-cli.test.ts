import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../cli/command.js';
import { clientOptions } from '../../cli/connection.js';
import { describeFailure, EXIT } from '../../cli/errors.js';
import { run } from '../../cli/main.js';
import { duration, Progress, table } from '../../cli/format.js';
import { SluiceApiError, SluiceNetworkError } from '../../client/errors.js';
import { fakeFetch, jsonResponse, netError, type Recorded } from '../support/fake-fetch.js';

function io(
  answers: Parameters<typeof fakeFetch>[0] = [jsonResponse(200, {})],
  stdin = '',
): { io: Io; out: () => string; err: () => string; calls: Recorded[] } {
  let out = '';
  let err = '';
  const f = fakeFetch(answers);
  return {
    io: {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      stdin: Readable.from([stdin]),
      env: { SLUICE_ENDPOINT: 'http://cli.test' },
      fetch: f.fetch,
      sleep: async () => undefined,
    },
    out: () => out,
    err: () => err,
    calls: f.calls,
  };
}

const pushEcho = (req: Recorded): Response =>
  jsonResponse(
    201,
    (req.body as { items: { transactionId: string }[] }).items.map((it, index) => ({
      index,
      status: index === 0 && it.transactionId === 'dup' ? 'duplicate' : 'queued',
      transaction_id: it.transactionId,
    })),
  );

describe('cli: arguments and output', () => {
  it('pushes JSON lines from stdin in batches and reports counts', async () => {
    const t = io(pushEcho, '{"n":1}\n\n{"n":2}\n"three"\n4\n{"n":5}\n');
    expect(await run(['push', 'orders', '-p', 'eu', '--batch', '2'], t.io)).toBe(EXIT.ok);
    expect(t.calls.map((c) => (c.body as { items: unknown[] }).items.length)).toEqual([2, 2, 1]);
    expect(
      (t.calls[0]?.body as { items: { queue: string; partition: string; payload: unknown }[] }).items[0],
    ).toMatchObject({ queue: 'orders', partition: 'eu', payload: { n: 1 } });
    expect(t.out()).toBe('pushed 5 messages to orders/eu: 5 queued, 0 duplicate, 0 failed\n');
  });

  it('takes transaction ids from a field, or whole envelopes, and answers JSON with --json', async () => {
    const t = io(pushEcho, '{"id":"dup","x":1}\n{"id":7}\n');
    expect(await run(['--json', 'push', 'q', '--id-field', 'id'], t.io)).toBe(EXIT.ok);
    expect((t.calls[0]?.body as { items: { transactionId: string }[] }).items.map((i) => i.transactionId)).toEqual([
      'dup',
      '7',
    ]);
    expect(JSON.parse(t.out())).toEqual({
      queue: 'q',
      partition: 'Default',
      lines: 2,
      queued: 1,
      duplicate: 1,
      failed: 0,
    });
    const e = io(pushEcho, '{"data":{"a":1},"transactionId":"k1","partition":"p9"}\n');
    expect(await run(['push', 'q', '--envelope'], e.io)).toBe(EXIT.ok);
    expect((e.calls[0]?.body as { items: unknown[] }).items[0]).toMatchObject({
      payload: { a: 1 },
      transactionId: 'k1',
      partition: 'p9',
    });
  });

  it('refuses a bad line with exit 2 and says which line', async () => {
    const t = io(pushEcho, '{"ok":1}\n{oops\n');
    expect(await run(['push', 'q'], t.io)).toBe(EXIT.usage);
    expect(t.err()).toMatch(/^sluice: line 2 is not valid JSON .*\{oops/);
    const f = io(pushEcho);
    expect(await run(['push', 'q', '--file', '/nonexistent/lines.jsonl'], f.io)).toBe(EXIT.usage);
    expect(f.err()).toContain('cannot read /nonexistent/lines.jsonl');
  });

  it('exits 2 on usage errors, 0 on --help', async () => {
    const a = io();
    expect(await run(['pop'], a.io)).toBe(EXIT.usage);
    expect(a.err()).toContain("missing required argument 'queue'");
    const b = io();
    expect(await run(['frobnicate'], b.io)).toBe(EXIT.usage);
    expect(b.err()).toContain("unknown command 'frobnicate'");
    const c = io();
    expect(await run(['pop', 'q', '--batch', 'many'], c.io)).toBe(EXIT.usage);
    expect(c.err()).toContain('batch must be an integer >= 1');
    const d = io();
    expect(await run(['--help'], d.io)).toBe(EXIT.ok);
    expect(d.out()).toContain('Usage: sluice');
    const e = io();
    expect(await run(['seek', 'g', 'q'], e.io)).toBe(EXIT.usage);
    expect(e.err()).toContain('exactly one of --to-end or --to');
    const f = io();
    expect(await run(['claims', 'redrive', 'q', 'p', 'g'], f.io)).toBe(EXIT.usage);
  });

  it("maps API failures to exit codes with the server's message", async () => {
    const nf = io([jsonResponse(404, { error: 'no consumer group "x"', code: 'not_found' })]);
    expect(await run(['describe', 'x'], nf.io)).toBe(EXIT.notFound);
    expect(nf.err()).toBe('sluice: no consumer group "x" [HTTP 404 not_found]\n');
    const forb = io([jsonResponse(403, { error: 'principal alice may not consume queue q', code: 'forbidden' })]);
    expect(await run(['--json', 'pop', 'q'], forb.io)).toBe(EXIT.auth);
    expect(JSON.parse(forb.err())).toEqual({
      error: 'principal alice may not consume queue q',
      code: 'forbidden',
      status: 403,
    });
    const bad = io([jsonResponse(400, { error: 'offset 99 has never been handed out', code: 'invalid_request' })]);
    expect(await run(['claims', 'ack', 'q', 'p', 'g', '99'], bad.io)).toBe(EXIT.api);
    expect(bad.err()).toContain('offset 99 has never been handed out');
    const down = io([netError('ECONNREFUSED')]);
    expect(await run(['groups'], down.io)).toBe(EXIT.unreachable);
    expect(down.err()).toContain('Is the server running');
  });

  it('prints pops as lines and --json as an array', async () => {
    const popped = {
      queue: 'q',
      leaseId: 'L',
      consumerGroup: '__QUEUE_MODE__',
      messages: [
        {
          id: 'i',
          transactionId: 't1',
          partitionId: 'P',
          partition: 'eu',
          data: { a: 1 },
          createdAt: '',
          traceId: null,
          offset: 4,
        },
      ],
    };
    const ack = jsonResponse(200, [{ index: 0, transactionId: 't1', success: true, error: null }]);
    const t = io([jsonResponse(200, popped), ack]);
    expect(await run(['pop', 'q', '-b', '5'], t.io)).toBe(EXIT.ok);
    expect(t.out()).toBe('eu\t4\tt1\t{"a":1}\n');
    expect(t.calls[1]?.url.pathname).toBe('/api/v1/ack/batch');
    const j = io([jsonResponse(200, popped)]);
    expect(await run(['--json', 'pop', 'q', '--no-ack'], j.io)).toBe(EXIT.ok);
    expect(JSON.parse(j.out())).toMatchObject([{ transactionId: 't1', data: { a: 1 }, queue: 'q' }]);
    expect(j.calls).toHaveLength(1);
    const empty = io([new Response(null, { status: 204 }), jsonResponse(200, { queue: 'q' })]);
    expect(await run(['pop', 'q'], empty.io)).toBe(EXIT.ok);
    expect(empty.err()).toBe('no messages available in q\n');
    expect(empty.calls.map((c) => c.url.pathname)).toEqual(['/api/v1/pop/queue/q', '/api/v1/queues/q']);
  });

  it('tail --group pops 1,000 by default, fewer when the limit is smaller', async () => {
    const popSizes = async (args: string[]): Promise<(string | null)[]> => {
      // Ctrl-C as the first pop is answered: one pop, however slow the machine.
      const stop = new AbortController();
      const t = io((req) => {
        // The queue exists; Ctrl-C as the first pop is answered.
        if (!req.url.pathname.includes('/pop/')) return Response.json({ queue: 'q' });
        stop.abort();
        return new Response(null, { status: 204 });
      });
      expect(await run(['tail', 'q', '--group', 'g', ...args], { ...t.io, signal: stop.signal })).toBe(EXIT.ok);
      return t.calls.filter((c) => c.url.pathname.includes('/pop/')).map((c) => c.url.searchParams.get('batch'));
    };
    expect(await popSizes([])).toEqual(['1000']);
    expect(await popSizes(['--limit', '10'])).toEqual(['10']);
    expect(await popSizes(['-b', '50'])).toEqual(['50']);
  });

  it('a Ctrl-C while tail looks the queue up stops it without a pop (an aborted signal fires no event)', async () => {
    const stop = new AbortController();
    const t = io(() => {
      stop.abort();
      return Response.json({ queue: 'q' });
    });
    expect(await run(['tail', 'q'], { ...t.io, signal: stop.signal })).toBe(EXIT.ok);
    expect(t.calls.filter((c) => c.url.pathname.includes('/pop/'))).toEqual([]);
  });

  it('renders the groups table per partition', async () => {
    const view = {
      name: 'billing',
      lagMessages: 5,
      maxLagSeconds: 65,
      queues: [
        {
          queue: 'orders',
          partitions: 2,
          lagMessages: 5,
          lagSeconds: 65,
          detail: [
            {
              partition: 'eu',
              partitionId: 'a',
              committed: 9,
              next: 15,
              lagMessages: 5,
              lagSeconds: 65,
              leaseExpiresAt: '2026-01-01T00:00:00Z',
            },
            {
              partition: 'us',
              partitionId: 'b',
              committed: null,
              next: 0,
              lagMessages: 0,
              lagSeconds: 0,
              leaseExpiresAt: null,
            },
          ],
        },
      ],
    };
    const t = io((req) =>
      jsonResponse(200, req.url.pathname === '/api/v1/consumer-groups' ? { consumerGroups: [view] } : view),
    );
    expect(await run(['groups'], t.io)).toBe(EXIT.ok);
    expect(t.out()).toBe(
      [
        'GROUP    QUEUE   PARTITION  COMMITTED  NEXT  LAG  AGE    LEASED',
        'billing  orders  eu                 9    15    5  1m05s  yes',
        'billing  orders  us                 -     0    0  0s     no',
        '',
      ].join('\n'),
    );
  });

  it('picks bearer, SigV4 or no authentication from the flags and environment', () => {
    expect(clientOptions({}, {})).toEqual({ endpoint: 'http://127.0.0.1:6632' });
    expect(clientOptions({ token: 't' }, {})).toMatchObject({ auth: { type: 'bearer', token: 't' } });
    expect(clientOptions({}, { SLUICE_TOKEN: 'e', SLUICE_ENDPOINT: 'http://x:1' })).toEqual({
      endpoint: 'http://x:1',
      auth: { type: 'bearer', token: 'e' },
    });
    expect(clientOptions({ profile: 'prod' }, {})).toMatchObject({ auth: { type: 'sigv4', profile: 'prod' } });
    expect(clientOptions({ endpoint: 'https://abc.execute-api.eu-west-1.amazonaws.com' }, {})).toMatchObject({
      auth: { type: 'sigv4' },
    });
    expect(clientOptions({ endpoint: 'https://abc.execute-api.eu-west-1.amazonaws.com', auth: 'none' }, {})).toEqual({
      endpoint: 'https://abc.execute-api.eu-west-1.amazonaws.com',
    });
    expect(() => clientOptions({ token: 't', region: 'eu-west-1' }, {})).toThrow(/cannot be combined/);
    expect(() => clientOptions({ endpoint: 'not a url' }, {})).toThrow(/is not a URL/);
  });

  it('explains failures a person can act on', () => {
    const auth = describeFailure(new SluiceApiError(401, 'unauthorized', 'missing bearer token'), 'x');
    expect(auth.code).toBe(EXIT.auth);
    expect(auth.message).toContain('--token');
    const down = describeFailure(new SluiceApiError(503, 'unavailable', 'storage down'), 'x');
    expect(down.code).toBe(EXIT.api);
    expect(down.message).toContain('after retries');
    const unreachable = describeFailure(new SluiceNetworkError('cannot reach'), 'http://h:1');
    expect(unreachable.code).toBe(EXIT.unreachable);
    expect(unreachable.message).toContain('http://h:1');
  });

  it('formats tables, durations and progress', () => {
    expect(
      table([
        ['A', 'NUM'],
        ['x', 5],
        ['long', 100],
      ]),
    ).toBe('A     NUM\nx       5\nlong  100\n');
    expect([5, 65, 3700, 90_000].map(duration)).toEqual(['5s', '1m05s', '1h01m', '1d01h']);
    let out = '';
    let now = 0;
    const p = new Progress({ write: (s: string) => (out += s) }, 'redrive', 200, () => now, 10);
    p.update(0);
    now = 500;
    p.update(50); // under a second since the last line: not printed on a pipe
    now = 2000;
    p.update(100);
    p.finish(200);
    expect(out.split('\n').filter(Boolean)).toEqual([
      'redrive [..........] 0/200 0% 0.0/s',
      'redrive [#####.....] 100/200 50% 50/s',
      'redrive [##########] 200/200 100% 100/s',
    ]);
    let tty = '';
    let t2 = 0;
    const q = new Progress({ write: (s: string) => (tty += s), isTTY: true }, 'x', undefined, () => t2);
    t2 = 1000;
    q.update(3);
    expect(tty).toBe('\rx 3 3.0/s\u001b[K');
  });
});
