/**
 * Keys for payload sealing (queues with `encryptionEnabled`).
 *
 * - Local server: `SLUICE_ENCRYPTION_KEY`, a base64 32-byte key, used directly.
 * - AWS: `SLUICE_KMS_KEY_ID`, a KMS key. Each process asks KMS for one AES-256 data key on
 *   first use (GenerateDataKey), stores the wrapped copy in the `meta` table under a fresh
 *   id, and seals with the plaintext kept in memory only. A reader finds the id in the
 *   envelope, reads the wrapped key once and unwraps it with KMS Decrypt (then caches it).
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
import { uuidv7 } from '../core/ids.js';
import { envelopeKeyId, localKeyId, open, seal } from '../core/sealing.js';
import type { Storage } from '../storage/port.js';

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
  async current(): Promise<{ id: string; key: Uint8Array }> {
    return { id: this.id, key: this.key };
  }
  async byId(id: string): Promise<Uint8Array> {
    if (id !== this.id)
      throw new SluiceError(
        'unavailable',
        `payload was sealed with key ${id}, but this server's SLUICE_ENCRYPTION_KEY is ${this.id}`,
      );
    return this.key;
  }
}

/** The subset of the KMS client the provider uses (so tests can pass a client for moto). */
export interface KmsLike {
  send(cmd: unknown): Promise<unknown>;
}

const KEY_PK = 'ENCKEY';

export class KmsKeyProvider implements KeyProvider {
  private cur: Promise<{ id: string; key: Uint8Array }> | undefined;
  private readonly known = new Map<string, Promise<Uint8Array>>();

  constructor(
    private readonly storage: Storage,
    private readonly kmsKeyId: string,
    private readonly client: () => Promise<KmsLike>,
    private readonly clock: () => number = Date.now,
  ) {}

  current(): Promise<{ id: string; key: Uint8Array }> {
    this.cur ??= this.generate().catch((e: unknown) => {
      this.cur = undefined;
      throw e;
    });
    return this.cur;
  }

  private async generate(): Promise<{ id: string; key: Uint8Array }> {
    const { GenerateDataKeyCommand } = await import('@aws-sdk/client-kms');
    const out = (await (
      await this.client()
    ).send(new GenerateDataKeyCommand({ KeyId: this.kmsKeyId, KeySpec: 'AES_256' }))) as {
      Plaintext?: Uint8Array;
      CiphertextBlob?: Uint8Array;
    };
    if (!out.Plaintext || !out.CiphertextBlob) throw new SluiceError('unavailable', 'KMS returned no data key');
    const id = `K${uuidv7(this.clock()).replace(/-/g, '')}`;
    await this.storage.items.put(
      'meta',
      {
        pk: KEY_PK,
        sk: id,
        ver: 1,
        attrs: {
          wrapped: Buffer.from(out.CiphertextBlob).toString('base64'),
          kmsKeyId: this.kmsKeyId,
          createdAt: this.clock(),
        },
      },
      { kind: 'absent' },
    );
    const key = Buffer.from(out.Plaintext);
    this.known.set(id, Promise.resolve(key));
    return { id, key };
  }

  byId(id: string): Promise<Uint8Array> {
    let p = this.known.get(id);
    if (!p) {
      p = this.unwrap(id).catch((e: unknown) => {
        this.known.delete(id);
        throw e;
      });
      this.known.set(id, p);
    }
    return p;
  }

  private async unwrap(id: string): Promise<Uint8Array> {
    const item = await this.storage.items.get('meta', { pk: KEY_PK, sk: id });
    const wrapped = item?.attrs.wrapped;
    if (typeof wrapped !== 'string')
      throw new SluiceError('unavailable', `no stored data key ${id}: the payload cannot be opened`);
    const { DecryptCommand } = await import('@aws-sdk/client-kms');
    const out = (await (
      await this.client()
    ).send(new DecryptCommand({ CiphertextBlob: Buffer.from(wrapped, 'base64') }))) as { Plaintext?: Uint8Array };
    if (!out.Plaintext) throw new SluiceError('unavailable', `KMS could not unwrap data key ${id}`);
    return Buffer.from(out.Plaintext);
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
