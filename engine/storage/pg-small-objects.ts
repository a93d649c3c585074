// Small objects in Postgres, the rest in the bucket: a content store over two tiers, for a server on
// Postgres + S3. Most of what a team versions is small (source files of a few KiB), and an S3 request
// per small object cost more than the whole of a write's database work (issue 17: with every object
// in s3rver, 3,529 µs of CPU per small write, 985 of them in the S3 server and ~550 in the SDK's
// request pipeline). Up to `maxBytes` (the server's default: 64 KiB) an object is a row of `small_objects`, written
// in one statement that also touches it for the object guard; anything larger goes to `large`.
//
// The tier follows from the size alone, so the same bytes always land in the same tier; only a change
// of the threshold can leave an object in both, and then every read prefers the row and `list`
// reports it once. Reads ask the table first (a primary-key lookup), then the bucket. Durable is
// Postgres's: the statement has committed (fsync of its WAL record) before `put` resolves.
//
// Replicas: the put statement takes the hash's advisory lock and touches `object_touches`, exactly as
// the guard's touch does (pg-object-guard.ts), so a collector on another replica either deleted the
// row before (and the put inserts it again) or sees the touch and spares it.
import { open as openFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import { hashBuffer, parseContentHash } from '../hash.js';
import type { ContentStore, DatasetFileOptions, DatasetIngest, DatasetStreamOptions, ObjectInfo, PutOptions, PutResult, ReadRange } from '../ports/content-store.js';
import type { ObjectGuard } from '../ports/object-guard.js';
import type { ContentHash } from '../types.js';
import { resume } from '../small-content.js';
import { type PgDatabase, prepared } from './pg-db.js';
import { LOCKED_HASHES_CTE } from './pg-object-guard.js';
import { readLimits } from './local-content-store-ingest.js';
import { corruptError, resolveRange } from './local-content-store-read.js';
import { checkExpected, tooLarge } from './s3-content-store-ingest.js';

/** One insert statement carries at most this many queued objects, or about this many bytes. */
const INSERT_BATCH_MAX = 256;
const INSERT_BATCH_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Statements out at once. One: three made no difference to throughput (the bench, 976 vs 1,021
 * writes/s, within its noise), and one keeps the batches largest.
 */
const INSERTS_IN_FLIGHT = 1;
/** Hashes asked of the table at once when `list` checks the bucket's objects against it. */
const LIST_BATCH = 1000;

/** Objects $1 (hashes) with contents $2: locked and touched for the guard, inserted if new. */
export const INSERT_SMALL = prepared(`WITH ${LOCKED_HASHES_CTE},
  touched AS (
    INSERT INTO object_touches (content_hash, touched_at)
    SELECT DISTINCT h, now() FROM unnest($1::text[]) AS h, locked WHERE locked.n >= 0
    ON CONFLICT (content_hash) DO UPDATE SET touched_at = excluded.touched_at
    RETURNING content_hash)
  INSERT INTO small_objects (content_hash, size, content)
  SELECT DISTINCT ON (u.h) u.h, octet_length(u.c), u.c FROM unnest($1::text[], $2::bytea[]) AS u(h, c), (SELECT count(*) AS n FROM touched) AS t
  WHERE t.n >= 0
  ON CONFLICT (content_hash) DO NOTHING
  RETURNING content_hash`);

export interface SmallObjectsOptions {
  db: PgDatabase;
  /** where larger objects (and dataset shards) go */
  large: ContentStore;
  /** collects for both tiers (a server on Postgres always has one) */
  guard: ObjectGuard;
  /** the largest object kept in the database */
  maxBytes: number;
}

export function withSmallObjectsInPostgres(options: SmallObjectsOptions): ContentStore {
  return new SmallObjectTier(options.db, options.large, options.guard, options.maxBytes);
}

class SmallObjectTier implements ContentStore {
  constructor(
    private readonly db: PgDatabase,
    private readonly large: ContentStore,
    private readonly guard: ObjectGuard,
    private readonly maxBytes: number,
  ) {
    if (large.putDatasetFile !== undefined) {
      this.putDatasetFile = (path: string, params: ChunkerParams, opts?: DatasetFileOptions) => large.putDatasetFile!(path, params, opts);
    }
    if (large.putDatasetStream !== undefined) {
      this.putDatasetStream = (source: AsyncIterable<Uint8Array>, params: ChunkerParams, opts?: DatasetStreamOptions) => large.putDatasetStream!(source, params, opts);
    }
    if (large.compact !== undefined) this.compact = () => large.compact!();
  }

  /**
   * The versions repository on the same database stores these with the record that references them,
   * in its commit's transaction (VersionCommit.content, pg-commit.ts): one transaction for both.
   */
  get contentWithRecordMaxBytes(): number {
    return this.maxBytes;
  }

  // Datasets' shards are cut to hundreds of KiB: the bucket's (a short last shard there too, which
  // `has`/`open` find like any other object).
  readonly putDatasetFile?: (path: string, params: ChunkerParams, options?: DatasetFileOptions) => Promise<DatasetIngest>;
  readonly putDatasetStream?: (source: AsyncIterable<Uint8Array>, params: ChunkerParams, options?: DatasetStreamOptions) => Promise<DatasetIngest>;
  readonly compact?: () => Promise<{ bytesFreed: number }>;

  /**
   * Buffers up to the threshold; past it, the buffered chunks and the rest stream to the bucket.
   * Progress is reported once for a small object (the bucket's put reports a large one from its start).
   */
  async put(source: AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<PutResult> {
    const limits = readLimits(options);
    const iterator = source[Symbol.asyncIterator]();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) break;
      chunks.push(next.value);
      size += next.value.length;
      if (size > this.maxBytes) return this.large.put(resume(chunks, iterator), options);
      if (size > limits.maxBytes) {
        await iterator.return?.();
        throw tooLarge(limits.maxBytes);
      }
    }
    const result = await this.storeSmall(Buffer.concat(chunks, size), limits);
    options.onProgress?.(size);
    return result;
  }

  async putBuffer(data: Uint8Array, options: Omit<PutOptions, 'onProgress'> = {}): Promise<PutResult> {
    const limits = readLimits(options);
    if (data.length > this.maxBytes) return this.large.putBuffer(data, options);
    if (data.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
    return this.storeSmall(data, limits);
  }

  /** The small ones in one statement (a git push's thousands of blobs), the others through the bucket. */
  async putBuffers(datas: Uint8Array[]): Promise<PutResult[]> {
    const results: PutResult[] = new Array(datas.length);
    const small: number[] = [];
    const large: number[] = [];
    for (const [i, data] of datas.entries()) (data.length <= this.maxBytes ? small : large).push(i);
    const stored = await Promise.all([
      this.insert(small.map((i) => datas[i]!)),
      large.length === 0 ? [] : this.large.putBuffers(large.map((i) => datas[i]!)),
    ]);
    for (const [k, i] of small.entries()) results[i] = stored[0][k]!;
    for (const [k, i] of large.entries()) results[i] = stored[1][k]!;
    return results;
  }

  /** A file is read whole only when it is small; its errno (ENOENT, EISDIR) is kept. */
  async putFile(absolutePath: string, options: PutOptions = {}): Promise<PutResult> {
    const limits = readLimits(options);
    const handle = await openFile(absolutePath, 'r');
    let data: Buffer;
    try {
      const buffer = Buffer.allocUnsafe(this.maxBytes + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length > this.maxBytes) break;
      }
      data = buffer.subarray(0, length);
    } finally {
      await handle.close();
    }
    if (data.length > this.maxBytes) return this.large.putFile(absolutePath, options);
    if (data.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
    const result = await this.storeSmall(data, limits);
    options.onProgress?.(data.length);
    return result;
  }

  async has(hash: ContentHash): Promise<boolean> {
    const valid = parseContentHash(hash);
    if ((await this.db.one('SELECT 1 FROM small_objects WHERE content_hash = $1', [valid])) !== undefined) return true;
    return this.large.has(valid);
  }

  async stat(hash: ContentHash): Promise<ObjectInfo | null> {
    const valid = parseContentHash(hash);
    const row = await this.db.one<{ size: number; touched_ms: number | null }>(
      `SELECT s.size, (extract(epoch FROM t.touched_at) * 1000)::float8 AS touched_ms
       FROM small_objects s LEFT JOIN object_touches t ON t.content_hash = s.content_hash WHERE s.content_hash = $1`,
      [valid],
    );
    if (row !== undefined) return { hash: valid, size: row.size, touchedAtMs: Math.floor(row.touched_ms ?? 0) };
    return this.large.stat(valid);
  }

  async open(hash: ContentHash, range?: ReadRange): Promise<Readable> {
    const valid = parseContentHash(hash);
    const data = await this.content(valid);
    if (data === undefined) return this.large.open(valid, range);
    if (range === undefined) return Readable.from([verified(valid, data)]);
    const { start, end } = resolveRange(range, data.length);
    return Readable.from([data.subarray(start, end + 1)]);
  }

  async readBuffer(hash: ContentHash): Promise<Buffer> {
    const valid = parseContentHash(hash);
    const data = await this.content(valid);
    return data === undefined ? this.large.readBuffer(valid) : verified(valid, data);
  }

  async readBuffers(hashes: ContentHash[], options?: { once?: boolean }): Promise<Map<ContentHash, Buffer>> {
    const valid = hashes.map((hash) => parseContentHash(hash));
    const rows = await this.db.query<{ content_hash: ContentHash; content: Buffer }>('SELECT content_hash, content FROM small_objects WHERE content_hash = ANY($1::text[])', [valid]);
    const found = new Map(rows.map((row) => [row.content_hash, verified(row.content_hash, row.content)]));
    const rest = [...new Set(valid.filter((hash) => !found.has(hash)))];
    if (rest.length > 0) {
      const more = this.large.readBuffers !== undefined ? await this.large.readBuffers(rest, options) : await readEach(this.large, rest);
      for (const [hash, data] of more) found.set(hash, data);
    }
    return found;
  }

  async verify(hash: ContentHash): Promise<'ok' | 'missing' | 'corrupt'> {
    const valid = parseContentHash(hash);
    const data = await this.content(valid);
    if (data === undefined) return this.large.verify(valid);
    return hashBuffer(data) === valid ? 'ok' : 'corrupt';
  }

  async delete(hash: ContentHash): Promise<void> {
    const valid = parseContentHash(hash);
    await this.remove(valid);
  }

  collect(hash: ContentHash, graceMs: number): Promise<boolean> {
    const valid = parseContentHash(hash);
    return this.guard.collect(valid, graceMs, () => this.remove(valid));
  }

  /** The table's objects, then the bucket's that are not also rows (a threshold change). */
  async *list(): AsyncIterable<ObjectInfo> {
    for await (const row of this.db.stream<{ content_hash: ContentHash; size: number; touched_ms: number | null }>(
      `SELECT s.content_hash, s.size, (extract(epoch FROM t.touched_at) * 1000)::float8 AS touched_ms
       FROM small_objects s LEFT JOIN object_touches t ON t.content_hash = s.content_hash`,
    )) {
      yield { hash: row.content_hash, size: row.size, touchedAtMs: Math.floor(row.touched_ms ?? 0) };
    }
    let batch: ObjectInfo[] = [];
    const flush = async function* (this: SmallObjectTier): AsyncGenerator<ObjectInfo> {
      const rows = await this.db.query<{ content_hash: ContentHash }>('SELECT content_hash FROM small_objects WHERE content_hash = ANY($1::text[])', [batch.map((info) => info.hash)]);
      const inTable = new Set(rows.map((row) => row.content_hash));
      for (const info of batch) if (!inTable.has(info.hash)) yield info;
      batch = [];
    };
    for await (const info of this.large.list()) {
      batch.push(info);
      if (batch.length >= LIST_BATCH) yield* flush.call(this);
    }
    if (batch.length > 0) yield* flush.call(this);
  }

  close(): Promise<void> {
    return this.large.close();
  }

  /**
   * Queued: while one insert statement is out, the puts that arrive wait and then go as the next
   * statement, together (the engine's commit batcher does the same for version records). Under load
   * that is one statement and one WAL flush for many objects; alone, a put waits for nobody.
   */
  private storeSmall(data: Uint8Array, limits: ReturnType<typeof readLimits>): Promise<PutResult> {
    const hash = hashBuffer(data);
    checkExpected(limits, hash);
    return new Promise((resolve, reject) => {
      this.queue.push({ data, hash, resolve, reject });
      this.drain();
    });
  }

  private readonly queue: Array<{ data: Uint8Array; hash: ContentHash; resolve: (result: PutResult) => void; reject: (error: unknown) => void }> = [];
  private inserting = 0;

  private drain(): void {
    if (this.inserting >= INSERTS_IN_FLIGHT || this.queue.length === 0) return;
    this.inserting += 1;
    let bytes = 0;
    let count = 0;
    while (count < this.queue.length && count < INSERT_BATCH_MAX && bytes < INSERT_BATCH_MAX_BYTES) bytes += this.queue[count++]!.data.length;
    const batch = this.queue.splice(0, count);
    this.insert(
      batch.map((item) => item.data),
      batch.map((item) => item.hash),
    )
      .then(
        (results) => {
          for (const [i, item] of batch.entries()) item.resolve(results[i]!);
        },
        (error: unknown) => {
          for (const item of batch) item.reject(error);
        },
      )
      .finally(() => {
        this.inserting -= 1;
        this.drain();
      });
  }

  /** One statement for all of them: lock and touch each hash, insert the rows that are new. */
  private async insert(datas: Uint8Array[], known?: ContentHash[]): Promise<PutResult[]> {
    if (datas.length === 0) return [];
    const hashes = known ?? datas.map((data) => hashBuffer(data));
    const rows = await this.db.query<{ content_hash: ContentHash }>(INSERT_SMALL, [hashes, datas.map((data) => Buffer.from(data.buffer, data.byteOffset, data.byteLength))]);
    // A hash this statement inserted is "created" for its first occurrence only (a batch may repeat one).
    const created = new Set(rows.map((row) => row.content_hash));
    return datas.map((data, i) => {
      const hash = hashes[i]!;
      const first = created.delete(hash);
      return { hash, size: data.length, created: first };
    });
  }

  private async content(hash: ContentHash): Promise<Buffer | undefined> {
    const row = await this.db.one<{ content: Buffer }>('SELECT content FROM small_objects WHERE content_hash = $1', [hash]);
    return row?.content;
  }

  /** Both tiers: after a threshold change the same object may be in each. */
  private async remove(hash: ContentHash): Promise<void> {
    await this.db.query('DELETE FROM small_objects WHERE content_hash = $1', [hash]);
    await this.large.delete(hash);
  }
}

function verified(hash: ContentHash, data: Buffer): Buffer {
  const actual = hashBuffer(data);
  if (actual !== hash) throw corruptError(hash, actual);
  return data;
}

async function readEach(store: ContentStore, hashes: ContentHash[]): Promise<Map<ContentHash, Buffer>> {
  const found = new Map<ContentHash, Buffer>();
  for (const hash of hashes) found.set(hash, await store.readBuffer(hash));
  return found;
}
