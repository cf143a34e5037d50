// One concept past 500 lines: the port on SQLite (reads, guarded writes, takes and the group commit they share).
/**
 * The embedded item store: the port's items in one SQLite table (schema in `schema.ts`), every
 * write guarded inside the statement itself and committed in groups (one fsync per event-loop
 * turn, each call in its own savepoint).
 */
import type Database from 'better-sqlite3';
import {
  ConditionFailedError,
  MAX_GET_MANY,
  MAX_TRANSACT_OPS,
  TABLES,
  type Condition,
  type Item,
  type ItemKey,
  type ItemStore,
  type QueryOptions,
  TakeRefusedError,
  TakeWriteError,
  assertRefuseIf,
  type QueryPage,
  type TakeOptions,
  type Taken,
  type Attrs,
  type TableName,
  type WriteEachOptions,
  type WriteOp,
  type WriteResult,
} from '../port.js';
import { assertItemSize, attrsJson } from '../size.js';
import { storeError } from './errors.js';

interface Row {
  pk: string;
  sk: string;
  ver: number;
  attrs: string;
  bin: Buffer | null;
  expires_at: number | null;
}

const COLS = 'pk, sk, ver, attrs, bin, expires_at';
const KEY = 'tbl = ? AND pk = ? AND sk = ?';
const TABLE_SET: ReadonlySet<string> = new Set(TABLES);
/** DynamoDB's key size limits, in UTF-8 bytes. */
const MAX_PK_BYTES = 2048;
const MAX_SK_BYTES = 1024;

function toItem(row: Row): Item {
  const item: Item = { pk: row.pk, sk: row.sk, ver: row.ver, attrs: JSON.parse(row.attrs) as Item['attrs'] };
  if (row.bin !== null) item.bin = row.bin;
  if (row.expires_at !== null) item.expiresAt = row.expires_at;
  return item;
}

const OK: WriteResult = Object.freeze({ ok: true });

/** Thrown inside a savepoint to roll back a multi-row insert that met an existing row. */
const SOME_EXIST = new Error('some rows exist');

/** A write call waiting for the next group commit. */
interface WriteJob {
  kind: 'all' | 'each' | 'take';
  ops: WriteOp[];
  /** Need not be durable before a later job that is ({@link WriteEachOptions.deferDurability}). */
  deferred?: boolean;
  /** For a take: the counter, how many numbers, and the writes to build from them. */
  take?: {
    table: TableName;
    key: ItemKey;
    count: number;
    then?: ((t: Taken) => WriteOp[]) | undefined;
    set?: Attrs | undefined;
    setFirst?: string | undefined;
    refuseIf?: TakeOptions['refuseIf'];
    atMost?: number | undefined;
  };
  taken?: Taken;
  /** Each put's attributes as JSON, serialised once by {@link checkOp} (null for other ops). */
  jsons: (string | null)[];
  resolve(v: WriteResult[] | undefined): void;
  reject(e: unknown): void;
  value?: WriteResult[] | undefined;
  error?: unknown;
}

/** The write parameters shared by every put statement: ver, attrs, bin, expires_at. */
function values(item: Item, json: string): [number, string, Uint8Array | null, number | null] {
  return [item.ver, json, item.bin ?? null, item.expiresAt ?? null];
}

function checkTable(table: TableName): void {
  // Types already forbid it; a runtime check mirrors DynamoDB's ResourceNotFound.
  if (!TABLE_SET.has(table)) throw new Error(`unknown table ${String(table)}`);
}

/** DynamoDB's ValidationException for keys: non-empty strings within the size limits. */
function checkKey(key: ItemKey): void {
  if (typeof key.pk !== 'string' || key.pk.length === 0) throw new Error('partition key must be a non-empty string');
  if (typeof key.sk !== 'string' || key.sk.length === 0) throw new Error('sort key must be a non-empty string');
  // A UTF-16 unit is at most 3 UTF-8 bytes, so only long keys need measuring.
  if (key.pk.length * 3 > MAX_PK_BYTES && Buffer.byteLength(key.pk) > MAX_PK_BYTES)
    throw new Error(`partition key over ${MAX_PK_BYTES} bytes`);
  if (key.sk.length * 3 > MAX_SK_BYTES && Buffer.byteLength(key.sk) > MAX_SK_BYTES)
    throw new Error(`sort key over ${MAX_SK_BYTES} bytes`);
}

