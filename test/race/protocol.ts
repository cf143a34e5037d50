/**
 * What the race tests' parent and worker processes share: where the emulator tables are, what
 * one worker is asked to run, and the event log each worker writes (one JSON object a line).
 *
 * Every event names the service instance that made it (`inst`, like `p1i2`: process 1,
 * instance 2) and its operation number there (`seq`); an instance runs one operation at a time,
 * as a Lambda instance serves one request at a time. Times are `Date.now()` of the worker
 * process (one machine, one clock): `t0` before the call, `t1` after it returned.
 */
import type { AwsEndpoints } from '../support/aws-emulator.js';
import type { TableName } from '../../server/storage/port.js';

/** The emulator resources one scenario runs on (fresh tables and bucket per scenario). */
export interface RaceEnv {
  endpoints: AwsEndpoints;
  tables: Record<TableName, string>;
  bucket: string;
}

export type ScenarioName = 'pushes' | 'pops' | 'wildcard' | 'expiry' | 'claims' | 'redrive' | 'delete';

/** What one worker process runs. */
export interface WorkerSpec {
  scenario: ScenarioName;
  /** This process's index (0-based). */
  proc: number;
  /** Service instances in this process. */
  instances: number;
  /** Instances in every process (an instance's global index is proc * instances + i). */
  procs: number;
  env: RaceEnv;
  /** Scenario parameters (sizes, queue names), made by the parent. */
  params: Record<string, unknown>;
  /** Where this process writes its events. */
  logPath: string;
  /** Epoch ms: every role stops by then, finished or not. */
  deadline: number;
}

/** A cursor row as written (pop, ack, extend): what the recorder saw land in the `leases` table. */
export interface LeaseView {
  id: string;
  exp: number;
  start: number;
  end: number;
}

interface Base {
  inst: string;
  seq: number;
}

interface Timed extends Base {
  t0: number;
  t1: number;
}

/** Logged before a state-changing call, so a call cut short by a kill is known to have been in flight. */
export interface BeginEvent extends Base {
  k: 'begin';
  t0: number;
  op: string;
  /** transactionIds or offsets the call carries. */
  txids?: string[];
  offsets?: number[];
  /** The lease an ack carries. */
  leaseId?: string;
}

export interface PushResultView {
  txid: string;
  status: string;
  offset?: number | undefined;
  partitionId: string;
  messageId: string;
}

export interface PushEvent extends Timed {
  k: 'push';
  queue: string;
  partition: string;
  producer: string;
  /** Producer sequence numbers and transactionIds, in the order sent. */
  items: { seq: number; txid: string }[];
  outcome: 'ok' | 'unavailable' | 'error';
  error?: string;
  results?: PushResultView[];
}

export interface PopEvent extends Timed {
  k: 'pop';
  queue: string;
  route: 'partition' | 'wildcard';
  leaseMs: number;
  leaseId: string;
  msgs: { offset: number; txid: string; id: string; partitionId: string }[];
}

export interface AckEvent extends Timed {
  k: 'ack';
  leaseId: string;
  partitionId: string;
  items: { txid: string; offset: number; status: 'completed' | 'retry' }[];
  results?: { success: boolean; error: string | null; leaseReleased: boolean }[];
  error?: string;
}

/** A cursor row write that landed (logged by the storage recorder, inside the call that made it). */
export interface WriteEvent extends Base {
  k: 'w';
  /** After the write returned. */
  at: number;
  pk: string;
  sk: string;
  ver: number;
  committed: number;
  lease: LeaseView | null;
}

export interface PollEvent extends Timed {
  k: 'poll';
  vis: number;
  records: { offset: number; attempts: number; txid: string }[];
  error?: string;
}

export interface ClaimAckEvent extends Timed {
  k: 'cack';
  offsets: number[];
  committed?: number;
  error?: string;
}

export interface NackEvent extends Timed {
  k: 'nack';
  offset: number;
  attempts: number;
  ok: boolean;
  error?: string;
}

export interface RedriveEvent extends Timed {
  k: 'redrive';
  offset: number;
  ok: boolean;
  error?: string;
}

export interface DeleteEvent extends Timed {
  k: 'delete';
  queue: string;
  existed: boolean;
  /** The incarnation it deleted (only the deleter deletes, so the one read just before). */
  queueId?: string;
}

/** Per instance, at the end: what was not worth a line each. */
export interface StatsEvent extends Base {
  k: 'stats';
  emptyPops: number;
  emptyPolls: number;
  errors: string[];
}

export type RaceEvent =
  | BeginEvent
  | PushEvent
  | PopEvent
  | AckEvent
  | WriteEvent
  | PollEvent
  | ClaimAckEvent
  | NackEvent
  | RedriveEvent
  | DeleteEvent
  | StatsEvent;

/** A line a worker prints on stdout: ready, a self-ending role finished, or the process is done. */
export type WorkerMessage = { ready: true } | { roleDone: string } | { exited: true };

/** A line the parent writes to a worker's stdin. */
export type ParentMessage = { stop: true };
