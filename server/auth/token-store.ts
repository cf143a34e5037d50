/**
 * Opaque bearer tokens for `auth=tokens` deployments: each token maps to a principal, which
 * the grants then apply to (as the local server's `tokens` map does). Only a token's SHA-256
 * is stored, so the table never holds a usable secret: a token is shown once, at creation.
 *
 * Items, in the `meta` table:
 * - `pk = TOKEN#<sha256 hex of the token>`, `sk = token`: what the authorizer reads (one
 *   strongly consistent GetItem per request it does not have cached);
 * - `pk = TOKENS`, `sk = <id>`: the listing, and how `revoke` finds a token by its id.
 * Both are written and deleted together, in one transaction.
 *
 * Operators rotate tokens without a deploy: `create` a new one, move the client to it,
 * `revoke` the old one (refused within the authorizer's cache time, see
 * `lib/service/http-api.ts` TOKEN_CACHE_TTL).
 *
 * @example
 * ```ts
 * const tokens = new TokenStore(storage.items);
 * const { token, id } = await tokens.create('billing-service', { description: 'billing prod' });
 * await tokens.verify(token); // { id, principal: 'billing-service', createdAt, description }
 * await tokens.list();        // [{ id, principal, createdAt, description }]: never the secret
 * await tokens.revoke(id);    // true; verify(token) is undefined from now on
 * ```
 */
import { createHash, randomBytes } from 'node:crypto';
import { ConditionFailedError, type Item, type ItemStore } from '../storage/port.js';

/** Partition-key prefix of a token's item: `TOKEN#<sha256 hex>`. */
export const TOKEN_PK_PREFIX = 'TOKEN#';
/** Partition key of the token listing (one item per token, by id). */
export const TOKEN_INDEX_PK = 'TOKENS';
const TOKEN_SK = 'token';

/** Shortest token `create` accepts when given one (the local grants file's rule). */
export const MIN_TOKEN_LENGTH = 16;
/** Longest token `verify` looks up (anything longer is refused without a read). */
export const MAX_TOKEN_LENGTH = 512;
/** Longest principal name. */
export const MAX_PRINCIPAL_LENGTH = 256;

/** What is known about a token, without the token. */
export interface TokenInfo {
  /** Public handle: what `list` shows and `revoke` takes. */
  id: string;
  /** Who the token authenticates as: the name grants match (`principal` patterns). */
  principal: string;
  /** Epoch milliseconds. */
  createdAt: number;
  description?: string | undefined;
}

/** The SHA-256 of a token, hex: its item's key. */
export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** A fresh token: `sluice_` and 32 random bytes, base64url (256 bits; the prefix helps secret scanners). */
export const newToken = (): string => `sluice_${randomBytes(32).toString('base64url')}`;

/**
 * Why `principal` cannot name a token's caller, or undefined when it can: 1 to 256 characters,
 * no whitespace or control characters, no `*` (grants use it as a wildcard).
 */
export function principalProblem(principal: string): string | undefined {
  if (principal.length === 0 || principal.length > MAX_PRINCIPAL_LENGTH)
    return `a principal is 1 to ${MAX_PRINCIPAL_LENGTH} characters (got ${principal.length})`;
  if (/[\s\p{Cc}]/u.test(principal)) return 'a principal has no whitespace or control characters';
  if (principal.includes('*')) return 'a principal has no "*" (grants use it as a wildcard)';
  return undefined;
}

/** Both items' attributes as `create` writes them: the token item adds `id`, the listing item `hash`. */
interface TokenAttrs {
  principal: string;
  createdAt: number;
  description?: string;
  id?: string;
  hash?: string;
}
const tokenAttrs = (item: Item): TokenAttrs => item.attrs as unknown as TokenAttrs;

const infoOf = (attrs: TokenAttrs, id: string): TokenInfo => ({
  id,
  principal: attrs.principal,
  createdAt: attrs.createdAt,
  ...(typeof attrs.description === 'string' ? { description: attrs.description } : {}),
});

export class TokenStore {
  constructor(
    private readonly items: ItemStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Stores a new token for `principal` and answers it: the only time the secret is seen.
   * `opts.token` stores a given secret instead of minting one (to move the local server's
   * tokens over); it must be at least 16 characters and not stored already.
   */
  async create(
    principal: string,
    opts: { description?: string | undefined; token?: string | undefined } = {},
  ): Promise<TokenInfo & { token: string }> {
    const problem = principalProblem(principal);
    if (problem) throw new Error(`cannot create a token for ${JSON.stringify(principal)}: ${problem}`);
    if (opts.token !== undefined && (opts.token.length < MIN_TOKEN_LENGTH || opts.token.length > MAX_TOKEN_LENGTH))
      throw new Error(
        `a token is ${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} characters (got ${opts.token.length}); leave it out to have one made`,
      );
    const token = opts.token ?? newToken();
    const hash = hashToken(token);
    const createdAt = this.clock();
    for (let attempt = 0; ; attempt++) {
      const id = randomBytes(8).toString('hex');
      const info: TokenInfo = {
        id,
        principal,
        createdAt,
        ...(opts.description !== undefined ? { description: opts.description } : {}),
      };
      const attrs = {
        principal,
        createdAt,
        ...(opts.description !== undefined ? { description: opts.description } : {}),
      };
      try {
        await this.items.transact([
          {
            op: 'put',
            table: 'meta',
            item: { pk: `${TOKEN_PK_PREFIX}${hash}`, sk: TOKEN_SK, ver: 1, attrs: { ...attrs, id } },
            cond: { kind: 'absent' },
          },
          {
            op: 'put',
            table: 'meta',
            item: { pk: TOKEN_INDEX_PK, sk: id, ver: 1, attrs: { ...attrs, hash } },
            cond: { kind: 'absent' },
          },
        ]);
        return { ...info, token };
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        if (e.failed.some((f) => f.index === 0)) throw new Error('that token is stored already');
        // An id taken already (64 random bits: practically never): draw another.
        if (attempt >= 3) throw e;
      }
    }
  }

  /** Removes the token with this id; false when there is none. */
  async revoke(id: string): Promise<boolean> {
    const entry = await this.items.get('meta', { pk: TOKEN_INDEX_PK, sk: id });
    if (!entry) return false;
    try {
      await this.items.transact([
        { op: 'delete', table: 'meta', key: { pk: `${TOKEN_PK_PREFIX}${tokenAttrs(entry).hash}`, sk: TOKEN_SK } },
        { op: 'delete', table: 'meta', key: { pk: TOKEN_INDEX_PK, sk: id }, cond: { kind: 'version', ver: entry.ver } },
      ]);
      return true;
    } catch (e) {
      // Revoked by someone else in between.
      if (e instanceof ConditionFailedError) return false;
      throw e;
    }
  }

  /** Every token's id, principal, creation time and description, by id; never a secret. */
  async list(): Promise<TokenInfo[]> {
    const out: TokenInfo[] = [];
    let after: string | undefined;
    do {
      const page = await this.items.query('meta', TOKEN_INDEX_PK, { after, limit: 100 });
      for (const it of page.items) out.push(infoOf(tokenAttrs(it), it.sk));
      after = page.next;
    } while (after !== undefined);
    return out;
  }

  /** The token's details when it is stored (not revoked), else undefined. */
  async verify(token: string): Promise<TokenInfo | undefined> {
    if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return undefined;
    const it = await this.items.get('meta', { pk: `${TOKEN_PK_PREFIX}${hashToken(token)}`, sk: TOKEN_SK });
    if (!it) return undefined;
    const attrs = tokenAttrs(it);
    return infoOf(attrs, String(attrs.id));
  }
}
