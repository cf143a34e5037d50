/**
 * What client/wire.ts holds, as text: the contract's wire shapes as plain TypeScript, for the
 * client and the console (`npm run wire-types` writes it; test/unit/wire-types.test.ts fails
 * when the file is stale).
 *
 * Why generated rather than `z.infer` of the contract: the client is published and installs
 * alone, so its `.d.ts` may import neither zod nor the contract (a private folder); inferred
 * types would drag both into every declaration file. Printing the types once, from the zod
 * schemas themselves (scripts/zod-ts.ts walks them, no dependency added), keeps one source of
 * truth with declarations that stand on their own. For every route: its answers
 * (`<Route>Answer`, other statuses `<Route>Answer<status>`) as the server writes them, and its
 * request body (`<Route>Body`) as a caller sends it; the shared pieces by name; the error codes.
 *
 * @example
 * ```ts
 * writeFileSync('client/wire.ts', await wireTypesText());
 * ```
 */
import { format, resolveConfig } from 'prettier';
import type { z } from 'zod';
import { API_ERROR_CODES, ERRORS, ErrorBody, LOCAL_CONTRACT, CONTRACT, isTextAnswer } from '../contract/index.js';
import type { RouteContract } from '../contract/index.js';
import { QueueOptionName, QueueOptionsAnswer, QueueOptionsInput } from '../contract/queue-options.js';
import * as analytics from '../contract/routes/admin/analytics.js';
import * as resources from '../contract/routes/admin/resources.js';
import * as status from '../contract/routes/admin/status.js';
import * as system from '../contract/routes/admin/system.js';
import {
  Counters,
  ListCounters,
  PartitionAnswer,
  QueueConfig,
  QueueRow,
  TimeRange,
  WorkerAnswer,
} from '../contract/routes/admin/views.js';
import * as claims from '../contract/routes/claims.js';
import * as consumerGroups from '../contract/routes/consumer-groups.js';
import * as deadLetters from '../contract/routes/dead-letters.js';
import * as leases from '../contract/routes/leases.js';
import { AckAnswer, AckItemSchema, PopAnswer } from '../contract/routes/leases.js';
import * as messages from '../contract/routes/messages.js';
import { ConsumptionMode, PushItemSchema, PushResultAnswer } from '../contract/routes/messages.js';
import * as notifications from '../contract/routes/notifications.js';
import * as queues from '../contract/routes/queues.js';
import * as targets from '../contract/routes/targets.js';
import { TargetAnswer, TargetEvent, TargetRecord, TargetSettings } from '../contract/targets.js';
import { declarationOf, type Io } from './zod-ts.js';

/** The route modules, by the name that tells their routes apart when two share an export name. */
const MODULES: Record<string, Record<string, unknown>> = {
  queues,
  messages,
  leases,
  claims,
  deadLetters,
  consumerGroups,
  notifications,
  resources,
  status,
  analytics,
  system,
  targets,
};

/** Shared pieces declared once and referred to by name, per side. */
const SHARED: Record<Io, [name: string, schema: z.ZodType, doc: string][]> = {
  output: [
    [
      'QueueOptionName',
      QueueOptionName,
      'The name of a queue option, as `explicitOptions` lists the ones a client set.',
    ],
    ['QueueOptionsAnswer', QueueOptionsAnswer, 'Every option of a queue, as answers echo them.'],
    ['PushResultAnswer', PushResultAnswer, "One push result, in Queen's wire shape (snake_case ids)."],
    ['ConsumptionMode', ConsumptionMode, "Queen's consumption mode of a queue: queue mode, bus groups, both or none."],
    [
      'PopAnswer',
      PopAnswer,
      "A pop's answer (Queen's shape): the lease, and the messages, each repeating where it is from.",
    ],
    ['AckAnswer', AckAnswer, "One ack result, in the request's order."],
    ['Counters', Counters, 'Message counters of a queue or partition.'],
    ['ListCounters', ListCounters, 'The counters queue listings show.'],
    ['QueueRow', QueueRow, 'A queue row of `GET /api/v1/resources/queues`.'],
    ['QueueConfig', QueueConfig, "A queue's options as Queen's QueueDetail config card reads them."],
    ['PartitionAnswer', PartitionAnswer, "A partition with its counters, stored offsets and each group's position."],
    ['TimeRange', TimeRange, 'The window a series covers.'],
    ['WorkerAnswer', WorkerAnswer, 'This process as Queen\'s one "worker" row.'],
    ['ErrorBody', ErrorBody, 'An error answer: what went wrong in words, its code, and any details the code carries.'],
    ['TargetRecord', TargetRecord, 'One record of a target event; `itemIdentifier` in an answer is its transactionId.'],
    [
      'TargetEvent',
      TargetEvent,
      "What a target receives: one partition's records in order (leases), or claimed records (claims).",
    ],
    ['TargetSettingsAnswer', TargetSettings, "A target's settings as reads show them, every default filled in."],
  ],
  input: [
    [
      'QueueOptionsInput',
      QueueOptionsInput,
      'The `options` of `POST /api/v1/configure` and PATCH (null puts one back to its default).',
    ],
    ['PushItemInput', PushItemSchema, 'One message of a push.'],
    [
      'TargetAnswerInput',
      TargetAnswer,
      "A target's answer: Lambda's partial batch response (any other answer of a run that succeeded: all succeeded).",
    ],
    [
      'TargetSettingsInput',
      TargetSettings,
      "A target's settings as a caller sets them (PUT), the knobs of Lambda's event source mappings.",
    ],
    [
      'AckItemInput',
      AckItemSchema,
      'One ack item, as `/ack`, `/ack/batch` and ack-and-pop take it (`status`: completed, success, failed, retry or dlq).',
    ],
  ],
};