/** Validates one op as DynamoDB would; returns a put's attributes as JSON (null for other ops). */
function checkOp(op: WriteOp): string | null {
  checkTable(op.table);
  if (op.op === 'put') {
    checkKey(op.item);
    const json = attrsJson(op.item);
    assertItemSize(op.item, json);
    return json;
  } else if (op.op === 'delete' || op.op === 'check') {
    checkKey(op.key);
    return null;
  } else {
    throw new Error(`unknown write op ${(op as { op: unknown }).op as string}`);
  }
}

const opKey = (op: WriteOp): ItemKey => (op.op === 'put' ? op.item : op.key);

/** Validates a write built by a take: as any op, and never on the counter itself. */
function checkTakeOp(op: WriteOp, t: { table: TableName; key: ItemKey }): string | null {
  const k = opKey(op);
  if (op.table === t.table && k.pk === t.key.pk && k.sk === t.key.sk)
    throw new Error('the writes after a take must not touch its counter');
  return checkOp(op);
}

/** Whether `current` satisfies `cond` (evaluated in JS for check ops and delete-if-absent). */
function holds(cond: Condition, current: Item | undefined): boolean {
  switch (cond.kind) {
    case 'absent':
      return current === undefined;
    case 'exists':
      return current !== undefined;
    case 'version':
      return current !== undefined && current.ver === cond.ver;
  }
}

/**
 * The port's {@link ItemStore} over a database opened by `openDatabase` (schema.ts). Besides the
 * port it offers `flush` (commit the waiting group now, for `close`) and `sweepExpired` (the
 * TTL sweeper).
 *
 * @example
 * ```ts
 * const items = new SqliteItemStore(openDatabase(Sqlite, 'sluice.db', 'full'));
 * await items.put('meta', { pk: 'queue#q', sk: 'config', ver: 1, attrs: {} }, { kind: 'absent' });
 * ```
 */
export class SqliteItemStore implements ItemStore {
  // Prepared once: statement compilation would otherwise dominate small writes.
  private readonly sGet: Database.Statement<[string, string, string], Row>;
  private readonly sUpsert: Database.Statement<unknown[]>;
  private readonly sInsertNew: Database.Statement<unknown[]>;
  private readonly sUpdateIfVer: Database.Statement<unknown[]>;
  private readonly sUpdateIfExists: Database.Statement<unknown[]>;
  private readonly sDelete: Database.Statement<[string, string, string]>;
  private readonly sDeleteIfVer: Database.Statement<[string, string, string, number]>;
  private readonly sSweep: Database.Statement<[number]>;
  private readonly sTakeNew: Database.Statement<[string, string, string, number]>;
  private readonly sTakeRaise: Database.Statement<[number, string, string, string]>;
  private readonly sTakeNewSet: Database.Statement<[string, string, string, number, string]>;
  private readonly sTakeRaiseSet: Database.Statement<[number, string, string, string, string]>;
  private readonly queries = new Map<string, Database.Statement<unknown[], Row>>();
  private readonly txGetMany: (table: TableName, keys: ItemKey[]) => (Item | undefined)[];
  private readonly txGroup: Database.Transaction<(jobs: WriteJob[]) => void>;
  private pending: WriteJob[] = [];
  private readonly insertManyStmts = new Map<number, Database.Statement<unknown[]>>();

  /** `INSERT … VALUES (…) × n ON CONFLICT DO NOTHING`, prepared once per row count. */
  private insertMany(n: number): Database.Statement<unknown[]> {
    let st = this.insertManyStmts.get(n);
    if (!st) {
      const rows = Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
      st = this.db.prepare(
        `INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES ${rows} ON CONFLICT (tbl, pk, sk) DO NOTHING`,
      );
      this.insertManyStmts.set(n, st);
    }
    return st;
  }

  /** Whether the database flushes every commit to disk (`synchronous = FULL`, 2 and up). */
  private readonly syncFull: boolean;
  /** Whether the connection's commits flush now (it switches for groups of deferred writes). */
  private flushing: boolean;

