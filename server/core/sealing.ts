/**
 * Payload sealing for queues with `encryptionEnabled`: AES-256-GCM under a data key named in
 * the envelope, so a reader can find the key again (a local key, or a KMS data key).
 *
 * Envelope layout: `[1][key id length u8][key id (ASCII)][12-byte IV][ciphertext][16-byte tag]`.
 *
 * @example
 * ```ts
 * const env = seal(key, 'L1a2b3c4d', Buffer.from('{"a":1}'));
 * open(keyId => key, env); // '{"a":1}' bytes (the lookup may be async in the service)
 * ```
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Seals `plain` under a 32-byte key. */
export function seal(key: Uint8Array, keyId: string, plain: Uint8Array): Buffer {
  const id = Buffer.from(keyId, 'ascii');
  if (id.length === 0 || id.length > 255) throw new Error('key id must be 1-255 ASCII bytes');
  const iv = randomBytes(IV_BYTES);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([Buffer.from([VERSION, id.length]), id, iv, body, c.getAuthTag()]);
}

/** The key id an envelope was sealed under. */
export function envelopeKeyId(env: Uint8Array): string {
  const b = Buffer.from(env.buffer, env.byteOffset, env.byteLength);
  if (b.length < 2 + IV_BYTES + TAG_BYTES || b[0] !== VERSION) throw new Error('not a sealed payload envelope');
  return b.subarray(2, 2 + (b[1] as number)).toString('ascii');
}

/** Opens an envelope with its key; throws when it was tampered with. */
export function open(key: Uint8Array, env: Uint8Array): Buffer {
  const b = Buffer.from(env.buffer, env.byteOffset, env.byteLength);
  const idLen = b[1] as number;
  const ivAt = 2 + idLen;
  const iv = b.subarray(ivAt, ivAt + IV_BYTES);
  const tag = b.subarray(b.length - TAG_BYTES);
  const d = createDecipheriv('aes-256-gcm', key, iv);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(b.subarray(ivAt + IV_BYTES, b.length - TAG_BYTES)), d.final()]);
}

/** A stable short id for a local key (so envelopes name which key sealed them, never the key). */
export const localKeyId = (key: Uint8Array): string =>
  `L${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;

/** Parses a base64 32-byte key (SLUICE_ENCRYPTION_KEY); throws a message a person can act on. */
export function parseKey(b64: string, name = 'SLUICE_ENCRYPTION_KEY'): Buffer {
  const k = Buffer.from(b64.trim(), 'base64');
  if (k.length !== 32)
    throw new Error(
      `${name} must be 32 bytes, base64-encoded (got ${k.length} bytes); make one with: openssl rand -base64 32`,
    );
  return k;
}
