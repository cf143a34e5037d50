// docs/CLI.md lists every command the program defines, each with an example, and every global
// option: a command added without its documentation fails here.
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/main.js';

const doc = readFileSync(new URL('../../docs/CLI.md', import.meta.url), 'utf8');
const program = buildProgram(
  { stdout: { write: () => true }, stderr: { write: () => true }, stdin: Readable.from(['']), env: {} },
  () => undefined,
);

/** Paths of the commands that run something (not the groups that only hold subcommands). */
function leaves(cmd: Command, path = ''): string[] {
  return cmd.commands.flatMap((c) => {
    const p = path ? `${path} ${c.name()}` : c.name();
    return c.commands.length > 0 ? leaves(c, p) : [p];
  });
}

/** The text of the section under the heading `### \`sluice <path>\``, up to the next heading. */
function section(path: string): string | undefined {
  const start = doc.indexOf(`\n### \`sluice ${path}\`\n`);
  if (start < 0) return undefined;
  const next = doc.slice(start + 1).search(/\n#{2,3} /);
  return next < 0 ? doc.slice(start) : doc.slice(start, start + 1 + next);
}

describe('unit: docs/CLI.md', () => {
  it.each(leaves(program))('has a section with an example for `sluice %s`', (path) => {
    const text = section(path);
    expect(text, `docs/CLI.md has no "### \`sluice ${path}\`" section`).toBeDefined();
    const examples = [...(text ?? '').matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(examples.some((e) => e.split('\n').some((l) => l.startsWith(`sluice ${path}`)))).toBe(true);
  });

  it('lists every global option', () => {
    for (const o of program.options.filter((x) => x.long !== '--version'))
      expect(doc, `docs/CLI.md does not mention ${o.long}`).toContain(`\`${o.flags.replace(/ <.*/, '')}`);
  });
});
