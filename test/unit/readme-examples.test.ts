// The README's Client section quotes examples/*.ts word for word (the examples are what the
// HTTP tests run): every code line of that block must still be in one of them. So does
// docs/TARGETS.md its handler module, examples/target-handler.ts, whole (but its header).
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('unit: README client examples', () => {
  it('quotes only lines that are in examples/', () => {
    const readme = readFileSync('README.md', 'utf8');
    const section = readme.slice(readme.indexOf('## Client'), readme.indexOf('## CLI'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block, 'a ts block in the README Client section').toBeDefined();
    const examples = readdirSync('examples')
      .filter((f) => f.endsWith('.ts'))
      .map((f) => readFileSync(`examples/${f}`, 'utf8'));
    const lines = (block as string)
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('// examples/'));
    expect(lines.length).toBeGreaterThan(10);
    const missing = lines.filter((l) => !examples.some((src) => src.split('\n').some((x) => x.trim() === l)));
    expect(missing).toEqual([]);
  });

  it("docs/TARGETS.md's handler module is examples/target-handler.ts, but its header comment", () => {
    const docs = readFileSync('docs/TARGETS.md', 'utf8');
    const section = docs.slice(docs.indexOf('## Develop a consumer locally'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    const example = readFileSync('examples/target-handler.ts', 'utf8');
    expect(block).toBe(example.slice(example.indexOf('*/\n') + 3));
  });
});
