// client/wire.ts against the contract: the file is what `npm run wire-types` writes now, and
// the printer gives zod's own inferred types (checked by the compiler on a few schemas).
import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { claims, leases, messages, queues } from '../../contract/index.js';
import type {
  AckAnswer,
  ClaimSeekBody,
  ConfigureBody,
  PopQueueAnswer,
  PushBody,
  PushResultAnswer,
  QueueOptionsAnswer,
  TransactionBody,
} from '../../client/wire.js';
import type { QueueOptionsAnswer as QueueOptionsAnswerSchema } from '../../contract/queue-options.js';
import { wireTypesText } from '../../scripts/wire-ts.js';
import { tsOf } from '../../scripts/zod-ts.js';

describe('client/wire.ts', () => {
  it('is what `npm run wire-types` writes now (run it after changing a route or the error table)', async () => {
    expect(readFileSync('client/wire.ts', 'utf8')).toBe(await wireTypesText());
  });

  // Answers are typed by status as `Answers` in a route (route() infers only the request
  // parts), so the compiler can compare the shared answer schemas and every request body.
  it('declares the types zod infers from the contract (answers: output; bodies: input)', () => {
    expectTypeOf<PopQueueAnswer>().toEqualTypeOf<z.output<typeof leases.PopAnswer>>();
    expectTypeOf<AckAnswer>().toEqualTypeOf<z.output<typeof leases.AckAnswer>>();
    expectTypeOf<PushResultAnswer>().toEqualTypeOf<z.output<typeof messages.PushResultAnswer>>();
    expectTypeOf<QueueOptionsAnswer>().toEqualTypeOf<z.output<typeof QueueOptionsAnswerSchema>>();
    expectTypeOf<ConfigureBody>().toEqualTypeOf<z.input<NonNullable<typeof queues.configure.body>>>();
    expectTypeOf<ClaimSeekBody>().toEqualTypeOf<z.input<NonNullable<typeof claims.claimSeek.body>>>();
    expectTypeOf<PushBody>().toEqualTypeOf<z.input<NonNullable<typeof messages.push.body>>>();
    expectTypeOf<TransactionBody>().toEqualTypeOf<z.input<NonNullable<typeof leases.transaction.body>>>();
  });
});

describe('the printer', () => {
  const out = (s: z.ZodType) => tsOf(s, { io: 'output', names: new Map() });
  const inp = (s: z.ZodType) => tsOf(s, { io: 'input', names: new Map() });

  it('prints optional, nullable, default and transformed fields by side', () => {
    const s = z
      .object({
        a: z.number().optional(),
        b: z.string().nullish(),
        c: z.number().default(1),
        d: z.string().transform(Number),
      })
      .strict();
    expect(out(s).replace(/\s+/g, ' ')).toBe('{ a?: number; b?: string | null; c: number; d: unknown; }');
    expect(inp(s).replace(/\s+/g, ' ')).toBe('{ a?: number; b?: string | null; c?: number; d: string; }');
  });

  it('parenthesises unions inside arrays and keeps loose objects open', () => {
    expect(out(z.array(z.union([z.string(), z.null()])))).toBe('(string | null)[]');
    expect(out(z.object({}).loose())).toContain('[key: string]: unknown;');
  });
});
