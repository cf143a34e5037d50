/**
 * Payload sealing (queues with `encryptionEnabled`) and where its keys come from.
 *
 * - Local server: `SLUICE_ENCRYPTION_KEY`, a base64 32-byte key, used directly
 *   ({@link LocalKeyProvider}).
 * - AWS: `SLUICE_KMS_KEY_ID`, a KMS key (`adapters/kms-key-provider.ts`).
 *
 * With neither configured, `/configure` refuses `encryptionEnabled: true` rather than
 * storing plaintext under a flag that says otherwise.
 *
 * @example
 * ```ts
 * const cipher = new PayloadCipher(new LocalKeyProvider(parseKey(process.env.SLUICE_ENCRYPTION_KEY!)));
 * const env = await cipher.seal(Buffer.from('{"a":1}'));
 * await cipher.open(env); // the plaintext again
 * ```
 */
import { SluiceError } from '../core/errors.js';
import { envelopeKeyId, localKeyId, open, seal } from '../core/sealing.js';

/** Where sealing keys come from: the key new payloads are sealed under, and any key by id. */
export interface KeyProvider {
  /** The key new payloads are sealed under. */
  current(): Promise<{ id: string; key: Uint8Array }>;
  /** The key named `id`; throws `unavailable` when this deployment does not have it. */
  byId(id: string): Promise<Uint8Array>;
}

export class LocalKeyProvider implements KeyProvider {
  private readonly id: string;
  constructor(private readonly key: Uint8Array) {
    this.id = localKeyId(key);
  }
  current(): Promise<{ id: string; key: Uint8Array }> {
    return Promise.resolve({ id: this.id, key: this.key });
  }
  byId(id: string): Promise<Uint8Array> {
    if (id !== this.id)
      return Promise.reject(
        new SluiceError(
          'unavailable',
          `payload was sealed with key ${id}, but this server's SLUICE_ENCRYPTION_KEY is ${this.id}`,
        ),
      );
    return Promise.resolve(this.key);
  }
}

/** Seals and opens payloads: what the services hold (a {@link PayloadCipher}; absent without a key). */
export interface PayloadCipherLike {
  seal(plain: Uint8Array): Promise<Uint8Array>;
  open(envelope: Uint8Array): Promise<Uint8Array>;
}

/**
 * A stored payload as plaintext: a sealed one is opened, which needs the key.
 *
 * @example
 * ```ts
 * const text = await openPayload(cipher, frame); // frame.payload when not sealed
 * ```
 */
export async function openPayload(
  cipher: PayloadCipherLike | undefined,
  m: { payload: Uint8Array; sealed?: boolean | undefined },
): Promise<Uint8Array> {
  if (!m.sealed) return m.payload;
  if (!cipher)
    throw new SluiceError(
      'unavailable',
      'a stored payload is sealed, but this server has no encryption key (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)',
    );
  return cipher.open(m.payload);
}

/** Seals and opens payloads under a {@link KeyProvider}. */
export class PayloadCipher implements PayloadCipherLike {
  constructor(private readonly keys: KeyProvider) {}

  async seal(plain: Uint8Array): Promise<Uint8Array> {
    const { id, key } = await this.keys.current();
    return seal(key, id, plain);
  }

  async open(envelope: Uint8Array): Promise<Uint8Array> {
    const key = await this.keys.byId(envelopeKeyId(envelope));
    try {
      return open(key, envelope);
    } catch {
      throw new SluiceError('unavailable', 'a sealed payload failed authentication (wrong key or damaged data)');
    }
  }
}
