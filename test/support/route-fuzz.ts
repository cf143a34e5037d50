/**
 * The route fuzz (docs/SECURITY.md, "Bad input"): random requests to every route of the route
 * table, built from each route's own zod schemas and mutated with boundary values, wrong types,
 * huge, negative and NaN-like numbers and odd strings, sent over HTTP to the local server on a
 * healthy embedded store. It holds two rules: no answer is a 5xx, and a 4xx changed nothing stored
 * (every table and blob, see write-journal.ts). Seeded: a failure names its seed and
 * `SLUICE_FUZZ_SEED=<seed>` replays the same requests.
 *
 * @example
 * ```ts
 * const report = await runRouteFuzz({ requests: 2000, seed: 42 });
 * expect(report.violations).toEqual([]);
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RouteDef } from '../../server/http/route.js';
import { ALL_ROUTES } from '../../server/http/routes.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import { startTestServer } from './http.js';
import { rawRequest, type RawReply } from './raw-http.js';
import { testServices } from './services.js';
import { journaled } from './write-journal.js';

export interface FuzzOptions {
  requests: number;
  seed: number;
  /** Prints progress and each violation as it happens. */
  verbose?: boolean;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  /** Answers per status code. */
  statuses: Record<string, number>;
  fiveXx: number;
  /** 4xx answers after which something stored had changed. */
  changedOn4xx: number;
  /** One line per broken rule (the first 25), each enough to replay the request by hand. */
  violations: string[];
}

