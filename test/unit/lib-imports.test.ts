// What `cdk synth` loads: the runtime import graph of the CDK app (bin/sluice.ts) reaches the
// contract and a few SDK-free constant modules of the server, never a handler, a service or
// the AWS SDK (docs/ARCHITECTURE.md, The stack). Type-only imports are erased and not followed.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** The module specifiers `file` imports at run time (type-only imports and exports left out). */
function runtimeImports(file: string): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const typeOnly =
        c?.isTypeOnly ||
        (c &&
          !c.name &&
          c.namedBindings &&
          ts.isNamedImports(c.namedBindings) &&
          c.namedBindings.elements.length > 0 &&
          c.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.push(n.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      const typeOnly =
        n.isTypeOnly ||
        (n.exportClause &&
          ts.isNamedExports(n.exportClause) &&
          n.exportClause.elements.length > 0 &&
          n.exportClause.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.push(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = n.arguments;
      if (arg && ts.isStringLiteral(arg)) out.push(arg.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Every repository file and every package the app loads, from `entry`. */
function graphOf(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [resolve(root, entry)];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of runtimeImports(file)) {
      if (!spec.startsWith('.')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        continue;
      }
      todo.push(join(dirname(file), spec).replace(/\.js$/, '.ts'));
    }
  }
  return { files: new Set([...files].map((f) => relative(root, f))), packages };
}

describe("cdk synth's module graph", () => {
  const { files, packages } = graphOf('bin/sluice.ts');
  const server = [...files].filter((f) => f.startsWith('server/')).sort();

  it('reaches no handler, no service and no route table of the server', () => {
    expect(
      server.filter((f) => /^server\/(http\/handlers|service)\//.test(f) || f === 'server/http/routes.ts'),
    ).toEqual([]);
  });

  it('reaches only the SDK-free constant modules it names of the server', () => {
    expect(server).toEqual(ALLOWED);
  });

  it('loads no AWS SDK and no storage driver', () => {
    expect([...packages].filter((p) => p.startsWith('@aws-sdk') || /sqlite|dynamo/.test(p))).toEqual([]);
  });

  it('reads the routes from the contract', () => {
    expect(files.has('contract/index.ts')).toBe(true);
  });
});

/** The server modules synth may load: constants, the table schema, the grants parser and its errors. */
const ALLOWED = [
  'server/config.ts',
  'server/core/errors.ts',
  'server/core/holds.ts',
  'server/core/notifications.ts',
  'server/entry/maintenance-event.ts',
  'server/http/errors.ts',
  'server/http/grants.ts',
  'server/storage/aws/schema.ts',
  'server/storage/blob-prefixes.ts',
  'server/storage/port.ts',
];
