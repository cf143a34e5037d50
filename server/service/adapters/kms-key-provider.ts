/**
 * KMS data keys for payload sealing (`SLUICE_KMS_KEY_ID`). Each process asks KMS for one
 * AES-256 data key on first use (GenerateDataKey), stores the wrapped copy in the `meta`
 * table (`ENCKEY` / key id) under a fresh id, and seals with the plaintext kept in memory
 * only. A reader finds the id in the envelope, reads the wrapped key once and unwraps it
 * with KMS Decrypt (then caches it).
 *
 * @example
 * ```ts
 * const keys = new KmsKeyProvider(storage, process.env.SLUICE_KMS_KEY_ID!, lazyKmsClient());
 * const cipher = new PayloadCipher(keys);
 * ```
 */
import { SluiceError } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import type { Storage } from '../../storage/port.js';
import type { KeyProvider } from '../encryption.js';

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

/** A KMS client created on first use (the SDK loads only when a key is needed). */
export function lazyKmsClient(): () => Promise<KmsLike> {
  let client: Promise<KmsLike> | undefined;
  return () => (client ??= import('@aws-sdk/client-kms').then((m) => new m.KMSClient({}) as unknown as KmsLike));
}