  constructor(private readonly db: Database.Database) {
    this.syncFull = (db.pragma('synchronous', { simple: true }) as number) >= 2;
    this.flushing = this.syncFull;
    this.sGet = db.prepare(`SELECT ${COLS} FROM items WHERE ${KEY}`);
    const insert = 'INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)';
    // Guards are folded into the write itself (ON CONFLICT / WHERE ver = ?), so a write that
    // succeeds costs one statement; the current item is only read back when a guard fails.
    this.sUpsert = db.prepare(
      `${insert} ON CONFLICT (tbl, pk, sk) DO UPDATE SET ver = excluded.ver, attrs = excluded.attrs, bin = excluded.bin, expires_at = excluded.expires_at`,
    );
    this.sInsertNew = db.prepare(`${insert} ON CONFLICT (tbl, pk, sk) DO NOTHING`);
    this.sUpdateIfVer = db.prepare(
      `UPDATE items SET ver = ?, attrs = ?, bin = ?, expires_at = ? WHERE ${KEY} AND ver = ?`,
    );
    this.sUpdateIfExists = db.prepare(`UPDATE items SET ver = ?, attrs = ?, bin = ?, expires_at = ? WHERE ${KEY}`);
    this.sDelete = db.prepare(`DELETE FROM items WHERE ${KEY}`);
    this.sDeleteIfVer = db.prepare(`DELETE FROM items WHERE ${KEY} AND ver = ?`);
    this.sSweep = db.prepare('DELETE FROM items WHERE expires_at < ?');
    this.sTakeNew = db.prepare(
      `INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES (?, ?, ?, ?, '{}', NULL, NULL)`,
    );
    this.sTakeRaise = db.prepare(`UPDATE items SET ver = ver + ? WHERE ${KEY}`);
    this.sTakeNewSet = db.prepare(
      `INSERT INTO items (tbl, pk, sk, ver, attrs, bin, expires_at) VALUES (?, ?, ?, ?, ?, NULL, NULL)`,
    );
    this.sTakeRaiseSet = db.prepare(`UPDATE items SET ver = ver + ?, attrs = ? WHERE ${KEY}`);

    // IMMEDIATE takes the write lock up front: a deferred transaction that reads first can
    // fail with SQLITE_BUSY on lock upgrade when another process writes, without waiting.
    const applyAll = db.transaction((ops: WriteOp[], jsons: (string | null)[]) => {
      let failed: { index: number; current: Item | undefined }[] | undefined;
      for (let i = 0; i < ops.length; i++) {
        const r = this.apply(ops[i] as WriteOp, jsons[i] ?? null);
        // Keys are distinct, so a failed op's `current` is the pre-transaction item and later
        // guards are unaffected by earlier writes: evaluating in order is equivalent to
        // DynamoDB checking all guards up front.
        if (!r.ok) (failed ??= []).push({ index: i, current: r.current });
      }
      // Throwing inside db.transaction rolls everything back.
      if (failed) throw new ConditionFailedError(failed);
    });
    const applyEach = db.transaction((ops: WriteOp[], jsons: (string | null)[]) =>
      ops.map((op, i) => this.apply(op, jsons[i] ?? null)),
    );
    // The common writeEach (many put-if-absent into one table, e.g. dedup reservations) as one
    // multi-row INSERT: half the cost of one statement per row. If any row already exists the
    // savepoint rolls back and the ops run one by one for their individual outcomes.
    const insertAllNew = db.transaction((ops: WriteOp[], jsons: (string | null)[]) => {
      const params: unknown[] = [];
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i] as Extract<WriteOp, { op: 'put' }>;
        const { item } = op;
        params.push(op.table, item.pk, item.sk, item.ver, jsons[i], item.bin ?? null, item.expiresAt ?? null);
      }
      if (this.insertMany(ops.length).run(...params).changes !== ops.length) throw SOME_EXIST;
      return ops.map(() => OK);
    });
    const writeEachFast = (ops: WriteOp[], jsons: (string | null)[]): WriteResult[] => {
      if (ops.length < 2 || ops.length > 100 || !ops.every((o) => o.op === 'put' && o.cond?.kind === 'absent'))
        return applyEach(ops, jsons);
      try {
        return insertAllNew(ops, jsons);
      } catch (e) {
        if (e !== SOME_EXIST) throw e;
        return applyEach(ops, jsons);
      }
    };
    // Group commit: every write call waiting when the event loop comes round is applied in one
    // SQLite transaction (one fsync), each inside its own savepoint (better-sqlite3 nests a
    // transaction function as a SAVEPOINT), so one call's failed guard rolls back only itself.
    // A take and the writes built from it, in one savepoint: both or neither.
    const applyTake = db.transaction((job: WriteJob) => {
      const t = job.take as NonNullable<WriteJob['take']>;
      const before = this.read(t.table, t.key);
      const taken: Taken = { first: before?.ver ?? 0, before };
      if (t.atMost !== undefined && taken.first + t.count > t.atMost)
        throw new ConditionFailedError([{ index: 0, current: before }]);
      const r = t.refuseIf;
      if (r && before) {
        for (const k of r.anyOf) {
          const v = before.attrs[k];
          if (typeof v === 'string' && v > r.after && v <= r.upTo) throw new TakeRefusedError(before);
        }
      }
      const set = t.setFirst === undefined ? t.set : { ...t.set, [t.setFirst]: taken.first };
      if (set && Object.keys(set).length > 0) {
        const attrs = JSON.stringify({ ...before?.attrs, ...set });
        if (before) this.sTakeRaiseSet.run(t.count, attrs, t.table, t.key.pk, t.key.sk);
        else this.sTakeNewSet.run(t.table, t.key.pk, t.key.sk, t.count, attrs);
      } else if (before) this.sTakeRaise.run(t.count, t.table, t.key.pk, t.key.sk);
      else this.sTakeNew.run(t.table, t.key.pk, t.key.sk, t.count);
      if (t.then) {
        try {
          const ops = t.then(taken);
          const jsons = ops.map((op) => checkTakeOp(op, t));
          if (ops.length > 0) applyAll(ops, jsons);
        } catch (e) {
          // A full disk or an I/O error rolls back the whole group: that fails every call in it.
          const cause = storeError(e);
          if (!db.inTransaction) throw cause;
          throw new TakeWriteError(taken.first, t.count, false, cause);
        }
      }
      return taken;
    });
    this.txGroup = db.transaction((jobs: WriteJob[]) => {
      for (const job of jobs) {
        try {
          if (job.kind === 'take') job.taken = applyTake(job);
          else
            job.value =
              job.kind === 'all' ? (applyAll(job.ops, job.jsons), undefined) : writeEachFast(job.ops, job.jsons);
        } catch (e) {
          // SQLite rolls the whole transaction back on some errors (a full disk, an I/O error):
          // then no later call may run outside it, in autocommit, so the group fails as one.
          if (!db.inTransaction) throw e;
          job.error = storeError(e);
        }
      }
    });
    // A read transaction gives getMany one snapshot across keys (cheap in WAL mode).
    this.txGetMany = db.transaction((table: TableName, keys: ItemKey[]) => keys.map((k) => this.read(table, k)));
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- async so a bad key or an SQLite error rejects, as the port's callers expect
  async get(table: TableName, key: ItemKey): Promise<Item | undefined> {
    checkTable(table);
    checkKey(key);
    return this.read(table, key);
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- async so a bad key or an SQLite error rejects, as the port's callers expect
  async getMany(table: TableName, keys: ItemKey[]): Promise<(Item | undefined)[]> {
    checkTable(table);
    if (keys.length > MAX_GET_MANY) throw new Error(`getMany takes at most ${MAX_GET_MANY} keys, got ${keys.length}`);
    for (const k of keys) checkKey(k);
    if (keys.length === 0) return [];
    return this.txGetMany(table, keys);
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- async so a bad key or an SQLite error rejects, as the port's callers expect
  async query(table: TableName, pk: string, opts: QueryOptions = {}): Promise<QueryPage> {
    checkTable(table);
    if (typeof pk !== 'string' || pk.length === 0) throw new Error('partition key must be a non-empty string');
    const { gte, lte, prefix, reverse = false, limit, after } = opts;
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
      throw new Error(`query limit must be a positive integer, got ${limit}`);

    // Every bound goes to SQLite as a range term on the primary key; the planner turns them
    // into one index range scan, so a page costs O(limit) whatever the partition size.
    const terms: string[] = [];
    const params: unknown[] = [table, pk];
    if (gte !== undefined) {
      terms.push('sk >= ?');
      params.push(gte);
    }
    if (lte !== undefined) {
      terms.push('sk <= ?');
      params.push(lte);
    }
    if (prefix !== undefined && prefix !== '') {
      // Keys starting with P are exactly [P, P || 0xFF) in byte order (0xFF never occurs in
      // UTF-8). Cast to TEXT so SQLite compares bytes instead of ranking BLOB above TEXT.
      terms.push('sk >= ?', 'sk < CAST(? AS TEXT)');
      params.push(prefix, Buffer.concat([Buffer.from(prefix), Buffer.from([0xff])]));
    }
    if (after !== undefined) {
      terms.push(reverse ? 'sk < ?' : 'sk > ?');
      params.push(after);
    }
    const hasLimit = limit !== undefined;
    if (hasLimit) params.push(limit + 1); // one extra row tells whether `next` is needed

    const shape = `${terms.join(' AND ')}|${reverse ? 'D' : 'A'}|${hasLimit ? 'L' : ''}`;
    let stmt = this.queries.get(shape);
    if (stmt === undefined) {
      const where = ['tbl = ? AND pk = ?', ...terms].join(' AND ');
      stmt = this.db.prepare(
        `SELECT ${COLS} FROM items WHERE ${where} ORDER BY sk ${reverse ? 'DESC' : 'ASC'}${hasLimit ? ' LIMIT ?' : ''}`,
      );
      this.queries.set(shape, stmt);
    }
    const rows = stmt.all(...params);
    if (hasLimit && rows.length > limit) {
      rows.length = limit;
      return { items: rows.map(toItem), next: (rows[limit - 1] as Row).sk };
    }
    return { items: rows.map(toItem) };
  }

  async put(table: TableName, item: Item, cond?: Condition): Promise<void> {
    const op: WriteOp = { op: 'put', table, item, cond };
    await this.enqueue('all', [op], [checkOp(op)]);
  }

  async delete(table: TableName, key: ItemKey, cond?: Condition): Promise<void> {
    const op: WriteOp = { op: 'delete', table, key, cond };
    await this.enqueue('all', [op], [checkOp(op)]);
  }

  async take(
    table: TableName,
    key: ItemKey,
    count: number,
    then?: (t: Taken) => WriteOp[],
    opts?: TakeOptions,
  ): Promise<Taken> {
    checkTable(table);
    checkKey(key);
    if (!Number.isInteger(count) || count < 1) throw new Error(`take needs a whole count of 1 or more, got ${count}`);
    const set = opts?.set;
    const refuseIf = opts?.refuseIf;
    if (refuseIf) assertRefuseIf(refuseIf);
    return new Promise<Taken>((resolve, reject) => {
      this.pending.push({
        kind: 'take',
        ops: [],
        jsons: [],
        take: { table, key, count, then, set, setFirst: opts?.setFirst, refuseIf, atMost: opts?.atMost },
        // flush hands a take job its `taken` (see there).
        resolve: (v) => resolve(v as unknown as Taken),
        reject,
      });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Queues a write for the next group commit; resolves once it is committed (durable). */
  private enqueue(kind: 'all', ops: WriteOp[], jsons: (string | null)[]): Promise<undefined>;
  private enqueue(kind: 'each', ops: WriteOp[], jsons: (string | null)[], deferred?: boolean): Promise<WriteResult[]>;
  private enqueue(
    kind: 'all' | 'each',
    ops: WriteOp[],
    jsons: (string | null)[],
    deferred?: boolean,
  ): Promise<WriteResult[] | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ kind, ops, jsons, resolve, reject, deferred });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Commits every write waiting for the next group commit (the event loop's turn, or close). */
  flush(): void {
    const jobs = this.pending;
    this.pending = [];
    if (jobs.length === 0) return;
    // A group of deferred writes only commits without the disk flush; the next flushed commit
    // (WAL frames are appended in order) makes them durable with it.
    const flushed = this.syncFull && jobs.some((j) => !j.deferred);
    try {
      if (this.syncFull && flushed !== this.flushing) {
        this.db.pragma(`synchronous = ${flushed ? 'FULL' : 'NORMAL'}`);
        this.flushing = flushed;
      }
      this.txGroup.immediate(jobs);
    } catch (e) {
      // The commit itself failed (disk full, I/O error): nothing of the group is durable.
      const err = storeError(e);
      for (const j of jobs) j.reject(err);
      return;
    }
    for (const j of jobs) {
      if (j.error !== undefined) j.reject(j.error);
      else if (j.kind === 'take') (j.resolve as (v: unknown) => void)(j.taken);
      else j.resolve(j.value);
    }
  }

  async writeEach(ops: WriteOp[], opts: WriteEachOptions = {}): Promise<WriteResult[]> {
    const jsons = ops.map((op) => {
      if (op.op === 'check') throw new Error('check ops are only valid in transact');
      return checkOp(op);
    });
    if (ops.length === 0) return [];
    // One savepoint in the next group commit; outcomes are still per op.
    return this.enqueue('each', ops, jsons, opts.deferDurability === true);
  }

  async transact(ops: WriteOp[]): Promise<void> {
    if (ops.length > MAX_TRANSACT_OPS)
      throw new Error(`transact takes at most ${MAX_TRANSACT_OPS} ops, got ${ops.length}`);
    const seen = new Set<string>();
    const jsons = ops.map((op) => {
      const json = checkOp(op);
      const k = opKey(op);
      // Length-prefixed, so no pk/sk content can make two different keys collide.
      const id = `${op.table}\u0000${k.pk.length}\u0000${k.pk}\u0000${k.sk}`;
      if (seen.has(id)) throw new Error(`transact has more than one op on ${op.table} ${k.pk} ${k.sk}`);
      seen.add(id);
      return json;
    });
    if (ops.length === 0) return;
    await this.enqueue('all', ops, jsons);
  }

  sweepExpired(nowSeconds: number): number {
    return this.sSweep.run(nowSeconds).changes;
  }

  private read(table: TableName, key: ItemKey): Item | undefined {
    const row = this.sGet.get(table, key.pk, key.sk);
    return row === undefined ? undefined : toItem(row);
  }

  /** Applies one validated op inside the caller's transaction. */
  private apply(op: WriteOp, json: string | null): WriteResult {
    const { table } = op;
    if (op.op === 'put') {
      const { item, cond } = op;
      const [ver, attrs, bin, exp] = values(item, json ?? attrsJson(item));
      if (cond === undefined) {
        this.sUpsert.run(table, item.pk, item.sk, ver, attrs, bin, exp);
        return OK;
      }
      switch (cond.kind) {
        case 'absent':
          if (this.sInsertNew.run(table, item.pk, item.sk, ver, attrs, bin, exp).changes === 1) return OK;
          return { ok: false, current: this.read(table, item) };
        case 'version':
          if (this.sUpdateIfVer.run(ver, attrs, bin, exp, table, item.pk, item.sk, cond.ver).changes === 1) return OK;
          return { ok: false, current: this.read(table, item) };
        case 'exists':
          if (this.sUpdateIfExists.run(ver, attrs, bin, exp, table, item.pk, item.sk).changes === 1) return OK;
          return { ok: false, current: undefined };
      }
    }
    const { key, cond } = op;
    if (op.op === 'check') {
      const current = this.read(table, key);
      return holds(op.cond, current) ? OK : { ok: false, current };
    }
    if (cond === undefined) {
      this.sDelete.run(table, key.pk, key.sk);
      return OK;
    }
    switch (cond.kind) {
      case 'version':
        if (this.sDeleteIfVer.run(table, key.pk, key.sk, cond.ver).changes === 1) return OK;
        return { ok: false, current: this.read(table, key) };
      case 'exists':
        if (this.sDelete.run(table, key.pk, key.sk).changes === 1) return OK;
        return { ok: false, current: undefined };
      case 'absent': {
        // Deleting what must not exist is a no-op when the guard holds.
        const current = this.read(table, key);
        return current === undefined ? OK : { ok: false, current };
      }
    }
  }
}
