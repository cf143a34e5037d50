/**
 * Handlers are leaves: each implements its routes with services and shared HTTP pieces, and none
 * imports another (what two handlers share lives in server/http/ or server/service/).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HANDLERS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'server', 'http', 'handlers');

describe('handler files', () => {
  it('import no other handler file', () => {
    const files = readdirSync(HANDLERS).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(10);
    const crossImports = files.flatMap((f) =>
      [...readFileSync(join(HANDLERS, f), 'utf8').matchAll(/from '(\.\/[^']+)'/g)].map((m) => `${f} → ${m[1]}`),
    );
    expect(crossImports).toEqual([]);
  });
});
