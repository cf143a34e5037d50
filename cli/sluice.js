#!/usr/bin/env node
// The `sluice` command (package.json "bin"). The CLI is TypeScript, run through tsx (a
// dependency), so `npm install` is the whole build: `npx sluice --help`.
import { fstatSync } from 'node:fs';
import { register } from 'tsx/esm/api';

register();
const { run } = await import('./main.ts');
const stop = new AbortController();
let interrupts = 0;
const onSignal = () => {
  // First Ctrl-C stops cleanly (in-flight work finishes and is acked); a second one quits now.
  if (++interrupts > 1) process.exit(130);
  stop.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
// A reader that closed the pipe (`sluice peek orders | head -1`) has seen enough: not a crash.
// Commands that must know (tail acks only what it wrote) see it in their writes' callbacks.
process.stdout.on('error', (e) => {
  if (e.code !== 'EPIPE') throw e;
});
// stdin redirected from a file (`< orders.jsonl`) has a size: push shows its progress against it.
let stdinBytes;
try {
  const st = fstatSync(0);
  if (st.isFile()) stdinBytes = st.size;
} catch {
  // no stdin
}
const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  ...(stdinBytes !== undefined ? { stdinBytes } : {}),
  env: process.env,
  signal: stop.signal,
});
process.exitCode = code;
// Flush and leave even if a keep-alive socket or a timer would hold the loop open.
process.stdout.write('', () => process.exit(code));
