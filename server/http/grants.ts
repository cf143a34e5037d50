/**
 * Who may do what on which queues: the grants configuration, enforced for every route in one
 * place (the `authorize` middleware, middleware/authorize.ts, from each route's `access` declaration).
 *
 * Authentication happens before this: API Gateway's IAM (SigV4) or JWT authorizer on AWS, bearer
 * tokens from the grants file on the local server. The principal is then the caller's IAM ARN
 * (for an assumed role `arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION`), the JWT `sub`, or the
 * principal a local bearer token maps to.
 *
 * A grants file (JSON):
 * ```json
 * {
 *   "grants": [
 *     { "principal": "arn:aws:sts::123456789012:assumed-role/orders-writer/*", "actions": ["push"], "queues": ["orders", "orders-*"] },
 *     { "principal": "billing-service", "actions": ["consume"], "queues": ["orders"] },
 *     { "principal": "*", "actions": ["push", "consume", "manage"], "queues": ["sandbox-*"] }
 *   ],
 *   "tokens": { "a-long-random-secret-of-16-or-more-characters": "billing-service" }
 * }
 * ```
 * `*` in a principal or queue pattern matches any run of characters (also none); everything
 * else matches literally and case-sensitively. A request is allowed when any grant names the
 * action and matches both the principal and the queue. `tokens` (bearer token to principal) is
 * read by the local server only.
 *
 * @example
 * ```ts
 * const grants = Grants.from(parseGrants(JSON.parse(text), 'grants.json'));
 * grants.allows('billing-service', 'consume', 'orders'); // true
 * grants.check('billing-service', 'push', 'orders');     // throws forbidden (403)
 * ```
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import { describeZodError } from './errors.js';

/** The actions a grant can give (a route's `public` access needs none). */
export const GRANT_ACTIONS = ['push', 'consume', 'manage'] as const;
export type GrantAction = (typeof GRANT_ACTIONS)[number];

const Pattern = z.string().min(1, 'must not be empty').max(2048);

export const GrantSchema = z
  .object({
    /** IAM ARN pattern, JWT subject pattern, or a local principal name; `*` is a wildcard. */
    principal: Pattern,
    actions: z.array(z.enum(GRANT_ACTIONS)).min(1, 'must name at least one action'),
    /** Queue name patterns; `*` is a wildcard. */
    queues: z.array(Pattern).min(1, 'must name at least one queue pattern'),
    /** Free text for people reading the file. */
    description: z.string().optional(),
  })
  .strict();
export type Grant = z.infer<typeof GrantSchema>;

export const GrantsConfigSchema = z
  .object({
    grants: z.array(GrantSchema),
    /** Local server only: bearer token to principal. Tokens must be long enough not to guess. */
    tokens: z.record(z.string(), Pattern).optional(),
  })
  .strict();
export type GrantsConfig = z.infer<typeof GrantsConfigSchema>;

/** Parses a grants configuration, naming `source` and the bad field when it is invalid. */
export function parseGrants(value: unknown, source: string): GrantsConfig {
  const r = GrantsConfigSchema.safeParse(value);
  if (!r.success) throw new Error(`${source}: ${describeZodError(r.error, 'grants configuration')}`);
  for (const token of Object.keys(r.data.tokens ?? {})) {
    if (token.length < 16)
      throw new Error(`${source}: tokens: a bearer token is ${token.length} characters; use at least 16 random ones`);
  }
  for (const [i, g] of r.data.grants.entries()) {
    for (const p of [g.principal, ...g.queues]) {
      if (/\*\*/.test(p))
        throw new Error(
          `${source}: grants[${i}]: pattern ${JSON.stringify(p)} has "**"; a single "*" already matches any run of characters`,
        );
    }
  }
  return r.data;
}

