// Small objects live in one SQLite database, objects/packed.sqlite, written with group commit.
//
// Why: measured on this disk, fsync of individual small files caps at ~2,300–4,400 files/s (each new
// loose object needs a file fsync and a directory fsync), but the product needs ≥5,000 durable
// small-file versions/s. A WAL commit is one fsync however many rows it holds, so puts that arrive
// together share one: every put that arrives during the current event-loop turn, or while the previous
// commit is running, joins the next batch, and each put resolves only after its batch has committed.
// Under load the batch grows to match the disk's fsync latency instead of the rate dropping.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { StrataError, storageFailure } from '../errors.js';
import type { ObjectInfo } from '../ports/content-store.js';
import type { Clock } from '../ports/world.js';
import type { ContentHash } from '../types.js';
import { PACK_WORKER_SOURCE } from './local-content-store-pack-worker.js';
import { keepWalIndexAhead, reserveWalIndex } from './wal-index-space.js';

/** A batch is cut at this many payload bytes, so one postMessage never copies an unbounded amount. */
const MAX_BATCH_BYTES = 16 << 20;

/** A shard's place in a pack file (local-content-store-shard-packs.ts). */
export interface PackEntry {
  hash: ContentHash;
  offset: number;
  size: number;
}

type PackOp =
  /** hash null: the writer thread hashes the bytes */
  | { kind: 'put'; hash: ContentHash | null; data: Uint8Array; now: number }
  /** several contents back to back in `data`, hashed by the writer thread */
  | { kind: 'putMany'; data: Uint8Array; sizes: number[]; now: number }
  | { kind: 'delete'; hash: ContentHash }
  | { kind: 'entries'; pack: string; entries: PackEntry[]; now: number }
  | { kind: 'unentry'; hash: ContentHash }
  | { kind: 'move'; from: string; to: string; entries: Array<{ hash: ContentHash; offset: number }> };

interface Queued {
  op: PackOp;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

interface BatchReply {
  seq: number;
  results?: unknown[];
  error?: { message: string; code?: string };
}

/** The thread ran a checkpoint (local-content-store-pack-worker.ts); no batch is settled by it. */
interface CheckpointNote {
  checkpoint: { log: number; checkpointed: number };
}

interface Row {
  hash: ContentHash;
  size: number;
  touched_at: number;
}

export class PackObjects {
  private worker: Worker | null = null;
  private queue: Queued[] = [];
  private inflight: Queued[] | null = null;
  private scheduled = false;
  private closed = false;
  private seq = 0;
  private idle: (() => void)[] = [];
  /** committed transactions and the operations they held (for tests and metrics) */
  readonly stats = { batches: 0, ops: 0, checkpoints: 0 };
  private readonly getStmt: Database.Statement<[string], { size: number; data: Buffer; touched_at: number }>;
  private readonly manyStmts = new Map<number, Database.Statement>();
  private readonly statStmt: Database.Statement<[string], Row>;
  private readonly hasStmt: Database.Statement<[string], number>;
  private readonly pageStmt: Database.Statement<[string, number], Row>;

  private constructor(
    private readonly reader: Database.Database,
    private readonly dbPath: string,
    private readonly clock: Clock,
    /** SQLite's descriptor of the pack's -shm file, kept open by `reader` (wal-index-space.ts) */
    private readonly walIndexFd: number | null,
  ) {
    this.getStmt = reader.prepare('SELECT size, data, touched_at FROM objects WHERE hash = ?');
    this.statStmt = reader.prepare('SELECT hash, size, touched_at FROM objects WHERE hash = ?');
    // The primary key's index alone answers it. stat() reads the row, and touched_at sits after the
    // blob: asking it of 100,000 objects (a sync feed read back) paged the whole pack into memory.
    this.hasStmt = reader.prepare<[string], number>('SELECT 1 FROM objects WHERE hash = ?').pluck();
    this.pageStmt = reader.prepare('SELECT hash, size, touched_at FROM objects WHERE hash > ? ORDER BY hash LIMIT ?');
  }

