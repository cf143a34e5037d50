/**
 * SHA-256 (HMAC when keyed) over `node:crypto`, in the shape `@smithy/signature-v4` takes as
 * its `sha256`: what `@aws-crypto/sha256-js` would add to a bundle. The client's SigV4 signer,
 * the server's Lambda account-settings call and the tests' signer all use this one.
 *
 * @example
 * ```ts
 * const signer = new SignatureV4({ service: 'execute-api', region, credentials, sha256: NodeSha256 });
 * ```
 */
import { createHash, createHmac } from 'node:crypto';

type Data = string | ArrayBuffer | ArrayBufferView;

export class NodeSha256 {
  private readonly h;
  constructor(secret?: Data) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }
  update(data: Data): void {
    this.h.update(toBuffer(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
  /** The signer makes a new one per digest; a reset it never asks for is refused, not faked. */
  reset(): void {
    throw new Error('NodeSha256.reset is not supported');
  }
}

function toBuffer(d: Data): Buffer {
  if (typeof d === 'string') return Buffer.from(d, 'utf8');
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.from(d);
}
