/**
 * What the local server (`npm start`) sets up beyond the shared configuration: its own
 * defaults, its sealing key, and what it says when it cannot listen.
 */
import { join } from 'node:path';
import type { SluiceConfig } from '../config.js';
import { KEY_FILE, KeyFileProvider, type LogLine } from '../service/adapters/key-file-provider.js';
import type { KeyProvider } from '../service/encryption.js';

/**
 * The environment with the local server's defaults filled in. A message may be as large as a
 * request body (`SLUICE_MAX_BODY_BYTES`, 6 MiB by default), so the body limit minus the push's
 * envelope is the only bound: the 2 MiB default elsewhere keeps a pop's answer inside what
 * Lambda can return, which does not apply here.
 *
 * @example
 * ```ts
 * loadConfig(withLocalDefaults({ SLUICE_MAX_BODY_BYTES: '1048576' })).maxMessageBytes; // 1048576
 * ```
 */
export function withLocalDefaults(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return {
    ...env,
    SLUICE_MAX_MESSAGE_BYTES: env.SLUICE_MAX_MESSAGE_BYTES || env.SLUICE_MAX_BODY_BYTES || String(6 * 1024 * 1024),
  };
}

/**
 * Where `encryptionEnabled` queues get their key: SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID
 * when set (undefined here: the services read them from the configuration), else, for the
 * embedded backend, a key file made in the data directory on first use.
 */
export function localKeyProvider(
  config: SluiceConfig,
  backend: 'embedded' | 'aws',
  log: (line: LogLine) => void,
): { keys: KeyProvider | undefined; source: string } {
  if (config.encryptionKey) return { keys: undefined, source: 'SLUICE_ENCRYPTION_KEY' };
  if (config.kmsKeyId) return { keys: undefined, source: `KMS key ${config.kmsKeyId}` };
  if (backend !== 'embedded')
    return { keys: undefined, source: 'none (set SLUICE_ENCRYPTION_KEY or SLUICE_KMS_KEY_ID)' };
  const path = join(config.dataDir, KEY_FILE);
  return { keys: new KeyFileProvider(path, log), source: `key file ${path} (made on first use)` };
}

/**
 * What a person should do when the server cannot listen, or undefined for other failures:
 * the flag and the variable that pick another port or address.
 */
export function listenProblem(e: unknown, host: string, port: number): string | undefined {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'EADDRINUSE')
    return (
      `cannot listen on ${where}: the port is already in use (another sluice, or another program). ` +
      `Pick another port with --port (npm start -- --port ${port + 1}) or SLUICE_PORT=${port + 1}`
    );
  if (code === 'EACCES')
    return `cannot listen on ${where}: not allowed to use port ${port}. Pick a port from 1024 up with --port or SLUICE_PORT`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
    return `cannot listen on ${where}: this machine has no address ${host}. Pick another with --host or SLUICE_HOST (default 127.0.0.1)`;
  return undefined;
}
