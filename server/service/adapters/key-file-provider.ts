/**
 * The local server's own sealing key, so `encryptionEnabled` works without any setup: a random
 * 32-byte key in a file of the data directory (`encryption.key`, base64, mode 0600), made the
 * first time a payload is sealed and announced in a log line. `SLUICE_ENCRYPTION_KEY`
 * overrides it (the server then uses that key and never makes this file).
 *
 * The key protects payloads in the data directory's files from someone who gets those files
 * without the key file: a backup taken without it, a copied segment. It does not protect
 * against someone who can read the whole directory; keep the key apart for that
 * (SLUICE_ENCRYPTION_KEY from a secret store).
 *
 * @example
 * ```ts
 * const keys = new KeyFileProvider(join(dataDir, KEY_FILE), (line) => console.log(JSON.stringify(line)));
 * const cipher = new PayloadCipher(keys); // the first seal makes the file
 * ```
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SluiceError } from '../../core/errors.js';
import { localKeyId, parseKey } from '../../core/sealing.js';
import type { KeyProvider } from '../encryption.js';

/** The key file's name in the data directory. */
export const KEY_FILE = 'encryption.key';

/** A log line: level, message and fields (the local server prints them as JSON). */
export type LogLine = { level: 'INFO' | 'WARN'; message: string } & Record<string, unknown>;

export class KeyFileProvider implements KeyProvider {
  private loaded: Promise<{ id: string; key: Uint8Array } | undefined> | undefined;
  private made: Promise<{ id: string; key: Uint8Array }> | undefined;

  constructor(
    private readonly path: string,
    private readonly log: (line: LogLine) => void,
  ) {}

  /** The key, made (and written) on the first call when the file does not exist yet. */
  current(): Promise<{ id: string; key: Uint8Array }> {
    this.made ??= this.readOrMake().catch((e: unknown) => {
      this.made = undefined;
      throw e;
    });
    return this.made;
  }

  async byId(id: string): Promise<Uint8Array> {
    const k = await this.read();
    if (k?.id === id) return k.key;
    throw new SluiceError(
      'unavailable',
      k
        ? `payload was sealed with key ${id}, but this server's key file ${this.path} holds ${k.id}`
        : `payload was sealed with key ${id}, but this server has no key file (${this.path}) and no SLUICE_ENCRYPTION_KEY`,
    );
  }

  /** The file's key, or undefined while there is no file (read once, then remembered). */
  private read(): Promise<{ id: string; key: Uint8Array } | undefined> {
    this.loaded ??= this.readFile().then(
      (k) => {
        if (!k) this.loaded = undefined; // not made yet: look again next time
        return k;
      },
      (e: unknown) => {
        this.loaded = undefined;
        throw e;
      },
    );
    return this.loaded;
  }

  private async readFile(): Promise<{ id: string; key: Uint8Array } | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const key = parseKey(text, `the key file ${this.path}`);
    const { mode } = await stat(this.path);
    if ((mode & 0o077) !== 0)
      this.log({
        level: 'WARN',
        message: 'the encryption key file is readable by other users: chmod 600 it',
        path: this.path,
        mode: `0${(mode & 0o777).toString(8)}`,
      });
    return { id: localKeyId(key), key };
  }

  private async readOrMake(): Promise<{ id: string; key: Uint8Array }> {
    const existing = await this.read();
    if (existing) return existing;
    const key = randomBytes(32);
    await mkdir(dirname(this.path), { recursive: true });
    try {
      // `wx`: two processes making the key at once keep one (the loser reads the winner's).
      await writeFile(this.path, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const theirs = await this.read();
      if (!theirs) throw e;
      return theirs;
    }
    const made = { id: localKeyId(key), key };
    this.loaded = Promise.resolve(made);
    this.log({
      level: 'INFO',
      message:
        'generated an encryption key for encryptionEnabled queues; keep it with the data (sealed payloads cannot ' +
        'be read without it), or set SLUICE_ENCRYPTION_KEY to use your own',
      path: this.path,
      keyId: made.id,
    });
    return made;
  }
}