/** A seed from `SLUICE_FUZZ_SEED`, else a fresh one. */
export const fuzzSeed = (): number =>
  process.env.SLUICE_FUZZ_SEED ? Number(process.env.SLUICE_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ------------------------------------------------------------ zod schema walking

interface ZodCheckDef {
  check?: string;
  value?: unknown;
  minimum?: number;
  maximum?: number;
}
interface ZodDef {
  type: string;
  innerType?: ZodNode;
  in?: ZodNode;
  element?: ZodNode;
  shape?: Record<string, ZodNode>;
  options?: ZodNode[];
  values?: unknown[];
  entries?: Record<string, unknown>;
  checks?: { _zod: { def: ZodCheckDef } }[];
}
interface ZodNode {
  _zod: { def: ZodDef };
}

/** Left out of an object or a query string. */
const OMIT = Symbol('omit');
/** A JSON number text JSON.stringify cannot write (it would write null): spliced into the body. */
class RawNumber {
  constructor(readonly text: string) {}
}
type Value = unknown;

const LONG = 'x'.repeat(300);
/** Values that have broken (or would break) a route somewhere: the mutation pool. */
const MUTANTS: Value[] = [
  null,
  OMIT,
  true,
  false,
  0,
  -0,
  -1,
  1,
  0.5,
  -1.5,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  8.64e15,
  8.64e15 + 1,
  9e15,
  -9e15,
  1e21,
  1e308,
  -1e308,
  Number.MIN_VALUE,
  new RawNumber('1e400'),
  new RawNumber('-1e400'),
  new RawNumber('1e-400'),
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '0x10',
  '1e3',
  '-0',
  ' 1',
  '',
  ' ',
  '.',
  '..',
  '%',
  '%00',
  '%zz',
  'a/b',
  'a?b',
  'a#b',
  '\\',
  '\u0000',
  '\u001f',
  '\u007f',
  '\ud800',
  '\u202e',
  'é😀',
  ' padded ',
  LONG,
  'y'.repeat(5000),
  '2026-01-31T12:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-271821-04-20T00:00:00.000Z',
  '9999-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00Z',
  'now',
  'true',
  'null',
  [],
  [1],
  ['a'],
  {},
  { a: 1 },
  JSON.parse('{"__proto__":{"x":1}}') as unknown,
];

/** Names and ids the fuzz has seen in answers, so random requests reach real state. */
class World {
  partitionIds = new Set<string>(['01900000-0000-7000-8000-000000000000']);
  transactionIds = new Set<string>(['tx-none']);
  leaseIds = new Set<string>(['no-such-lease']);
  cursors = new Set<string>(['zzz']);
  harvest(v: unknown, depth = 0): void {
    if (depth > 6 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (const x of v.slice(0, 50)) this.harvest(x, depth + 1);
      return;
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (typeof x === 'string') {
        if (k === 'partition_id' || k === 'partitionId') this.partitionIds.add(x);
        else if (k === 'transaction_id' || k === 'transactionId') this.transactionIds.add(x);
        else if (k === 'leaseId') this.leaseIds.add(x);
        else if (k === 'next') this.cursors.add(x);
      } else this.harvest(x, depth + 1);
    }
  }
}

class Generator {
  constructor(
    private readonly rnd: () => number,
    private readonly world: World,
    private readonly now: number,
    /** Chance that one schema node is replaced by a mutant. */
    public mutationRate: number,
  ) {}

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rnd() * xs.length)] as T;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.rnd() * (max - min + 1));
  }

  /** A plausible value for a field, by its name: the way to reach real queues, leases, rows. */
  private hint(key: string, type: 'string' | 'number' | 'any'): unknown {
    const iso = (): string => new Date(this.now + this.int(-3, 1) * 86_400_000).toISOString();
    switch (key) {
      case 'queue':
        return this.pick(['fz-a', 'fz-a', 'fz-b', 'fz-c', `fz-${this.int(0, 99)}`]);
      case 'partition':
        return this.pick(['Default', 'Default', 'p1', 'p2']);
      case 'group':
      case 'consumerGroup':
        return this.pick(['g1', 'g1', 'g2', 'c1']);
      case 'consumer':
        return 'w1';
      case 'partitionId':
        return this.pick([...this.world.partitionIds]);
      case 'transactionId':
        return this.pick([...this.world.transactionIds]);
      case 'leaseId':
        return this.pick([...this.world.leaseIds]);
      case 'after':
        return type === 'number' ? this.int(0, 10) : this.pick([...this.world.cursors]);
      case 'status':
        return this.pick(['completed', 'success', 'failed', 'retry', 'dlq']);
      case 'timestamp':
      case 'subscriptionTimestamp':
        return this.rnd() < 0.5 ? iso() : this.now + this.int(-3, 1) * 86_400_000;
      case 'subscriptionFrom':
        return this.pick(['now', iso()]);
      case 'subscriptionMode':
        return this.pick(['all', 'new', 'from']);
      case 'offset':
        return this.int(0, 12);
      case 'attempts':
        return this.int(1, 4);
      case 'timeout':
      case 'waitMs':
        return this.int(0, 30);
      case 'wait':
      case 'autoAck':
        return this.pick(['true', 'false']);
      case 'payload':
      case 'data':
        return this.pick([{ n: this.int(0, 1000) }, 'text', 7, null, [1, 2], { nested: { deep: true } }]);
      default:
        return undefined;
    }
  }

  /** A value for `schema` (mostly one it accepts), or a mutant. */
  value(schema: ZodNode, key: string, depth = 0): Value {
    if (this.rnd() < this.mutationRate) return this.pick(MUTANTS);
    const def = schema._zod.def;
    switch (def.type) {
      case 'optional':
        return this.rnd() < 0.35 ? OMIT : this.value(def.innerType as ZodNode, key, depth);
      case 'nullable':
        return this.rnd() < 0.1 ? null : this.value(def.innerType as ZodNode, key, depth);
      case 'default':
      case 'prefault':
      case 'catch':
      case 'readonly':
        return this.rnd() < 0.3 ? OMIT : this.value(def.innerType as ZodNode, key, depth);
      case 'pipe':
        return this.value(def.in as ZodNode, key, depth);
      case 'transform':
      case 'unknown':
      case 'any':
        return this.hint(key, 'any') ?? this.pick([{ n: 1 }, 'text', 3, null]);
      case 'string':
        return this.hint(key, 'string') ?? this.pick(['a', 'x1', LONG.slice(0, 20)]);
      case 'number': {
        const hinted = this.hint(key, 'number');
        if (typeof hinted === 'number') return hinted;
        let min = 0;
        let max = 1000;
        for (const c of def.checks ?? []) {
          const d = c._zod.def;
          if (d.check === 'greater_than' && typeof d.value === 'number') min = Math.max(min, d.value);
          if (d.check === 'less_than' && typeof d.value === 'number') max = Math.min(max, d.value);
        }
        return this.int(Math.ceil(min), Math.max(Math.ceil(min), Math.floor(Math.min(max, min + 20))));
      }
      case 'boolean':
        return this.rnd() < 0.5;
      case 'literal':
        return (def.values ?? [])[0];
      case 'enum':
        return this.pick(Object.values(def.entries ?? {}));
      case 'union':
        return this.value(this.pick(def.options ?? []), key, depth);
      case 'array': {
        if (depth > 4) return [];
        let min = 0;
        for (const c of def.checks ?? []) if (c._zod.def.check === 'min_length') min = c._zod.def.minimum ?? 0;
        return Array.from({ length: this.int(Math.max(min, key === 'items' ? 1 : 0), 3) }, () =>
          this.value(def.element as ZodNode, key === 'items' ? 'item' : key, depth + 1),
        );
      }
      case 'object': {
        const out: Record<string, Value> = {};
        for (const [k, s] of Object.entries(def.shape ?? {})) {
          const v = this.value(s, k, depth + 1);
          if (v !== OMIT) out[k] = v;
        }
        if (this.rnd() < this.mutationRate) out[this.pick(['extra', 'partition', 'from', '__proto__'])] = 1;
        return out;
      }
      default:
        return this.pick(MUTANTS);
    }
  }
}

