/**
 * The CLI reaches the server only through the modules named for it (server/public/README.md):
 * every import in cli/ that lands in server/ lands in server/public/. The rest of its imports go
 * to packages, the client, the contract or lib/'s stack outputs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'cli');

/** Every .ts file under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The relative specifiers a file imports or re-exports, statically or with `import()`. */
function relativeImports(text: string): string[] {
  const found = [
    ...text.matchAll(/\b(?:from|import)\s*\(?\s*'(\.[^']*)'/g),
    ...text.matchAll(/\b(?:from|import)\s*\(?\s*"(\.[^"]*)"/g),
  ];
  return found.map((m) => m[1] as string);
}

describe('cli/', () => {
  it('imports from server/ only the modules named for it (server/public/)', () => {
    const files = sources(CLI);
    expect(files.length).toBeGreaterThan(10);
    const reached = files.flatMap((f) =>
      relativeImports(readFileSync(f, 'utf8')).map((spec) => ({
        file: relative(ROOT, f),
        target: relative(ROOT, resolve(dirname(f), spec)),
      })),
    );
    const intoServer = reached.filter((r) => r.target.startsWith('server/'));
    // The walk sees the CLI's imports: it uses the console, token and cost modules today.
    expect(intoServer.map((r) => r.target)).toContain('server/public/console.js');
    const outside = intoServer
      .filter((r) => !/^server\/public\/[^/]+$/.test(r.target))
      .map((r) => `${r.file} → ${r.target}`);
    expect(outside).toEqual([]);
  });

  it('finds every kind of import the check must see', () => {
    const text = [
      "import { a } from '../server/x.js';",
      "import type { B } from '../../server/y.js';",
      "export { c } from './c.js';",
      "const d = await import('../server/d.js');",
      "import '../side-effect.js';",
      "import { Command } from 'commander';",
    ].join('\n');
    expect(relativeImports(text)).toEqual([
      '../server/x.js',
      '../../server/y.js',
      './c.js',
      '../server/d.js',
      '../side-effect.js',
    ]);
  });
});
