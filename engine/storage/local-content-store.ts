// The local content-addressed store (docs/design.md §1, "local: SQLite + files on disk"):
//
//   <root>/objects/packed.sqlite   objects ≤ smallObjectMaxBytes, group-committed (local-content-store-pack.ts)
//   <root>/objects/ab/cdef…        larger objects, one file each, read-only (local-content-store-loose.ts)
//   <root>/objects/packs/*.pack    dataset shards, many per file, indexed in packed.sqlite
//                                  (local-content-store-shard-packs.ts)
//   <root>/tmp/<pid>-<uuid>.tmp    staging for loose objects; same filesystem, so rename is atomic
//   <root>/reserve                 space kept for collecting on a full disk (local-content-store-reserve.ts)
//
// Every put resolves only once its object is durable. Large inputs are hashed and copied by worker
// threads (hash-worker-pool.ts); this module wires the parts together and validates arguments.
import { open as openFile, readFile, rm, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { StrataError } from '../errors.js';
import { hashBuffer, parseContentHash } from '../hash.js';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import type { AdoptOptions, ContentStore, DatasetFileOptions, DatasetIngest, DatasetStreamOptions, FetchOutcome, FetchSource, ObjectInfo, PutOptions, PutResult, ReadRange } from '../ports/content-store.js';
import { type Clock, systemClock } from '../ports/world.js';
import type { ContentHash } from '../types.js';
import { HashWorkerPool } from './hash-worker-pool.js';
import { adoptFile, objectFile } from './local-content-store-adopt.js';
import { assembleFile } from './assemble-file.js';
import { putDatasetFetch, putDatasetFile, putDatasetStream } from './local-content-store-dataset.js';
import { BatchReader } from './batch-read-worker.js';
import { fsyncDirectory } from './local-content-store-dirsync.js';
import { type IngestContext, ingestFile, ingestStream, readLimits, rehashFile, storeSmall } from './local-content-store-ingest.js';
import { isNotFound, LooseObjects, storageError } from './local-content-store-loose.js';
import { type PackEntry, PackObjects } from './local-content-store-pack.js';
import { KeptCopies } from './kept-copies.js';
import { keepReserve, releaseReserve } from './local-content-store-reserve.js';
import { ShardPacks } from './local-content-store-shard-packs.js';
import { corruptError, resolveRange, streamLooseObject, streamPackedObject } from './local-content-store-read.js';

export interface LocalContentStoreOptions {
  /** the store's directory; created if missing */
  root: string;
  /** objects up to this size go to the SQLite pack (default 64 KiB, at most 16 MiB) */
  smallObjectMaxBytes?: number;
  /** source of touchedAtMs (default: the system clock) */
  clock?: Clock;
}

export const DEFAULT_SMALL_OBJECT_MAX_BYTES = 64 * 1024;
const MAX_SMALL_OBJECT_MAX_BYTES = 16 * 1024 * 1024;
const LIST_PAGE = 1000;

export async function createLocalContentStore(options: LocalContentStoreOptions): Promise<ContentStore> {
  const smallObjectMaxBytes = options.smallObjectMaxBytes ?? DEFAULT_SMALL_OBJECT_MAX_BYTES;
  if (!Number.isSafeInteger(smallObjectMaxBytes) || smallObjectMaxBytes < 0 || smallObjectMaxBytes > MAX_SMALL_OBJECT_MAX_BYTES) {
    throw new TypeError(`smallObjectMaxBytes must be an integer from 0 to ${MAX_SMALL_OBJECT_MAX_BYTES}`);
  }
  const clock = options.clock ?? systemClock;
  const loose = await LooseObjects.open(options.root, clock);
  let pack: PackObjects;
  try {
    pack = PackObjects.open(join(loose.objectsDir, 'packed.sqlite'), clock);
  } catch (error) {
    throw storageError(error, 'Opening the object pack');
  }
  try {
    // SQLite fsyncs the directory for the WAL it creates, not for the database file itself: make the
    // pack's own directory entry durable before the first put can be acknowledged.
    await fsyncDirectory(loose.objectsDir);
  } catch (error) {
    await pack.close();
    throw storageError(error, 'Opening the object store');
  }
  const pool = new HashWorkerPool();
  let shardPacks: ShardPacks;
  try {
    shardPacks = await ShardPacks.open(loose.objectsDir, loose.tmpDir, pack, pool);
  } catch (error) {
    await pack.close();
    await pool.close();
    throw storageError(error, 'Opening the shard packs');
  }
  // A home created on a disk with room gets its reserve now; one that was full gets it at a later start
  // or after a collection (local-content-store-reserve.ts).
  await keepReserve(options.root);
  return new LocalContentStore({ smallObjectMaxBytes, pool, pack, loose, shardPacks, heads: [] }, options.root);
}

/** Room a kept copy leaves on the store's disk beyond its own bytes and the pack's. */
const COPY_MARGIN_BYTES = 256 * 1024 * 1024;

async function freeBytes(dir: string): Promise<number> {
  const fs = await statfs(dir).catch(() => null);
  return fs === null ? 0 : fs.bavail * fs.bsize;
}

/** readBuffers of at least this many objects go to the batch reader thread. */
const BATCH_READ_MIN = 16;

class LocalContentStore implements ContentStore {
  private closed = false;
  private batchReader: BatchReader | null = null;
  private onceReader: BatchReader | null = null;
  /** pulled datasets' copies, for the files they are about to become (kept-copies.ts) */
  private readonly keptCopies = new KeptCopies();

  constructor(
    private readonly ctx: IngestContext,
    private readonly root: string,
  ) {}

  async put(source: AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<PutResult> {
    this.assertOpen();
    return ingestStream(this.ctx, source, options);
  }

  async putBuffer(data: Uint8Array, options: Omit<PutOptions, 'onProgress'> = {}): Promise<PutResult> {
    this.assertOpen();
    if (data.length <= this.ctx.smallObjectMaxBytes) return storeSmall(this.ctx, data, readLimits(options));
    // Larger buffers still go through a worker: hashing 50 MB here would stall the loop for ~20 ms.
    return ingestStream(this.ctx, once(data), options);
  }

  async putBuffers(datas: Uint8Array[]): Promise<PutResult[]> {
    this.assertOpen();
    const max = this.ctx.smallObjectMaxBytes;
    const small = datas.filter((data) => data.length <= max);
    const larger = Promise.all(datas.map((data) => (data.length <= max ? null : this.putBuffer(data))));
    const packed = small.length === 0 ? [] : await this.ctx.pack.putHashingMany(small);
    let next = 0;
    return (await larger).map((result) => result ?? packed[next++]!);
  }

  async putFile(absolutePath: string, options: PutOptions = {}): Promise<PutResult> {
    this.assertOpen();
    return ingestFile(this.ctx, absolutePath, options);
  }

  async adoptFile(absolutePath: string, options: AdoptOptions = {}): Promise<PutResult> {
    this.assertOpen();
    return adoptFile(this.ctx, absolutePath, options);
  }

  async putDatasetFile(absolutePath: string, params: ChunkerParams, options: DatasetFileOptions = {}): Promise<DatasetIngest> {
    this.assertOpen();
    const sink = {
      has: (hash: ContentHash) => this.has(hash),
      putBuffer: (data: Uint8Array, put?: Omit<PutOptions, 'onProgress'>) => this.putBuffer(data, put),
      packs: this.shardPackSink(),
    };
    return putDatasetFile(sink, absolutePath, params, options);
  }

  async putDatasetStream(source: AsyncIterable<Uint8Array>, params: ChunkerParams, options: DatasetStreamOptions = {}): Promise<DatasetIngest> {
    this.assertOpen();
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    return this.withCopy(options, (copyPath) => putDatasetStream(this.shardPackSink(), source, params, maxBytes, options.expect, copyPath));
  }

  async putDatasetFetch(source: FetchSource, params: ChunkerParams, options: DatasetStreamOptions = {}): Promise<{ ingest: DatasetIngest | null; fetched: FetchOutcome }> {
    this.assertOpen();
    let fetched: FetchOutcome | undefined;
    const ingest = await this.withCopy(options, async (copyPath) => {
      const result = await putDatasetFetch(this.shardPackSink(), source, params, options.expect, copyPath);
      fetched = result.fetched;
      return result.ingest;
    });
    return { ingest, fetched: fetched! };
  }

  /** An ingest with `keepCopy`: the copy kept when it is whole and every shard matched, else removed (kept-copies.ts). */
  private async withCopy<T extends DatasetIngest | null>(options: DatasetStreamOptions, ingestWith: (copyPath: string | undefined) => Promise<T>): Promise<T> {
    const expect = options.expect;
    // A copy only of bytes checked against a manifest, and only with room for both it and the pack
    // (written side by side, the copy must never be why the pack does not fit).
    const size = expect?.shards.reduce((sum, shard) => sum + shard.size, 0) ?? 0;
    const room = options.keepCopy === true && expect !== undefined ? await freeBytes(this.ctx.loose.tmpDir) : 0;
    const copyPath = room >= 2 * size + COPY_MARGIN_BYTES ? this.ctx.loose.newTempPath() : undefined;
    let ingest: T;
    try {
      ingest = await ingestWith(copyPath);
    } catch (error) {
      if (copyPath !== undefined) await rm(copyPath, { force: true });
      throw error;
    }
    if (copyPath !== undefined) {
      // Whole, or not at all (the chunking thread drops a copy it could not write: a full disk).
      const whole = ingest !== null && ingest.hash === expect!.hash && (await stat(copyPath).catch(() => null))?.size === ingest.size;
      if (whole) this.keptCopies.keep(expect!.shards, copyPath);
      else await rm(copyPath, { force: true });
    }
    return ingest;
  }

  async objectFile(hash: ContentHash): Promise<string | null> {
    return objectFile(this.ctx, this.check(hash));
  }

  async objectSpan(hash: ContentHash): Promise<{ file: string; offset: number; size: number } | null> {
    const valid = this.check(hash);
    const shard = this.ctx.shardPacks.locate(valid);
    if (shard !== null) return { file: shard.path, offset: shard.offset, size: shard.size };
    if (this.ctx.pack.stat(valid) !== null) return null;
    const info = await this.ctx.loose.stat(valid);
    return info === null ? null : { file: this.ctx.loose.pathOf(valid), offset: 0, size: info.size };
  }

  async writeObjectsTo(objects: ReadonlyArray<{ hash: ContentHash; size: number }>, target: string, mode: number): Promise<boolean> {
    this.assertOpen();
    if (await this.keptCopies.placeAt(objects, target, mode)) return true;
    for (let attempt = 0; ; attempt++) {
      const spans = await this.objectSpans(objects.map((object) => object.hash));
      if (spans.some((span) => span === null)) return false;
      try {
        await assembleFile(
          spans.map((span, i) => ({ ...span!, hash: objects[i]!.hash })),
          target,
          mode,
        );
        return true;
      } catch (error) {
        // A pack compacted (moved) between locating a span and opening it: look them up once more.
        if (attempt > 0 || !isNotFound(error)) throw error;
      }
    }
  }

  async objectSpans(hashes: readonly ContentHash[]): Promise<Array<{ file: string; offset: number; size: number } | null>> {
    // One query for the shard index (a dataset's shards are all there): one statement per shard cost
    // 17 us each here (a read transaction each, over a WAL full of the shards just written), 14 ms for
    // a 1 GiB dataset's 837 shards before every write into it through the mount.
    const located = this.ctx.shardPacks.locateMany(hashes.map((hash) => this.check(hash)));
    const spans: Array<{ file: string; offset: number; size: number } | null> = [];
    for (const hash of hashes) {
      const shard = located.get(hash);
      spans.push(shard === undefined ? await this.objectSpan(hash) : { file: shard.path, offset: shard.offset, size: shard.size });
    }
    return spans;
  }

  async has(hash: ContentHash): Promise<boolean> {
    const valid = this.check(hash);
    if (this.ctx.shardPacks.locate(valid) !== null || this.ctx.pack.has(valid)) return true;
    return (await this.ctx.loose.stat(valid)) !== null;
  }

  async stat(hash: ContentHash): Promise<ObjectInfo | null> {
    const valid = this.check(hash);
    const inPack = this.ctx.shardPacks.locate(valid);
    if (inPack !== null) return { hash: valid, size: inPack.size, touchedAtMs: inPack.touchedAtMs };
    return this.ctx.pack.stat(valid) ?? (await this.ctx.loose.stat(valid));
  }

  async open(hash: ContentHash, range?: ReadRange): Promise<Readable> {
    const valid = this.check(hash);
    const packed = this.ctx.pack.get(valid);
    if (packed !== null) {
      const bounds = range === undefined ? undefined : resolveRange(range, packed.data.length);
      return streamPackedObject(packed.data, valid, bounds);
    }
    const shard = this.ctx.shardPacks.locate(valid);
    if (shard !== null) {
      const bounds = range === undefined ? undefined : resolveRange(range, shard.size);
      const stream = await this.ctx.shardPacks.open(valid, bounds);
      if (stream !== null) return stream;
    }
    let handle: Awaited<ReturnType<typeof openFile>>;
    try {
      handle = await openFile(this.ctx.loose.pathOf(valid), 'r');
    } catch (error) {
      if (isNotFound(error)) throw notFound(valid);
      throw storageError(error, 'Opening an object');
    }
    try {
      const bounds = range === undefined ? undefined : resolveRange(range, (await handle.stat()).size);
      return streamLooseObject(handle, valid, bounds);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async readBuffer(hash: ContentHash): Promise<Buffer> {
    const valid = this.check(hash);
    let data = this.ctx.pack.get(valid)?.data ?? (await this.ctx.shardPacks.read(valid)) ?? undefined;
    if (data === undefined) {
      try {
        data = await readFile(this.ctx.loose.pathOf(valid));
      } catch (error) {
        if (isNotFound(error)) throw notFound(valid);
        throw storageError(error, 'Reading an object');
      }
    }
    // The caller promised the object is small, so hashing it here is as cheap as having read it.
    const actual = hashBuffer(data);
    if (actual !== valid) throw corruptError(valid, actual);
    return data;
  }

  async readBuffers(hashes: ContentHash[], options: { once?: boolean } = {}): Promise<Map<ContentHash, Buffer>> {
    const valid = hashes.map((hash) => this.check(hash));
    if (options.once === true && valid.length > 0) {
      // Read once (a sync upload): not through the pack's memory map, whose touched pages would stay
      // in the daemon's RSS — a drain of 100,000 objects mapped the whole pack.
      this.onceReader ??= new BatchReader(this.ctx.pack.path, this.ctx.loose.objectsDir, { mapBytes: 0, threads: 1 });
      return this.onceReader.read(valid);
    }
    // Enough of them to be worth a thread hop: read and verified off the event loop.
    if (valid.length >= BATCH_READ_MIN) {
      this.batchReader ??= new BatchReader(this.ctx.pack.path, this.ctx.loose.objectsDir);
      return this.batchReader.read(valid);
    }
    const found = this.ctx.pack.getMany(valid);
    for (const hash of valid) if (!found.has(hash)) found.set(hash, await this.readBuffer(hash));
    for (const [hash, data] of found) {
      const actual = hashBuffer(data);
      if (actual !== hash) throw corruptError(hash, actual);
    }
    return found;
  }

  async verify(hash: ContentHash): Promise<'ok' | 'missing' | 'corrupt'> {
    const valid = this.check(hash);
    const packed = this.ctx.pack.get(valid);
    if (packed !== null) return hashBuffer(packed.data) === valid ? 'ok' : 'corrupt';
    if (this.ctx.shardPacks.locate(valid) !== null) return this.ctx.shardPacks.verify(valid);
    try {
      return (await rehashFile(this.ctx.pool, this.ctx.loose.pathOf(valid))) === valid ? 'ok' : 'corrupt';
    } catch (error) {
      if (isNotFound(error)) return 'missing';
      throw storageError(error, 'Verifying an object');
    }
  }

  async delete(hash: ContentHash): Promise<void> {
    const valid = this.check(hash);
    // Every place: an object can be in any, and in several (smallObjectMaxBytes changed between runs;
    // a plain file with the bytes of a shard).
    await Promise.all([this.ctx.pack.delete(valid), this.ctx.shardPacks.remove(valid), this.ctx.loose.remove(valid)]);
  }

  async compact(): Promise<{ bytesFreed: number }> {
    this.assertOpen();
    return { bytesFreed: await this.ctx.shardPacks.compact() };
  }

  async releaseReserve(): Promise<boolean> {
    this.assertOpen();
    try {
      return await releaseReserve(this.root);
    } catch (error) {
      throw storageError(error, 'Releasing the reserve');
    }
  }

  async keepReserve(): Promise<void> {
    if (!this.closed) await keepReserve(this.root);
  }

  async *list(): AsyncIterable<ObjectInfo> {
    this.assertOpen();
    let after = '';
    for (;;) {
      const page = this.ctx.pack.page(after, LIST_PAGE);
      yield* page;
      if (page.length < LIST_PAGE) break;
      after = page[page.length - 1]!.hash;
    }
    after = '';
    for (;;) {
      const page = this.ctx.shardPacks.page(after, LIST_PAGE);
      for (const info of page) if (this.ctx.pack.stat(info.hash) === null) yield info;
      if (page.length < LIST_PAGE) break;
      after = page[page.length - 1]!.hash;
    }
    for await (const info of this.ctx.loose.list()) {
      // Reported once: a packed copy (already listed) wins if an object is in several places.
      if (this.ctx.pack.stat(info.hash) === null && this.ctx.shardPacks.locate(info.hash) === null) yield info;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Pending packed puts are committed first; large ingests still running fail with SHUTTING_DOWN
    // and remove their temp files.
    await this.ctx.pack.close();
    await this.ctx.pool.close();
    await this.keptCopies.close();
    await this.batchReader?.close();
    await this.onceReader?.close();
  }

  private shardPackSink() {
    return {
      staging: () => ({
        packPath: this.ctx.loose.newTempPath(),
        objectsDir: this.ctx.loose.objectsDir,
        dbPath: this.ctx.pack.path,
        // Smaller chunks (a file's tail) belong in the SQLite pack: read back and stored the usual way.
        minBytes: this.ctx.smallObjectMaxBytes + 1,
      }),
      commit: (packPath: string, entries: PackEntry[]) => this.ctx.shardPacks.commit(packPath, entries),
      discard: (packPath: string) => rm(packPath, { force: true }),
    };
  }

  private check(hash: ContentHash): ContentHash {
    this.assertOpen();
    return parseContentHash(hash);
  }

  private assertOpen(): void {
    if (this.closed) throw new StrataError('SHUTTING_DOWN', { message: 'The content store is closed' });
  }
}

async function* once(data: Uint8Array): AsyncGenerator<Uint8Array> {
  yield data;
}

function notFound(hash: ContentHash): StrataError {
  return new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
}