const pascal = (s: string): string => s[0]!.toUpperCase() + s.slice(1);

/** Every route with the name its types take: its export name, or module and export name where that collides. */
function namedRoutes(): { name: string; route: RouteContract }[] {
  const all = [...CONTRACT, ...LOCAL_CONTRACT];
  const found: { module: string; key: string; route: RouteContract }[] = [];
  for (const [module, exports] of Object.entries(MODULES))
    for (const [key, value] of Object.entries(exports))
      if (all.includes(value as RouteContract)) found.push({ module, key, route: value as RouteContract });
  const missing = all.filter((r) => !found.some((f) => f.route === r));
  if (missing.length > 0) throw new Error(`wire-ts: routes in no module: ${missing.map((r) => r.path).join(', ')}`);
  const shared = new Set([...SHARED.output, ...SHARED.input].map(([n]) => n));
  const taken = (key: string) =>
    found.filter((f) => f.key === key).length > 1 ||
    shared.has(`${pascal(key)}Answer`) ||
    shared.has(`${pascal(key)}Body`);
  return all.map((r) => {
    const f = found.find((x) => x.route === r)!;
    return { name: taken(f.key) ? pascal(f.module) + pascal(f.key) : pascal(f.key), route: r };
  });
}

const HEADER = `// Generated by \`npm run wire-types\` (scripts/wire-types.ts) from the contract (contract/): do not edit.
/**
 * Sluice's wire shapes, as plain TypeScript: every route's answers (\`<Route>Answer\`; other
 * statuses \`<Route>Answer<status>\`) as the server writes them, every request body
 * (\`<Route>Body\`) as a caller sends it, the shared pieces by name, and the error codes. The
 * client's own types (types.ts) are defined in terms of these; the console imports them too.
 *
 * @example
 * \`\`\`ts
 * import type { ConfigureAnswer } from './wire.js';
 * const ttl = (q: ConfigureAnswer): number => q.options.ttl;
 * \`\`\`
 */
`;

/**
 * The text of client/wire.ts, formatted as Prettier formats the repository.
 *
 * @example
 * ```ts
 * expect(readFileSync('client/wire.ts', 'utf8')).toBe(await wireTypesText());
 * ```
 */
export async function wireTypesText(): Promise<string> {
  const names: Record<Io, Map<z.ZodType, string>> = {
    output: new Map(SHARED.output.map(([n, s]) => [s, n])),
    input: new Map(SHARED.input.map(([n, s]) => [s, n])),
  };
  const out: string[] = [HEADER];
  out.push('// ------------------------------------------------------------ error codes\n');
  out.push(
    '/** Every code an error answer may carry, in the table order (with its HTTP status in the comment). */\n' +
      'export const API_ERROR_CODES = [\n' +
      API_ERROR_CODES.map((c) => `  ${JSON.stringify(c)}, // ${ERRORS[c].status}: ${ERRORS[c].meaning}`).join('\n') +
      '\n] as const;\n',
    '/** A code an error answer may carry. */\nexport type ApiErrorCode = (typeof API_ERROR_CODES)[number];\n',
  );
  for (const io of ['output', 'input'] as const) {
    out.push(
      `// ------------------------------------------------------------ shared ${io === 'output' ? 'answers' : 'requests'}\n`,
    );
    for (const [name, schema, doc] of SHARED[io])
      out.push(declarationOf(name, schema, { io, names: names[io] }, doc) + '\n');
  }
  out.push('// ------------------------------------------------------------ routes\n');
  for (const { name, route } of namedRoutes()) {
    const what = `\`${route.method} ${route.path}\``;
    const statuses = Object.keys(route.response).map(Number);
    const main = statuses.find((s) => s >= 200 && s < 300 && route.response[s] != null);
    for (const s of statuses) {
      const answer = route.response[s];
      if (answer === null || answer === undefined) continue;
      const typeName = `${name}Answer${s === main ? '' : s}`;
      const schema = isTextAnswer(answer) ? answer.schema : answer;
      const note = `${what} answers ${s}${isTextAnswer(answer) ? ` (${answer.mediaType})` : ''}: ${route.summary}`;
      const shared = names.output.get(schema);
      out.push(
        (shared
          ? `/** ${note} */\nexport type ${typeName} = ${shared};`
          : declarationOf(typeName, schema, { io: 'output', names: names.output }, note)) + '\n',
      );
    }
    if (route.body)
      out.push(
        declarationOf(`${name}Body`, route.body, { io: 'input', names: names.input }, `The body of ${what}.`) + '\n',
      );
  }
  const path = new URL('../client/wire.ts', import.meta.url).pathname;
  return format(out.join('\n'), { ...(await resolveConfig(path)), filepath: path });
}
