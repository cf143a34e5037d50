// Target request signatures: the server signs (server/service/targets/signing.ts), the client's
// verifyTargetSignature (client/target-signature.ts) checks, Stripe's scheme between them.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TARGET_SIGNATURE_HEADER, verifyTargetSignature } from '../../client/index.js';
import {
  newSigningSecret,
  SIGNATURE_HEADER,
  SIGNING_SECRET_PREFIX,
  signatureHeader,
} from '../../server/service/targets/signing.js';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0, 250);
const T = Math.floor(NOW / 1000);
const body = JSON.stringify({ version: 'sluice.target.v1', records: [{ payload: 'héllo ✓' }] });
const secret = newSigningSecret();
const other = newSigningSecret();
const hmac = (key: string, text: string) => createHmac('sha256', key).update(text, 'utf8').digest('hex');
const verify = (header: string | undefined, opts: Partial<Parameters<typeof verifyTargetSignature>[0]> = {}) =>
  verifyTargetSignature({ header, body, secret, nowMs: NOW, ...opts });

describe('unit: signatureHeader', () => {
  it('is t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>, one v1 per secret in order', () => {
    expect(signatureHeader([secret], body, NOW)).toBe(`t=${T},v1=${hmac(secret, `${T}.${body}`)}`);
    expect(signatureHeader([secret, other], body, NOW)).toBe(
      `t=${T},v1=${hmac(secret, `${T}.${body}`)},v1=${hmac(other, `${T}.${body}`)}`,
    );
  });

  it('refuses to sign with no secret (empty ones are not secrets)', () => {
    expect(() => signatureHeader([], body, NOW)).toThrow(/signing secret/);
    expect(() => signatureHeader([''], body, NOW)).toThrow(/signing secret/);
    expect(signatureHeader(['', secret], body, NOW)).toBe(signatureHeader([secret], body, NOW));
  });

  it('the server and the client name the same header', () => {
    expect(SIGNATURE_HEADER).toBe('sluice-signature');
    expect(TARGET_SIGNATURE_HEADER).toBe(SIGNATURE_HEADER);
  });
});

describe('unit: newSigningSecret', () => {
  it('is whsec_ and 32 random bytes in base64url', () => {
    const a = newSigningSecret();
    expect(a.startsWith(SIGNING_SECRET_PREFIX)).toBe(true);
    const raw = Buffer.from(a.slice(SIGNING_SECRET_PREFIX.length), 'base64url');
    expect(raw.length).toBe(32);
    expect(a.slice(SIGNING_SECRET_PREFIX.length)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newSigningSecret()).not.toBe(a);
  });
});

describe('unit: verifyTargetSignature', () => {
  const header = signatureHeader([secret], body, NOW);

  it('accepts what the server signed, as a string or as the raw bytes', () => {
    expect(verify(header)).toBe(true);
    expect(verify(header, { body: Buffer.from(body, 'utf8') })).toBe(true);
    expect(verify(header, { body: new Uint8Array(Buffer.from(body, 'utf8')) })).toBe(true);
  });

  it('refuses the wrong secret', () => {
    expect(verify(header, { secret: other })).toBe(false);
  });

  it('refuses a tampered body, or a signature moved to another timestamp', () => {
    expect(verify(header, { body: body.replace('héllo', 'hello') })).toBe(false);
    expect(verify(header, { body: body + ' ' })).toBe(false);
    expect(verify(header.replace(`t=${T}`, `t=${T + 1}`))).toBe(false);
  });

  it('refuses a timestamp outside the tolerance, either way, and accepts one at its edge', () => {
    expect(verify(header, { nowMs: NOW + 300_000 })).toBe(true);
    expect(verify(header, { nowMs: NOW + 301_000 })).toBe(false);
    expect(verify(header, { nowMs: NOW - 301_000 })).toBe(false);
    expect(verify(header, { nowMs: NOW + 10_000, toleranceSeconds: 5 })).toBe(false);
    expect(verify(header, { nowMs: NOW + 4_000, toleranceSeconds: 5 })).toBe(true);
  });

  it('the default clock is now: a fresh signature passes, an hour-old one does not', () => {
    const fresh = signatureHeader([secret], body, Date.now());
    const old = signatureHeader([secret], body, Date.now() - 3_600_000);
    expect(verifyTargetSignature({ header: fresh, body, secret })).toBe(true);
    expect(verifyTargetSignature({ header: old, body, secret })).toBe(false);
  });

  it('rotation: signed by both secrets, a receiver holding either accepts; holding both, either signature', () => {
    const both = signatureHeader([other, secret], body, NOW);
    expect(verify(both, { secret })).toBe(true);
    expect(verify(both, { secret: other })).toBe(true);
    expect(verify(header, { secret: [other, secret] })).toBe(true);
    expect(verify(signatureHeader([other], body, NOW), { secret: [other, secret] })).toBe(true);
    expect(verify(header, { secret: [other, newSigningSecret()] })).toBe(false);
  });

  it('a header sent twice (node:http gives an array) is one list', () => {
    const [t, v1] = header.split(',');
    expect(verifyTargetSignature({ header: [t!, v1!], body, secret, nowMs: NOW })).toBe(true);
  });

  it.each([
    ['missing', undefined],
    ['null', null],
    ['empty', ''],
    ['no v1', `t=${T}`],
    ['no t', `v1=${hmac(secret, `${T}.${body}`)}`],
    ['two t', `t=${T},t=${T},v1=${hmac(secret, `${T}.${body}`)}`],
    ['t not digits', `t=${T}.0,v1=${hmac(secret, `${T}.${body}`)}`],
    ['t negative', `t=-${T},v1=${hmac(secret, `-${T}.${body}`)}`],
    ['t in hex', `t=0x${T.toString(16)},v1=${hmac(secret, `${T}.${body}`)}`],
    ['v1 too short', `t=${T},v1=${hmac(secret, `${T}.${body}`).slice(0, 62)}`],
    ['v1 not hex', `t=${T},v1=${'z'.repeat(64)}`],
    ['v1 under another key', `t=${T},v0=${hmac(secret, `${T}.${body}`)}`],
    ['garbage', 'sluice'],
  ])('refuses a malformed header: %s', (_name, bad) => {
    expect(verifyTargetSignature({ header: bad, body, secret, nowMs: NOW })).toBe(false);
  });

  it('tolerates spaces, unknown keys (a future v2) and bad v1s next to a good one, and upper-case hex', () => {
    const good = hmac(secret, `${T}.${body}`);
    expect(verify(` t=${T} , v2=abc, v1=${'0'.repeat(64)}, junk ,v1=${good} `)).toBe(true);
    expect(verify(`t=${T},v1=${good.toUpperCase()}`)).toBe(true);
  });

  it('is a misconfiguration to verify with no secret, an empty one, or a negative tolerance', () => {
    expect(() => verify(header, { secret: '' })).toThrow(TypeError);
    expect(() => verify(header, { secret: [] })).toThrow(TypeError);
    expect(() => verify(header, { secret: [secret, ''] })).toThrow(TypeError);
    expect(() => verify(header, { toleranceSeconds: -1 })).toThrow(RangeError);
    expect(() => verify(header, { toleranceSeconds: Number.NaN })).toThrow(RangeError);
  });
});