/** JSON text of `v`, with {@link RawNumber}s spliced in as the number texts they hold. */
function bodyText(v: Value): string {
  const raw: string[] = [];
  const text = JSON.stringify(v, (_k, x: unknown) => {
    if (x instanceof RawNumber) {
      raw.push(x.text);
      return `\u0000RAW${raw.length - 1}\u0000`;
    }
    return x === OMIT ? undefined : x;
  });
  return (text ?? 'null').replace(/"\\u0000RAW(\d+)\\u0000"/g, (_m, i: string) => raw[Number(i)] as string);
}

const asText = (v: Value): string =>
  v instanceof RawNumber ? v.text : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);

/** encodeURIComponent, except that a lone surrogate goes as its (invalid) UTF-8 bytes rather than throwing. */
const percentEncoded = (text: string): string =>
  text
    .replace(/[\ud800-\udfff]/gu, '\u0000')
    .split('\u0000')
    .map(encodeURIComponent)
    .join('%ED%A0%80');

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A request for `route`: params, query and body from its schemas, some of it mutated. */
function requestFor(route: RouteDef, gen: Generator): FuzzRequest {
  const params = route.params ? gen.value(route.params, 'params') : {};
  const segments = route.path.split('/').map((seg) => {
    const m = /^\{(\w+)\}$/.exec(seg);
    if (!m) return seg;
    const v = params !== null && typeof params === 'object' ? (params as Record<string, Value>)[m[1] as string] : 1;
    const text = v === OMIT || v === undefined ? '' : asText(v);
    // Dot segments sent as they are (curl --path-as-is); the rest percent-encoded like any client.
    return text === '.' || text === '..' ? text : percentEncoded(text);
  });
  let path = segments.join('/');
  if (route.query) {
    const q = gen.value(route.query, 'query');
    const search = new URLSearchParams();
    if (q !== null && typeof q === 'object' && !Array.isArray(q))
      for (const [k, v] of Object.entries(q as Record<string, Value>)) if (v !== OMIT) search.append(k, asText(v));
    const qs = search.toString();
    if (qs) path += `?${qs}`;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let body: string | undefined;
  if (route.body) {
    const b = gen.value(route.body, 'body');
    body = b === OMIT ? undefined : bodyText(b);
    if (gen.int(0, 99) < 2) body = gen.pick(['{', '', 'null', '[]', '"x"', '1e400', '{"a":1}{']);
    if (gen.int(0, 99) < 3) headers['content-type'] = gen.pick(['text/plain', 'application/x-www-form-urlencoded']);
  }
  return { method: route.method, path, headers, ...(body === undefined ? {} : { body }) };
}

/** Valid requests that give the fuzz something to work on: queues, messages, leases, dead letters, a claim group. */
function setupRequests(round: number): FuzzRequest[] {
  const json = (method: string, path: string, body?: unknown): FuzzRequest => ({
    method,
    path,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const push = (queue: string, partition: string, n: number) =>
    json('POST', '/api/v1/push', {
      items: Array.from({ length: n }, (_, i) => ({
        queue,
        partition,
        payload: { round, i },
        transactionId: `tx-${queue}-${partition}-${round}-${i}`,
      })),
    });
  const first =
    round === 0
      ? [
          json('POST', '/api/v1/configure', { queue: 'fz-a' }),
          json('POST', '/api/v1/configure', { queue: 'fz-b', options: { maxSize: 6, retryLimit: 0 } }),
          json('POST', '/api/v1/configure', { queue: 'fz-c', options: { dedupWindowSeconds: 0 } }),
          push('fz-a', 'Default', 3),
          json('PUT', '/api/v1/queues/fz-a/partitions/Default/groups/c1', { start: 'earliest' }),
        ]
      : [];
  return [
    ...first,
    push('fz-a', round % 2 ? 'p1' : 'Default', 3),
    push('fz-b', 'Default', 1),
    push('fz-c', 'p2', 2),
    json('GET', '/api/v1/pop/queue/fz-a?batch=2&consumerGroup=g1'),
    json('GET', '/api/v1/pop/queue/fz-b?batch=1&consumerGroup=g1'),
    json('POST', '/api/v1/queues/fz-a/partitions/Default/groups/c1/poll', { max: 2 }),
  ];
}

const describeRequest = (r: FuzzRequest): string =>
  `${r.method} ${r.path}${r.headers['content-type'] !== 'application/json' ? ` [content-type: ${r.headers['content-type']}]` : ''}` +
  `${r.body === undefined ? '' : ` ${r.body.length > 300 ? `${r.body.slice(0, 300)}…` : r.body}`}`;

/** Runs the fuzz on a fresh store and server of its own (see the module comment). */
export async function runRouteFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-fuzz-'));
  const storage = await openEmbeddedStorage({ dataDir: dir, sync: 'normal' });
  const journal = journaled(storage);
  // Long polls capped so that a fuzzed wait costs milliseconds, not the 25 s a client may ask for.
  const svc = testServices(journal.storage, { config: { maxPopWaitMs: 20, claimMaxWaitMs: 20 } });
  const server = await startTestServer(svc);
  const rnd = prng(opts.seed);
  const world = new World();
  const gen = new Generator(rnd, world, svc.testClock.t, 0.06);
  const report: FuzzReport = {
    seed: opts.seed,
    requests: 0,
    statuses: {},
    fiveXx: 0,
    changedOn4xx: 0,
    violations: [],
  };
  const violation = (line: string): void => {
    if (report.violations.length < 25) report.violations.push(line);
    if (opts.verbose) console.error(`route fuzz (seed ${opts.seed}): ${line}`);
  };
  const send = async (r: FuzzRequest): Promise<RawReply> => {
    journal.begin();
    const reply = await rawRequest(server.url, r.method, r.path, { headers: r.headers, body: r.body });
    report.requests++;
    report.statuses[reply.status] = (report.statuses[reply.status] ?? 0) + 1;
    world.harvest(reply.json);
    const said = `→ ${reply.status} ${reply.text.slice(0, 200)}`;
    if (reply.status >= 500) {
      report.fiveXx++;
      violation(`${describeRequest(r)} ${said}`);
    } else if (reply.status >= 400) {
      const changed = await journal.changes();
      if (changed.length > 0) {
        report.changedOn4xx++;
        violation(`${describeRequest(r)} ${said} — but it changed ${changed.slice(0, 5).join('; ')}`);
      }
      const body = reply.json as { code?: unknown; error?: unknown } | undefined;
      if (typeof body?.code !== 'string' || typeof body.error !== 'string')
        violation(`${describeRequest(r)} ${said} — a 4xx without {error, code}`);
    }
    return reply;
  };
  try {
    for (let round = 0, n = 0; report.requests < opts.requests; n++) {
      // Fresh messages and leases now and then, so that acks, extends and seeks meet real ones.
      if (n % 40 === 0) for (const r of setupRequests(round++)) await send(r);
      const route = gen.pick(ALL_ROUTES);
      // Some requests without any mutation: valid ones move the state the others run into.
      gen.mutationRate = gen.int(0, 9) < 3 ? 0 : 0.08;
      await send(requestFor(route, gen));
      if (opts.verbose && n % 1000 === 999) console.error(`route fuzz: ${report.requests} requests`);
    }
  } finally {
    await server.close();
    await storage.close();
    await rm(dir, { recursive: true, force: true });
  }
  return report;
}
