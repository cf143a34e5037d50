/**
 * The client as its own package (`client/package.json`, `@sluice/client`): `npm pack ./client`
 * builds it to ESM + .d.ts and packs only the build; a fresh project installs the tarball (as
 * the README shows), and plain Node (no tsx, no repository paths) imports it and talks to a
 * server. The build's imports must be relative, `node:` or the package's own dependencies:
 * nothing of the server or the CDK app; its declarations stand alone (no zod, no contract),
 * so a strict TypeScript project type-checks against the installed package.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import type { LocalServer } from '../../server/local/server.js';
import { buildServices } from '../../server/service/runtime.js';
import { openEmbeddedStorage } from '../../server/storage/embedded/index.js';
import type { Storage } from '../../server/storage/port.js';
import { startTestServer } from '../support/http.js';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let dir: string;
let storage: Storage;
let server: LocalServer;

interface ClientManifest {
  name: string;
  type: string;
  exports: Record<string, { types: string; import: string } | string>;
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-pkg-'));
  storage = await openEmbeddedStorage({ dataDir: join(dir, 'data'), sync: 'normal' });
  server = await startTestServer(buildServices(storage, { ...loadConfig({}), queueCacheMs: 0 }));
});
afterAll(async () => {
  await server.close();
  await storage.close();
  await rm(dir, { recursive: true, force: true });
});

/** Every module specifier a built file imports (static and dynamic), doc comments' examples left out. */
function specifiers(source: string): string[] {
  const js = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [...js.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)].map((m) => m[1] ?? '');
  return found.filter((s) => s !== '');
}

/** Every module a declaration file imports: `import`/`export … from` statements and `import('…')` types. */
function declarationSpecifiers(source: string): string[] {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const statements = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*['"]([^'"]+)['"]/gm)];
  const inline = [...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)];
  return [...statements, ...inline].map((m) => m[1] ?? '').filter((s) => s !== '');
}

describe('@sluice/client package', () => {
  const manifest = JSON.parse(readFileSync('client/package.json', 'utf8')) as ClientManifest;

  it('is its own ESM package whose dependencies include nothing of the server or CDK', () => {
    expect(manifest.name).toBe('@sluice/client');
    expect(manifest.type).toBe('module');
    expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
    const deps = Object.keys(manifest.dependencies);
    for (const forbidden of ['aws-cdk-lib', 'constructs', 'better-sqlite3', '@aws-sdk/client-dynamodb', 'zod']) {
      expect(deps).not.toContain(forbidden);
    }
  });

  it('packs, installs into a fresh project and works from plain Node', async () => {
    const { stdout: packed } = await run(npm, ['pack', './client', '--json', '--pack-destination', dir], {
      timeout: 180_000,
    });
    const [info] = JSON.parse(packed) as { filename: string; files: { path: string }[] }[];
    if (!info) throw new Error('npm pack answered nothing');
    const files = info.files.map((f) => f.path).sort();
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files.filter((f) => !f.startsWith('dist/') && f !== 'package.json')).toEqual([]);
    expect(files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toBe(false);

    // The build imports only relative modules, Node built-ins and the package's dependencies.
    const allowed = new Set(Object.keys(manifest.dependencies));
    const built = (await readdir('client/dist', { recursive: true })).filter((f) => f.endsWith('.js'));
    expect(built.length).toBeGreaterThan(5);
    for (const f of built) {
      for (const s of specifiers(await readFile(join('client/dist', f), 'utf8'))) {
        const ok = s.startsWith('.') || s.startsWith('node:') || builtinModules.includes(s) || allowed.has(s);
        expect(ok, `${f} imports ${s}`).toBe(true);
      }
    }

    // The declarations too: the wire types are generated plain TypeScript (client/wire.ts), never zod's inference.
    const declarations = (await readdir('client/dist', { recursive: true })).filter((f) => f.endsWith('.d.ts'));
    expect(declarations).toContain('wire.d.ts');
    for (const f of declarations) {
      for (const s of declarationSpecifiers(await readFile(join('client/dist', f), 'utf8'))) {
        expect(s === 'zod' || s.startsWith('zod/') || /contract/.test(s), `${f} imports ${s}`).toBe(false);
        const ok = s.startsWith('.') || s.startsWith('node:') || builtinModules.includes(s) || allowed.has(s);
        expect(ok, `${f} imports ${s}`).toBe(true);
      }
    }

    const project = join(dir, 'app');
    await run('mkdir', ['-p', project]);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', resolve(dir, info.filename)], {
      cwd: project,
      timeout: 240_000,
    });
    const script = `
      import { Sluice } from '@sluice/client';
      const s = new Sluice({ endpoint: process.env.SLUICE_ENDPOINT });
      await s.queue('pkg').partition('a').push([{ data: { built: true } }]);
      const msgs = await s.queue('pkg').partition('a').wait(false).pop();
      await s.ack(msgs);
      const deleted = await s.queue('pkg').delete();
      const after = await s.queue('pkg').partition('a').wait(false).pop();
      console.log(JSON.stringify({ data: msgs.map((m) => m.data), deleted, after }));`;
    await writeFile(join(project, 'main.js'), script);
    const { stdout } = await run(process.execPath, ['main.js'], {
      cwd: project,
      env: { ...process.env, SLUICE_ENDPOINT: server.url },
      timeout: 30_000,
    });
    expect(JSON.parse(stdout)).toEqual({
      data: [{ built: true }],
      deleted: { deleted: true, queue: 'pkg', existed: true },
      after: [],
    });

    // A strict TypeScript project compiles against the installed package's declarations (library
    // checks on: an unresolved import in them would fail here), and its types are real, not `any`.
    const typed = `
      import { API_ERROR_CODES, Sluice, SluiceApiError } from '@sluice/client';
      import type { ApiErrorCode, ClaimRecord, Message, PushResult, QueueInfo } from '@sluice/client';
      export const describe = (s: Sluice, name: string): Promise<QueueInfo> => s.queue(name).describe();
      export const ttl = (q: QueueInfo): number => q.options.ttl;
      export const ids = (msgs: Message<{ id: number }>[]): number[] => msgs.map((m) => m.data.id + m.offset);
      export const sent = (r: PushResult[]): (string | null)[] => r.map((x) => x.messageId);
      export const codes: readonly ApiErrorCode[] = API_ERROR_CODES;
      export const stale = (e: unknown): boolean => e instanceof SluiceApiError && e.code === 'stale_sequence';
      export async function work(s: Sluice): Promise<number[]> {
        const { records } = await s.queue('q').partition('p').claimGroup('g').poll<{ n: number }>();
        return records.map((r: ClaimRecord<{ n: number }>) => r.data.n + r.attempts);
      }
      // @ts-expect-error a queue's ttl is a number
      export const wrong: string = ({} as QueueInfo).options.ttl;`;
    await writeFile(join(project, 'check.ts'), typed);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
          typeRoots: [resolve('node_modules/@types')],
        },
        files: ['check.ts'],
      }),
    );
    const tsc = resolve('node_modules/typescript/bin/tsc');
    const checked = await run(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json'], {
      cwd: project,
      timeout: 120_000,
    }).then(
      () => '',
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    expect(checked).toBe('');
  }, 400_000);
});
