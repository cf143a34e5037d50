/**
 * `sluice completion bash|zsh|fish`: each script, loaded into its real shell, completes
 * commands, subcommands, flags and flag values at the right place of a command line, and
 * context names from the config file. zsh and fish cases run where those shells are installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionScript, type Shell } from '../../cli/completion.js';
import { EXIT } from '../../cli/errors.js';
import { buildProgram, run } from '../../cli/main.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const has = (shell: string): boolean => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;

let dir: string;
let env: Record<string, string>;
const scripts = {} as Record<Shell, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-completion-'));
  const program = buildProgram(
    { stdout: { write: () => true }, stderr: { write: () => true }, stdin: Readable.from(['']), env: {} },
    () => undefined,
  );
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    scripts[shell] = join(dir, `sluice.${shell}`);
    await writeFile(scripts[shell], completionScript(program, shell));
  }
  // `sluice` on PATH, as the scripts call it for context names.
  await mkdir(join(dir, 'bin'));
  await writeFile(
    join(dir, 'bin', 'sluice'),
    `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, 'cli', 'sluice.js')}" "$@"\n`,
  );
  await chmod(join(dir, 'bin', 'sluice'), 0o755);
  await mkdir(join(dir, 'xdg', 'sluice'), { recursive: true });
  await writeFile(
    join(dir, 'xdg', 'sluice', 'config.json'),
    JSON.stringify({ contexts: { prod: { endpoint: 'http://p' }, local: { endpoint: 'http://l' } } }),
  );
  env = { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`, XDG_CONFIG_HOME: join(dir, 'xdg') };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Command lines (the last word being completed) and what must be offered, for every shell. */
const CASES: [string[], string[]][] = [
  [
    ['sluice', ''],
    ['push', 'pop', 'tail', 'claims', 'context', 'completion'],
  ],
  [['sluice', 'cl'], ['claims']],
  [
    ['sluice', 'claims', ''],
    ['poll', 'ack', 'nack', 'seek', 'create'],
  ],
  [['sluice', '--endpoint', 'http://x', 'claims', 'p'], ['poll']],
  [['sluice', 'claims', 'poll', 'q', 'p', 'g', '--b'], ['--batch']],
  [
    ['sluice', 'pop', '-p', 'eu', 'q', '--status', ''],
    ['completed', 'failed', 'retry', 'dlq'],
  ],
  [
    ['sluice', '--auth', ''],
    ['none', 'bearer', 'sigv4'],
  ],
  [
    ['sluice', 'completion', ''],
    ['bash', 'zsh', 'fish'],
  ],
  [
    ['sluice', 'context', 'use', ''],
    ['local', 'prod'],
  ],
  [
    ['sluice', '--context', ''],
    ['local', 'prod'],
  ],
];

function bash(words: string[]): string[] {
  const script = `source ${JSON.stringify(scripts.bash)}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}
_sluice; printf '%s\\n' "\${COMPREPLY[@]}"`;
  return execFileSync('bash', ['-c', script], { env, encoding: 'utf8' }).split('\n').filter(Boolean);
}

function fish(words: string[]): string[] {
  const line = words.join(' ');
  const out = execFileSync(
    'fish',
    ['-c', `source ${JSON.stringify(scripts.fish)}; complete -C ${JSON.stringify(line)}`],
    {
      env,
      encoding: 'utf8',
    },
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t')[0] ?? '');
}

/** zsh: the script's own decision (`_sluice_complete_at`), outside the completion widget. */
function zsh(words: string[]): string[] {
  const script = `source ${JSON.stringify(scripts.zsh)}
words=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=${words.length}
local REPLY KIND SLUICE_PATH; local -a reply
_sluice_complete_at
case $KIND in
  subs) _sluice_described_subs "$SLUICE_PATH"; printf '%s\\n' "\${reply[@]%%:*}" ;;
  opts) _sluice_described_opts "$SLUICE_PATH"; printf '%s\\n' "\${reply[@]%%:*}" ;;
  words) printf '%s\\n' \${=REPLY} ;;
esac`;
  const cur = words.at(-1) ?? '';
  return execFileSync('zsh', ['-c', `f() { ${script}\n}; f`], { env, encoding: 'utf8' })
    .split('\n')
    .filter((w) => w && w.startsWith(cur));
}

describe('integration: shell completion', () => {
  it.each(CASES)('bash completes %j', (words, expected) => {
    expect(bash(words)).toEqual(expect.arrayContaining(expected));
  });

  it('bash offers only what fits: no flags for a word, only the flags of the command', () => {
    expect(bash(['sluice', 'claims', 'poll', 'q', 'p', 'g', '--'])).not.toContain('--peek');
    expect(bash(['sluice', 'tail', '--'])).toContain('--peek');
    expect(bash(['sluice', 'pop', 'q', '-b', ''])).toEqual([]);
    expect(bash(['sluice', 'push', 'q', '--file', join(dir, 'sluice.b')])).toEqual([scripts.bash]);
  });

  it.skipIf(!has('fish')).each(CASES)('fish completes %j', (words, expected) => {
    expect(fish(words)).toEqual(expect.arrayContaining(expected));
  });

  it.skipIf(!has('zsh')).each(CASES)('zsh completes %j', (words, expected) => {
    expect(zsh(words)).toEqual(expect.arrayContaining(expected));
  });

  it.skipIf(!has('zsh'))('zsh registers _sluice with compinit', () => {
    const out = execFileSync(
      'zsh',
      [
        '-c',
        `autoload -U compinit; compinit -u -d ${JSON.stringify(join(dir, 'zcompdump'))}; source ${JSON.stringify(scripts.zsh)}; print -r -- $_comps[sluice]`,
      ],
      { env, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('_sluice');
  });

  it('prints the script for a shell it knows, refuses one it does not', async () => {
    let out = '';
    let err = '';
    const io = {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      stdin: Readable.from(['']),
      env: {},
    };
    expect(await run(['completion', 'bash'], io)).toBe(EXIT.ok);
    expect(out).toContain('complete -F _sluice sluice');
    expect(await run(['completion', 'powershell'], io)).toBe(EXIT.usage);
    expect(err).toContain('Allowed choices are bash, zsh, fish');
  });
});