  /**
   * The main thread keeps its own connection for reads: in WAL mode readers never wait for the writer
   * thread, and a row is visible to them as soon as the commit that the put awaited has returned.
   */
  static open(dbPath: string, clock: Clock): PackObjects {
    const reader = new Database(dbPath);
    let walIndexFd: number | null;
    try {
      reader.pragma('journal_mode = WAL');
      // Before the first commit (the tables below, the writer thread's): both write into the wal-index.
      walIndexFd = reserveWalIndex(reader, dbPath);
      reader.pragma('busy_timeout = 5000');
      // Reads through a memory map and a 64 MiB page cache instead of a pread per 4 KiB page: a git
      // export reads thousands of small objects in a row (measured 43 µs per object without, see
      // bench/git-export-project.ts). Both are upper bounds, used only as the pack grows.
      reader.pragma('mmap_size = 268435456');
      reader.pragma('cache_size = -65536');
      // A rowid table, not WITHOUT ROWID: SQLite advises against WITHOUT ROWID for rows this large.
      reader.exec(`CREATE TABLE IF NOT EXISTS objects (
        hash TEXT PRIMARY KEY NOT NULL,
        size INTEGER NOT NULL,
        data BLOB NOT NULL,
        touched_at INTEGER NOT NULL
      )`);
      // Dataset shards kept inside pack files (objects/packs/), one row per shard.
      reader.exec(`CREATE TABLE IF NOT EXISTS pack_entries (
        hash TEXT PRIMARY KEY NOT NULL,
        pack TEXT NOT NULL,
        offset INTEGER NOT NULL,
        size INTEGER NOT NULL,
        touched_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS pack_entries_by_pack ON pack_entries (pack)`);
    } catch (error) {
      reader.close();
      throw error;
    }
    return new PackObjects(reader, dbPath, clock, walIndexFd);
  }

  /** The pack's database file (for other readers, such as the batch reader thread). */
  get path(): string {
    return this.dbPath;
  }

  get(hash: ContentHash): { data: Buffer; info: ObjectInfo } | null {
    const row = this.getStmt.get(hash);
    if (row === undefined) return null;
    return { data: row.data, info: { hash, size: row.size, touchedAtMs: row.touched_at } };
  }

  /** Several objects in one statement (absent ones are simply missing from the map). */
  getMany(hashes: ContentHash[]): Map<ContentHash, Buffer> {
    const found = new Map<ContentHash, Buffer>();
    for (let start = 0; start < hashes.length; start += 500) {
      const chunk = hashes.slice(start, start + 500);
      let statement = this.manyStmts.get(chunk.length);
      if (statement === undefined) {
        statement = this.reader.prepare(`SELECT hash, data FROM objects WHERE hash IN (${chunk.map(() => '?').join(', ')})`);
        // Windows have few distinct sizes (full ones and the tail of each commit); keep it bounded.
        if (this.manyStmts.size < 64) this.manyStmts.set(chunk.length, statement);
      }
      const rows = statement.all(...chunk) as Array<{ hash: ContentHash; data: Buffer }>;
      for (const row of rows) found.set(row.hash, row.data);
    }
    return found;
  }

  has(hash: ContentHash): boolean {
    return this.hasStmt.get(hash) !== undefined;
  }

  stat(hash: ContentHash): ObjectInfo | null {
    const row = this.statStmt.get(hash);
    return row === undefined ? null : toInfo(row);
  }

  /** Keyset pages, so a caller may use the store between pages (no statement stays open across awaits). */
  page(after: string, limit: number): ObjectInfo[] {
    return this.pageStmt.all(after, limit).map(toInfo);
  }

  /** Resolves with `created` once the batch holding this put is durable. */
  async put(hash: ContentHash, data: Uint8Array): Promise<boolean> {
    // Copy now: the caller may reuse its buffer before the batch is sent, and the copy owns its
    // ArrayBuffer, so it can be transferred (Buffer.concat results may share Node's pooled one).
    return (await this.enqueue({ kind: 'put', hash, data: new Uint8Array(data), now: this.clock.now() })) === true;
  }

  /**
   * Like put(), with the hash worked out by the writer thread, which has the bytes anyway: a git push
   * of 5,300 small blobs spent ~30 ms of the event loop hashing them (bench/git-push.ts).
   */
  putHashing(data: Uint8Array): Promise<{ hash: ContentHash; size: number; created: boolean }> {
    return this.enqueue({ kind: 'put', hash: null, data: new Uint8Array(data), now: this.clock.now() }) as Promise<{ hash: ContentHash; size: number; created: boolean }>;
  }

  /**
   * putHashing() for many contents: one copy of all of them (one buffer to transfer) and one queued
   * operation, instead of a copy, a message entry and a promise each.
   */
  putHashingMany(datas: Uint8Array[]): Promise<Array<{ hash: ContentHash; size: number; created: boolean }>> {
    let total = 0;
    for (const data of datas) total += data.length;
    const all = new Uint8Array(total);
    let offset = 0;
    for (const data of datas) {
      all.set(data, offset);
      offset += data.length;
    }
    const op: PackOp = { kind: 'putMany', data: all, sizes: datas.map((data) => data.length), now: this.clock.now() };
    return this.enqueue(op) as Promise<Array<{ hash: ContentHash; size: number; created: boolean }>>;
  }

  async delete(hash: ContentHash): Promise<void> {
    await this.enqueue({ kind: 'delete', hash });
  }