/** Reads and parses a grants file. */
export function readGrantsFile(path: string): GrantsConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read grants file ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`grants file ${path} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  return parseGrants(json, path);
}

/** A `*` glob as an anchored regular expression. */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}

interface CompiledGrant {
  principal: RegExp;
  actions: Set<GrantAction>;
  queues: RegExp[];
}

const DOCS = 'see docs/DEPLOYING.md#grants';

/** An evaluated grants configuration (or one of the two fixed modes: open, closed). */
export class Grants {
  private constructor(
    private readonly compiled: CompiledGrant[] | 'open',
    /** Why everything is refused, when nothing is configured where something must be. */
    private readonly closedReason?: string,
  ) {}

  /** Enforces `config`. */
  static from(config: GrantsConfig): Grants {
    return new Grants(
      config.grants.map((g) => ({
        principal: globToRegExp(g.principal),
        actions: new Set(g.actions),
        queues: g.queues.map(globToRegExp),
      })),
    );
  }

  /** Everything is allowed: the local server on loopback without a grants file. */
  static open(): Grants {
    return new Grants('open');
  }

  /** Nothing is allowed (except public routes), for `reason`. */
  static closed(reason: string): Grants {
    return new Grants([], reason);
  }

  get isOpen(): boolean {
    return this.compiled === 'open';
  }

  /** True when some grant gives `principal` the `action` on `queue`. */
  allows(principal: string, action: GrantAction, queue: string): boolean {
    if (this.compiled === 'open') return true;
    return this.compiled.some(
      (g) => g.actions.has(action) && g.principal.test(principal) && g.queues.some((q) => q.test(queue)),
    );
  }

  /** True when some grant gives `principal` the `action` on at least one queue pattern. */
  allowsSome(principal: string, action: GrantAction): boolean {
    if (this.compiled === 'open') return true;
    return this.compiled.some((g) => g.actions.has(action) && g.principal.test(principal));
  }

  /** Throws `forbidden` (403) unless `principal` may `action` on `queue`. */
  check(principal: string, action: GrantAction, queue: string): void {
    if (this.allows(principal, action, queue)) return;
    throw new SluiceError(
      'forbidden',
      this.closedReason ??
        `${principal} may not ${action} on queue ${JSON.stringify(queue)}: no grant allows it (${DOCS})`,
      { action, queue },
    );
  }

  /**
   * Throws `forbidden` (403) unless `principal` may `action` on `queue`, without naming the
   * queue: for a queue the caller did not name but reached through a partition id, a lease id
   * or a group, whose name the refusal must not tell it.
   */
  checkUnnamed(principal: string, action: GrantAction, queue: string): void {
    if (this.allows(principal, action, queue)) return;
    throw new SluiceError(
      'forbidden',
      this.closedReason ??
        `${principal} may not ${action} on the queue this request reaches: no grant allows it (${DOCS})`,
      { action },
    );
  }

  /** Throws `forbidden` (403) unless `principal` may `action` on some queue. */
  checkSome(principal: string, action: GrantAction): void {
    if (this.allowsSome(principal, action)) return;
    throw new SluiceError(
      'forbidden',
      this.closedReason ?? `${principal} may not ${action} on any queue: no grant allows it (${DOCS})`,
      { action },
    );
  }
}

/**
 * The grants a handler enforces when none are passed in: `SLUICE_GRANTS` (the JSON itself, set
 * by the CDK stack), else `SLUICE_GRANTS_FILE` (a path), else closed on Lambda (a deployment
 * without grants refuses every queue operation) and open anywhere else.
 */
export function grantsFromEnv(env: NodeJS.ProcessEnv = process.env): Grants {
  const inline = env['SLUICE_GRANTS'];
  if (inline) {
    let json: unknown;
    try {
      json = JSON.parse(inline);
    } catch (e) {
      throw new Error(`SLUICE_GRANTS is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    return Grants.from(parseGrants(json, 'SLUICE_GRANTS'));
  }
  const file = env['SLUICE_GRANTS_FILE'];
  if (file) return Grants.from(readGrantsFile(file));
  if (env['AWS_LAMBDA_FUNCTION_NAME'])
    return Grants.closed(
      `this deployment has no grants configured (SLUICE_GRANTS is not set), so every queue operation is refused (${DOCS})`,
    );
  return Grants.open();
}
