/**
 * The signature on every request an HTTPS target receives (docs/TARGETS.md, "Verifying
 * requests"), so a receiver can tell Sluice's deliveries from anyone else's POSTs to a public
 * URL. It is Stripe's webhook scheme, which receivers' frameworks and reviewers already know:
 *
 * ```
 * sluice-signature: t=1767225600,v1=5257a869…,v1=9f1c03e2…
 * ```
 *
 * - `t` is the signing time in Unix seconds; it is signed too, so a captured request cannot be
 *   replayed outside the receiver's tolerance (the client's check allows 5 minutes).
 * - each `v1` is the hex HMAC-SHA256, keyed with one secret (the whole `whsec_…` text, as
 *   UTF-8), of `"<t>.<body>"`: the exact bytes sent, so the receiver checks its raw body.
 * - one `v1` per valid secret, newest first: while a secret is being rotated both sign, and a
 *   receiver holding either the old or the new one accepts.
 *
 * The receiving side is the client's `verifyTargetSignature` (client/target-signature.ts); the
 * tests sign here and verify there.
 *
 * @example
 * ```ts
 * const headers = { [SIGNATURE_HEADER]: signatureHeader([secret], body, Date.now()) };
 * ```
 */
import { createHmac, randomBytes } from 'node:crypto';

/** The header's name (lower case, as node:http hands it to a receiver). */
export const SIGNATURE_HEADER = 'sluice-signature';
/** What a generated secret starts with: recognisable in a config file or a leaked log line. */
export const SIGNING_SECRET_PREFIX = 'whsec_';
/** Random bytes in a generated secret: 256 bits, the HMAC-SHA256 key size. */
export const SIGNING_SECRET_BYTES = 32;

/**
 * The `sluice-signature` value for `body` sent at `nowMs`: `t=<seconds>,v1=<hex>` with one `v1`
 * per secret, in the order given (newest first). Throws with no secret: an unsigned delivery
 * would be one a careful receiver refuses and a careless one cannot tell from a forgery.
 *
 * @example
 * ```ts
 * signatureHeader([newest, previous], '{"version":"sluice.target.v1",…}', Date.now());
 * // 't=1767225600,v1=5257a869…,v1=9f1c03e2…'
 * ```
 */
export function signatureHeader(secrets: readonly string[], body: string, nowMs: number): string {
  const valid = secrets.filter((s) => s.length > 0);
  if (valid.length === 0) throw new Error('a target request needs at least one signing secret');
  const t = Math.floor(nowMs / 1000);
  const signed = `${t}.${body}`;
  const v1 = valid.map((s) => `v1=${createHmac('sha256', s).update(signed, 'utf8').digest('hex')}`);
  return [`t=${t}`, ...v1].join(',');
}

/**
 * A new signing secret: `whsec_` and 32 random bytes in base64url (43 characters).
 *
 * @example
 * ```ts
 * newSigningSecret(); // 'whsec_3q2-7wAAAAB…'
 * ```
 */
export const newSigningSecret = (): string =>
  SIGNING_SECRET_PREFIX + randomBytes(SIGNING_SECRET_BYTES).toString('base64url');
