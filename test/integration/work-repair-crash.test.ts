// The has-work crash gap on DynamoDB Local: a pushing process killed with SIGKILL after its
// take (UpdateItem on the partition sequencer: offsets handed out, has-work flag set) answered
// and before its commit leaves the flag set and no work item, so later pushes write none and
// wildcard pops skip the partition; one maintenance pass (the work-index repair) finds it.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { popReq } from '../../bench/leases.js';
import { runMaintenance } from '../../server/service/maintenance/maintenance.js';
import { newAwsTestStorage } from '../support/aws-emulator.js';
import { awsEndpoints } from '../support/aws-endpoints.js';
import { testBackends } from '../support/backends.js';
import type { DieAfterTakeConfig } from '../support/die-after-take.js';
import { json, testServices } from '../support/services.js';
import { drain, drainedQueue, indexState } from '../support/wildcard.js';

const { backends, setup, teardown } = testBackends();
beforeAll(setup);
afterAll(teardown);

const childScript = fileURLToPath(new URL('../support/die-after-take.ts', import.meta.url));

describe.runIf(backends.some((b) => b.name === 'aws'))('integration: a push killed after its take (aws)', () => {
  let rig: Awaited<ReturnType<typeof newAwsTestStorage>>;
  beforeAll(async () => (rig = await newAwsTestStorage(awsEndpoints())));
  afterAll(() => rig.cleanup());

  /** Runs the child push and kills it with SIGKILL once its take has answered. */
  async function pushKilledAfterTake(queue: string, payload: string): Promise<NodeJS.Signals | null> {
    const config: DieAfterTakeConfig = {
      endpoints: awsEndpoints(),
      tables: rig.tables,
      bucket: rig.bucket,
      queue,
      partition: 'Default',
      payload,
    };
    const child = spawn(process.execPath, ['--import', 'tsx', childScript, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4_000)));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.once('exit', (code, signal) => r({ code, signal })),
    );
    const lines = createInterface({ input: child.stdout });
    const taken = await Promise.race([
      new Promise<boolean>((r) => lines.once('line', (l) => r(l === 'taken'))),
      exited.then(() => false),
    ]);
    if (!taken) throw new Error(`the child ended before its take: ${JSON.stringify(await exited)} ${stderr}`);
    child.kill('SIGKILL');
    return (await exited).signal;
  }

  it('hides the partition from wildcard pops until one maintenance pass marks it', async () => {
    const svc = testServices(rig.storage);
    const part = await drainedQueue(svc, 'killed');
    expect(await pushKilledAfterTake('killed', '"lost"')).toBe('SIGKILL');
    expect(await indexState(svc, 'killed', part)).toEqual({ flag: true, item: false });
    // Later pushes find the flag set and write no item: wildcard pops do not see them.
    await svc.pushes.push([{ queue: 'killed', payload: json('second') }]);
    await svc.pushes.push([{ queue: 'killed', payload: json('third') }]);
    expect(await indexState(svc, 'killed', part)).toEqual({ flag: true, item: false });
    expect(await svc.leasePops.pop(popReq('killed'))).toBeNull();

    const r = await runMaintenance(svc);
    if (r.skipped) throw new Error('maintenance lease held');
    // The dead push's offset is a gap: held back until SLUICE_GAP_CLOSE_MS has passed (backdated here).
    expect(await svc.leasePops.pop(popReq('killed'))).toBeNull();
    svc.testClock.advance(svc.config.gapCloseMs);
    expect(await drain(svc, 'killed')).toEqual(['"second"', '"third"']);
    expect(r.workRepair).toMatchObject({ repaired: 1, complete: true });
    // Drained and cleared again by the empty pop at the end: healthy.
    expect(await indexState(svc, 'killed', part)).toEqual({ flag: false, item: false });
  });
});
