/**
 * The local server's key file (service/adapters/key-file-provider.ts): made once on first use
 * with mode 0600 even when two processes race to make it, announced once, read back by a
 * later process; a loose mode is warned about; a payload sealed under another key names both.
 */
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyFileProvider, type LogLine } from '../../server/service/adapters/key-file-provider.js';
import { LocalKeyProvider, PayloadCipher } from '../../server/service/encryption.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-keyfile-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('integration: the local key file', () => {
  it('is made once, 0600, by whichever of two racing processes wins, and read back later', async () => {
    const path = join(dir, 'race', 'encryption.key');
    const lines: LogLine[] = [];
    const a = new KeyFileProvider(path, (l) => lines.push(l));
    const b = new KeyFileProvider(path, (l) => lines.push(l));
    const [ka, kb] = await Promise.all([a.current(), b.current()]);
    expect(ka.id).toBe(kb.id);
    expect(Buffer.from(ka.key).equals(Buffer.from(kb.key))).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(lines.filter((l) => l.message.startsWith('generated an encryption key'))).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'INFO', path, keyId: ka.id });
    expect(Buffer.from((await readFile(path, 'utf8')).trim(), 'base64').equals(Buffer.from(ka.key))).toBe(true);

    const sealed = await new PayloadCipher(a).seal(Buffer.from('{"a":1}'));
    const later = new KeyFileProvider(path, (l) => lines.push(l));
    expect((await new PayloadCipher(later).open(sealed)).toString()).toBe('{"a":1}');
    expect(lines).toHaveLength(1);
  });

  it('opens nothing before the file exists and says so; a key file readable by others is warned about', async () => {
    const path = join(dir, 'loose', 'encryption.key');
    const lines: LogLine[] = [];
    const other = await new PayloadCipher(new LocalKeyProvider(Buffer.alloc(32, 1))).seal(Buffer.from('x'));
    await expect(new PayloadCipher(new KeyFileProvider(path, (l) => lines.push(l))).open(other)).rejects.toThrow(
      /no key file .*encryption\.key.* and no SLUICE_ENCRYPTION_KEY/,
    );
    await new KeyFileProvider(path, (l) => lines.push(l)).current();
    await expect(new PayloadCipher(new KeyFileProvider(path, () => undefined)).open(other)).rejects.toThrow(
      /sealed with key L\w+, but this server's key file .* holds L\w+/,
    );
    await chmod(path, 0o644);
    await new KeyFileProvider(path, (l) => lines.push(l)).current();
    expect(lines.at(-1)).toMatchObject({ level: 'WARN', path, mode: '0644' });
  });

  it('refuses a key file that is not a base64 32-byte key, naming the file', async () => {
    const path = join(dir, 'bad.key');
    await writeFile(path, 'not a key\n', { mode: 0o600 });
    await expect(new KeyFileProvider(path, () => undefined).current()).rejects.toThrow(
      /the key file .*bad\.key must be 32 bytes/,
    );
  });
});
