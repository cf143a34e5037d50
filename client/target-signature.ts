/**
 * Checks the `sluice-signature` header on a request Sluice delivered to an HTTPS target, so the
 * receiver acts only on Sluice's deliveries (docs/TARGETS.md, "Verifying requests"). The header
 * is `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, one `v1` per secret while a
 * secret is rotated (Stripe's webhook scheme).
 *
 * Verify the raw body as it arrived: parsed and serialised again, JSON rarely comes out the
 * same bytes. Only node built-ins here: the client installs alone.
 *
 * @example
 * ```ts
 * // node:http
 * import { createServer } from 'node:http';
 * import { verifyTargetSignature } from '@sluice/client';
 *
 * createServer((req, res) => {
 *   const chunks: Buffer[] = [];
 *   req.on('data', (c: Buffer) => chunks.push(c));
 *   req.on('end', () => {
 *     const body = Buffer.concat(chunks);
 *     const header = req.headers['sluice-signature'];
 *     if (!verifyTargetSignature({ header, body, secret: process.env.SLUICE_SECRET! })) {
 *       res.writeHead(401).end();
 *       return;
 *     }
 *     const event = JSON.parse(body.toString('utf8'));
 *     // … handle event.records; answer { batchItemFailures: [...] } to fail some of them
 *     res.writeHead(200, { 'content-type': 'application/json' }).end('{"batchItemFailures":[]}');
 *   });
 * }).listen(8080);
 *
 * // Express: take the raw body for this route (express.raw), not express.json()
 * app.post('/sluice', express.raw({ type: 'application/json', limit: '7mb' }), (req, res) => {
 *   const ok = verifyTargetSignature({
 *     header: req.get('sluice-signature'),
 *     body: req.body, // a Buffer
 *     secret: [process.env.SLUICE_SECRET_NEW!, process.env.SLUICE_SECRET_OLD!], // during a rotation
 *   });
 *   if (!ok) return res.sendStatus(401);
 *   // …
 * });
 * ```
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header Sluice signs its target requests in (lower case, as node:http names headers). */
export const TARGET_SIGNATURE_HEADER = 'sluice-signature';
/**
 * How far the signing time may be from the receiver's clock, either way: room for clock skew and
 * a slow delivery, short enough that a captured request cannot be replayed much later.
 */
export const DEFAULT_SIGNATURE_TOLERANCE_S = 300;

/** A `v1` signature: 32 bytes of HMAC-SHA256 in hex. */
const V1 = /^[0-9a-f]{64}$/i;
/** The signing time: Unix seconds, digits only (no sign, no fraction, no exponent). */
const T = /^\d{1,15}$/;

/** What {@link verifyTargetSignature} checks. */
export interface VerifyTargetSignatureOptions {
  /**
   * The `sluice-signature` header as received: node:http's `req.headers['sluice-signature']`,
   * Express's `req.get(…)`, fetch's `headers.get(…)` (undefined or null when it was missing).
   */
  header: string | readonly string[] | null | undefined;
  /** The raw request body, exactly as received. */
  body: string | Uint8Array;
  /** The target's signing secret (`whsec_…`), or several during a rotation: any may match. */
  secret: string | readonly string[];
  /** Largest difference, in seconds, between the signing time and now (default 300). */
  toleranceSeconds?: number | undefined;
  /** The receiver's clock (tests). */
  nowMs?: number | undefined;
}

/**
 * Whether `header` is a valid signature of `body` by one of the secrets, made within
 * `toleranceSeconds` of now. False for a missing or malformed header, a stale or future
 * timestamp, or no `v1` matching any secret; signatures are compared in constant time. Throws
 * on no secret or an empty one, and on a negative tolerance: a misconfigured receiver should
 * fail loudly, not refuse (or worse, accept) everything.
 *
 * @example
 * ```ts
 * if (!verifyTargetSignature({ header: req.headers['sluice-signature'], body: rawBody, secret })) {
 *   res.writeHead(401).end();
 * }
 * ```
 */
export function verifyTargetSignature(opts: VerifyTargetSignatureOptions): boolean {
  const secrets: readonly string[] = typeof opts.secret === 'string' ? [opts.secret] : opts.secret;
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s.length === 0))
    throw new TypeError('verifyTargetSignature needs a non-empty secret (or a list of them)');
  const tolerance = opts.toleranceSeconds ?? DEFAULT_SIGNATURE_TOLERANCE_S;
  if (!(tolerance >= 0)) throw new RangeError('toleranceSeconds must be 0 or more');

  const parsed = parseHeader(opts.header);
  if (!parsed) return false;
  // Whole seconds, as the signer counts them: a signature is `tolerance` seconds old at most.
  const nowS = Math.floor((opts.nowMs ?? Date.now()) / 1000);
  if (Math.abs(nowS - parsed.t) > tolerance) return false;

  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${parsed.t}.`, 'utf8').update(opts.body).digest();
    // Every candidate is compared, matched or not, so the time taken says nothing about which.
    for (const candidate of parsed.v1) ok = timingSafeEqual(expected, candidate) || ok;
  }
  return ok;
}

/**
 * The header's signing time and its `v1` signatures; undefined when it has no single valid `t`
 * or no well-formed `v1`. Other keys (a future `v2`) are skipped, so a receiver keeps working
 * while Sluice adds a scheme next to this one.
 */
function parseHeader(header: string | readonly string[] | null | undefined): { t: number; v1: Buffer[] } | undefined {
  // A header sent twice is one list, as HTTP reads it.
  const text = typeof header === 'string' ? header : Array.isArray(header) ? header.join(',') : undefined;
  if (text === undefined) return undefined;
  let t: number | undefined;
  const v1: Buffer[] = [];
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      // Two timestamps: which one did the signer mean? Refuse rather than pick.
      if (t !== undefined || !T.test(value)) return undefined;
      t = Number(value);
    } else if (key === 'v1' && V1.test(value)) {
      v1.push(Buffer.from(value, 'hex'));
    }
  }
  return t === undefined || v1.length === 0 ? undefined : { t, v1 };
}
