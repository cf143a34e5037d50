/**
 * One OS process of a race (run with tsx by `harness.ts`): builds its service instances over
 * the scenario's emulator tables, runs each instance's role, and writes every event to its log
 * file (synchronously, a line at a time, so a SIGKILL loses at most the calls in flight).
 *
 * argv[2] is the {@link WorkerSpec} as JSON. Prints `{"ready":true}` once the instances exist,
 * `{"roleDone":…}` as each self-ending role ends and `{"exited":true}` at the end. A `{"stop":true}`
 * line on stdin stops every role after its current call; stdin closing (the parent is gone)
 * ends the process at once.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createInstance } from './instance.js';
import type { ParentMessage, RaceEvent, WorkerMessage, WorkerSpec } from './protocol.js';
import type { RoleContext } from './roles.js';
import { SCENARIOS } from './scenarios.js';

const spec = JSON.parse(process.argv[2] ?? '') as WorkerSpec;
const scenario = SCENARIOS[spec.scenario];
const fd = openSync(spec.logPath, 'a');
const log = (e: RaceEvent): void => {
  writeSync(fd, `${JSON.stringify(e)}\n`);
};
const say = (m: WorkerMessage): void => {
  process.stdout.write(`${JSON.stringify(m)}\n`);
};

let stop = false;
createInterface({ input: process.stdin })
  .on('line', (line) => {
    if ((JSON.parse(line) as ParentMessage).stop) stop = true;
  })
  .on('close', () => process.exit(3));

const instances = Array.from({ length: spec.instances }, (_, i) =>
  createInstance(`p${spec.proc}i${i}`, spec.env, log, scenario.config),
);
say({ ready: true });

await Promise.all(
  instances.map(async (inst, i) => {
    const index = spec.proc * spec.instances + i;
    const role = scenario.role(spec, index);
    const ctx: RoleContext = {
      inst,
      stopped: () => stop || Date.now() > spec.deadline,
      stats: { emptyPops: 0, emptyPolls: 0, errors: [] },
    };
    try {
      await role.run(ctx);
    } catch (e) {
      ctx.stats.errors.push(`${role.name} ended with ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    }
    log({ k: 'stats', inst: inst.id, seq: inst.next(), ...ctx.stats });
    if (role.selfEnding) say({ roleDone: role.name });
  }),
);
await Promise.all(instances.map((i) => i.close()));
closeSync(fd);
say({ exited: true });
process.exit(0);