  /** Indexes shards of a durable pack file; `created` per entry (false: already indexed elsewhere). */
  async addEntries(pack: string, entries: PackEntry[]): Promise<boolean[]> {
    return (await this.enqueue({ kind: 'entries', pack, entries, now: this.clock.now() })) as boolean[];
  }

  /** Drops a shard's index row; resolves with the pack it was in (null: it was not indexed). */
  async removeEntry(hash: ContentHash): Promise<string | null> {
    return (await this.enqueue({ kind: 'unentry', hash })) as string | null;
  }

  /** Repoints entries still in pack `from` to their copies in pack `to`; resolves with how many moved. */
  async moveEntries(from: string, to: string, entries: Array<{ hash: ContentHash; offset: number }>): Promise<number> {
    return (await this.enqueue({ kind: 'move', from, to, entries })) as number;
  }

  /** Prepared on the main thread's read connection (pack_entries lookups, shard-packs module). */
  prepare<P extends unknown[], R>(sql: string): Database.Statement<P, R> {
    return this.reader.prepare<P, R>(sql);
  }

  /** Commits everything already queued, then stops the writer thread and closes the database. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.inflight !== null || this.queue.length > 0 || this.scheduled) {
      await new Promise<void>((resolve) => this.idle.push(resolve));
    }
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.ref(); // an unref'd worker would let the process exit with this close still pending
      worker.postMessage({ op: 'close' });
      await exited;
    }
    this.reader.close();
  }

  private enqueue(op: PackOp): Promise<unknown> {
    if (this.closed) return Promise.reject(new StrataError('SHUTTING_DOWN'));
    return new Promise<unknown>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      this.schedule();
    });
  }

  /** setImmediate runs after the current turn's I/O callbacks: everything that arrives in this turn joins. */
  private schedule(): void {
    if (this.scheduled || this.inflight !== null) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.queue.length === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    let bytes = 0;
    let count = 0;
    while (count < this.queue.length && (count === 0 || bytes < MAX_BATCH_BYTES)) {
      const op = this.queue[count]!.op;
      bytes += op.kind === 'put' || op.kind === 'putMany' ? op.data.byteLength : 0;
      count += 1;
    }
    const batch = this.queue.splice(0, count);
    this.inflight = batch;
    const worker = this.ensureWorker();
    worker.ref();
    const transfer = batch.flatMap((q) => (q.op.kind === 'put' || q.op.kind === 'putMany' ? [q.op.data.buffer as ArrayBuffer] : []));
    worker.postMessage({ seq: ++this.seq, ops: batch.map((q) => q.op) }, transfer);
  }

  private onReply(reply: BatchReply | CheckpointNote): void {
    if ('checkpoint' in reply) {
      this.stats.checkpoints += 1;
      return;
    }
    const batch = this.inflight;
    if (batch === null || reply.seq !== this.seq) return;
    this.settle(batch, reply);
  }

  private settle(batch: Queued[], reply: BatchReply): void {
    this.inflight = null;
    this.worker?.unref();
    // The WAL grew: blocks for the wal-index the next commits will write, while there is room.
    if (this.walIndexFd !== null && this.reader.open) keepWalIndexAhead(this.walIndexFd);
    this.stats.batches += 1;
    this.stats.ops += batch.length;
    if (reply.results !== undefined) {
      const results = reply.results;
      for (const [i, q] of batch.entries()) q.resolve(results[i]);
    } else {
      const error = storageFailure(`Writing the object pack failed: ${reply.error?.message ?? 'unknown error'}`, { details: { code: reply.error?.code } });
      for (const q of batch) q.reject(error);
    }
    // Whatever arrived while this commit ran is the next batch; flush it in a fresh turn so puts
    // resolved just now (whose callers may put again immediately) can still join it.
    this.schedule();
  }

  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(PACK_WORKER_SOURCE, {
      eval: true,
      workerData: {
        sqliteModulePath: createRequire(import.meta.url).resolve('better-sqlite3'),
        blakeModulePath: createRequire(import.meta.url).resolve('@napi-rs/blake-hash'),
        dbPath: this.dbPath,
      },
    });
    worker.unref();
    worker.on('message', (reply: BatchReply | CheckpointNote) => this.onReply(reply));
    const fail = (cause: unknown) => {
      if (this.worker === worker) this.worker = null; // the next batch starts a fresh thread
      const batch = this.inflight;
      if (batch !== null) this.settle(batch, { seq: this.seq, error: { message: String(cause) } });
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(`the pack writer exited with code ${code}`));
    this.worker = worker;
    return worker;
  }
}

function toInfo(row: Row): ObjectInfo {
  return { hash: row.hash, size: row.size, touchedAtMs: row.touched_at };
}
