/**
 * Named contexts (`sluice context …`, cli/config-file.ts and cli/connection.ts), on a config
 * file in a temporary XDG_CONFIG_HOME, with a scripted fetch recording where each run went.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../cli/command.js';
import { configPath } from '../../cli/config-file.js';
import { EXIT } from '../../cli/errors.js';
import { run } from '../../cli/main.js';
import { fakeFetch, jsonResponse, type Recorded } from '../support/fake-fetch.js';

let home: string;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'sluice-contexts-'));
});
afterAll(() => rm(home, { recursive: true, force: true }));

/** One CLI run with `env` (XDG_CONFIG_HOME is the test's own), answering every request with no groups. */
async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string; calls: Recorded[] }> {
  let out = '';
  let err = '';
  const f = fakeFetch(() => jsonResponse(200, { consumerGroups: [] }));
  const io: Io = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    stdin: Readable.from(['']),
    env: { XDG_CONFIG_HOME: join(home, 'xdg'), ...env },
    fetch: f.fetch,
  };
  const code = await run(args, io);
  return { code, out, err, calls: f.calls };
}

describe('integration: cli contexts', () => {
  it('saves contexts in $XDG_CONFIG_HOME/sluice/config.json (0600), the first one current', async () => {
    const add = await cli(['context', 'add', 'prod', '--endpoint', 'http://prod.test', '--token', 'prod-token']);
    expect(add).toMatchObject({ code: EXIT.ok, err: '' });
    const path = join(home, 'xdg', 'sluice', 'config.json');
    expect(add.out).toBe(`saved context prod in ${path} (current)\n`);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      current: 'prod',
      contexts: { prod: { endpoint: 'http://prod.test', token: 'prod-token' } },
    });
    expect(
      (
        await cli([
          'context',
          'add',
          'aws',
          '--endpoint',
          'https://abc.execute-api.eu-west-1.amazonaws.com',
          '--profile',
          'ops',
        ])
      ).code,
    ).toBe(EXIT.ok);
    const local = await cli(['context', 'add', 'local', '--endpoint', 'http://local.test', '-d', 'npm start', '--use']);
    expect(local.out).toContain('(current)');

    const list = await cli(['context', 'list']);
    expect(list.out.split('\n')).toEqual([
      '   NAME   ENDPOINT                                         AUTH    PROFILE  DESCRIPTION',
      '   aws    https://abc.execute-api.eu-west-1.amazonaws.com  sigv4   ops      -',
      '*  local  http://local.test                                none    -        npm start',
      '   prod   http://prod.test                                 bearer  -        -',
      '',
    ]);
    const listed = JSON.parse((await cli(['--json', 'context', 'list'])).out) as { contexts: { token: unknown }[] };
    expect(JSON.stringify(listed)).not.toContain('prod-token');
    expect(listed.contexts.map((c) => c.token)).toEqual([false, false, true]);
    expect((await cli(['context', 'list', '--names'])).out).toBe('aws\nlocal\nprod\n');
  });

  it('sends each run where the context says: current, --context, SLUICE_CONTEXT; an endpoint given bypasses the current one', async () => {
    const current = await cli(['groups']);
    expect(current.calls[0]?.url.origin).toBe('http://local.test');
    const named = await cli(['--context', 'prod', 'groups']);
    expect(named.calls[0]?.url.origin).toBe('http://prod.test');
    expect(named.calls[0]?.headers['authorization']).toBe('Bearer prod-token');
    const fromEnv = await cli(['groups'], { SLUICE_CONTEXT: 'prod', SLUICE_ENDPOINT: 'http://env.test' });
    expect(fromEnv.calls[0]?.url.origin).toBe('http://prod.test');
    const endpoint = await cli(['groups'], { SLUICE_ENDPOINT: 'http://env.test', SLUICE_TOKEN: 'env-token' });
    expect(endpoint.calls[0]?.url.origin).toBe('http://env.test');
    expect(endpoint.calls[0]?.headers['authorization']).toBe('Bearer env-token');
    const flag = await cli(['--endpoint', 'http://flag.test', 'groups']);
    expect(flag.calls[0]?.url.origin).toBe('http://flag.test');
    expect(flag.calls[0]?.headers['authorization']).toBeUndefined();
    const override = await cli(['--context', 'prod', '--endpoint', 'http://other.test', 'groups']);
    expect(override.calls[0]?.url.origin).toBe('http://other.test');
    expect(override.calls[0]?.headers['authorization']).toBe('Bearer prod-token');
    const unknown = await cli(['--context', 'nope', 'groups']);
    expect(unknown).toMatchObject({ code: EXIT.notFound, calls: [] });
    expect(unknown.err).toContain('no context "nope"');
  });

  it('switches with use, removes with remove (the current one too), and says when a name does not exist', async () => {
    expect((await cli(['context', 'use', 'prod'])).out).toBe('current context: prod (http://prod.test)\n');
    expect((await cli(['groups'])).calls[0]?.url.origin).toBe('http://prod.test');
    expect((await cli(['context', 'use', 'nope'])).code).toBe(EXIT.notFound);
    expect((await cli(['context', 'remove', 'prod'])).out).toBe('removed context prod (it was current; none is now)\n');
    expect((await cli(['groups'])).calls[0]?.url.origin).toBe('http://127.0.0.1:6632');
    expect((await cli(['context', 'remove', 'prod'])).code).toBe(EXIT.notFound);
    expect((await cli(['context', 'add', 'bad name', '--endpoint', 'http://x'])).code).toBe(EXIT.usage);
    expect((await cli(['context', 'add', 'noendpoint'])).code).toBe(EXIT.usage);
    expect((await cli(['context', 'add', 'x', '--endpoint', 'not a url'])).code).toBe(EXIT.usage);
  });

  it('falls back to ~/.config without XDG_CONFIG_HOME, and names a config file it cannot parse', async () => {
    expect(configPath({ HOME: '/home/ana' })).toBe('/home/ana/.config/sluice/config.json');
    expect(configPath({ HOME: '/home/ana', XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/sluice/config.json');
    const broken = join(home, 'broken');
    await rm(broken, { recursive: true, force: true });
    await cli(['context', 'add', 'a', '--endpoint', 'http://a.test'], { XDG_CONFIG_HOME: broken });
    await writeFile(join(broken, 'sluice', 'config.json'), '{"contexts": ');
    const r = await cli(['groups'], { XDG_CONFIG_HOME: broken });
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toMatch(/config\.json is not valid JSON/);
  });
});
