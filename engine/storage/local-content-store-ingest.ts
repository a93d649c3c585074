// Getting bytes into the store: decide small (packed) or large (loose) while streaming, hash, stage,
// commit. At most smallObjectMaxBytes are buffered in memory before that decision; past it, the bytes
// go through a hash worker into a temp file, so memory stays bounded whatever the input size.
import { constants } from 'node:fs';
import { copyFile, open, rm, stat } from 'node:fs/promises';
import { StrataError } from '../errors.js';
import { hashBuffer, parseContentHash } from '../hash.js';
import type { PutOptions, PutResult } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import type { HashWorkerPool } from './hash-worker-pool.js';
import type { HashSession } from './hash-worker-session.js';
import { type LooseObjects, storageError } from './local-content-store-loose.js';
import type { PackObjects } from './local-content-store-pack.js';
import type { ShardPacks } from './local-content-store-shard-packs.js';

export interface IngestContext {
  readonly smallObjectMaxBytes: number;
  readonly pool: HashWorkerPool;
  readonly pack: PackObjects;
  readonly loose: LooseObjects;
  readonly shardPacks: ShardPacks;
  /** ingestFile's read buffers (smallObjectMaxBytes + 1 each), kept for the next file */
  readonly heads: Buffer[];
}

/** Read buffers kept: one per file read at once (the capture reads a few files at a time). */
const HEADS_KEPT = 8;

interface Limits {
  maxBytes: number;
  expectedHash: ContentHash | undefined;
}

export function readLimits(options: Omit<PutOptions, 'onProgress'>): Limits {
  const { maxBytes, expectedHash } = options;
  if (maxBytes !== undefined && !(Number.isSafeInteger(maxBytes) && maxBytes >= 0)) {
    throw new TypeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  return {
    maxBytes: maxBytes ?? Number.POSITIVE_INFINITY,
    expectedHash: expectedHash === undefined ? undefined : parseContentHash(expectedHash, 'expectedHash'),
  };
}

function tooLarge(maxBytes: number): StrataError {
  return new StrataError('BODY_TOO_LARGE', {
    message: `The content is larger than the limit of ${maxBytes} bytes`,
    details: { maxBytes },
  });
}

function checkExpected(limits: Limits, actual: ContentHash): void {
  if (limits.expectedHash !== undefined && limits.expectedHash !== actual) {
    throw new StrataError('CONTENT_CORRUPT', {
      message: `The content hashes to ${actual}, not to the expected ${limits.expectedHash}`,
      details: { expected: limits.expectedHash, actual },
    });
  }
}

/**
 * Small content (≤64 KiB by default), group-committed to the pack. Hashed by the pack's writer thread,
 * unless the caller expects a hash: then here (~30 µs), so that a mismatch stores nothing.
 */
export async function storeSmall(ctx: IngestContext, data: Uint8Array, limits: Limits): Promise<PutResult> {
  if (data.length > limits.maxBytes) throw tooLarge(limits.maxBytes);
  if (limits.expectedHash === undefined) return ctx.pack.putHashing(data);
  const hash = hashBuffer(data);
  checkExpected(limits, hash);
  const created = await ctx.pack.put(hash, data);
  return { hash, size: data.length, created };
}

export async function ingestStream(
  ctx: IngestContext,
  source: AsyncIterable<Uint8Array>,
  options: PutOptions,
): Promise<PutResult> {
  const limits = readLimits(options);
  const head: Uint8Array[] = [];
  let total = 0;
  let session: HashSession | null = null;
  let tmpPath: string | null = null;
  try {
    for await (const chunk of source) {
      if (!(chunk instanceof Uint8Array)) throw new TypeError('put() sources must yield Uint8Array chunks');
      if (chunk.length === 0) continue;
      total += chunk.length;
      // Throwing inside for-await calls the iterator's return(): a Readable source is destroyed, so an
      // oversized upload stops being read at once.
      if (total > limits.maxBytes) throw tooLarge(limits.maxBytes);
      if (session !== null) {
        await session.write(chunk);
      } else if (total <= ctx.smallObjectMaxBytes) {
        head.push(new Uint8Array(chunk)); // a copy: an iterator may reuse its buffer for the next chunk
      } else {
        tmpPath = ctx.loose.newTempPath();
        session = await ctx.pool.openSession(tmpPath);
        for (const buffered of head.splice(0)) await session.write(buffered);
        await session.write(chunk);
      }
      options.onProgress?.(total);
    }
    if (session === null) return await storeSmall(ctx, Buffer.concat(head, total), limits);
    const { hex, size } = await session.end();
    const hash: ContentHash = `blake3:${hex}`;
    checkExpected(limits, hash);
    const staged = tmpPath!;
    tmpPath = null; // from here on, commit owns the temp file (it renames or removes it)
    const created = await commitStaged(ctx, staged, hash, size);
    return { hash, size, created };
  } catch (error) {
    // Nothing may be left behind: close the worker's descriptor, then remove the temp file. The
    // original error (the source's own, BODY_TOO_LARGE, ...) is what the caller gets.
    if (session !== null) await session.abort();
    if (tmpPath !== null) await rm(tmpPath, { force: true });
    throw error;
  }
}

export async function ingestFile(ctx: IngestContext, absolutePath: string, options: PutOptions): Promise<PutResult> {
  const limits = readLimits(options);
  // Read at most one byte more than the small limit: enough to know which way the file goes without
  // ever reading a large file on the main thread.
  // The buffer is reused and a small content is copied out of it at its own size: a new 64 KiB
  // buffer per file (kept by the pack's queue for a 1-20 KiB content) was 320 MiB allocated for a
  // first sync's 5,000 small files, which V8 counts toward its heap limit: ~10 full collections of
  // the daemon's heap (issue 38).
  const head = ctx.heads.pop() ?? Buffer.allocUnsafeSlow(ctx.smallObjectMaxBytes + 1);
  let length = 0;
  let small: Buffer | null = null;
  try {
    // The caller's open file when it has one (the capture's: an open and a close less per file, issue 38).
    const handle = options.handle ?? (await open(absolutePath, 'r'));
    try {
      for (;;) {
        const { bytesRead } = await handle.read(head, length, head.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length === head.length) break;
      }
    } finally {
      if (handle !== options.handle) await handle.close();
    }
    if (length <= ctx.smallObjectMaxBytes) small = Buffer.from(head.subarray(0, length));
  } finally {
    if (ctx.heads.length < HEADS_KEPT) ctx.heads.push(head);
  }
  if (small !== null) {
    const result = await storeSmall(ctx, small, limits);
    options.onProgress?.(length);
    return result;
  }
  // Copy in the kernel (copy_file_range, on libuv's pool), then hash the copy in a worker: one memory
  // copy per byte instead of two (read into JS, write back out), where perf showed 74% of the old
  // loop's time. Measured with 4 x 256 MB: 1.2-1.4 s against 3.3-3.9 s for the read/hash/write loop in
  // worker threads. Hashing the copy rather than the source also means the object always matches its
  // name, even if the source changes while it is being copied.
  const tmpPath = ctx.loose.newTempPath();
  let staged = true;
  try {
    const maxBytes = Number.isFinite(limits.maxBytes) ? limits.maxBytes : null;
    if (maxBytes !== null && (await stat(absolutePath)).size > maxBytes) throw tooLarge(limits.maxBytes);
    await copySource(absolutePath, tmpPath);
    // Hash (a worker reading the page cache) and fsync (the disk) at the same time: neither waits
    // for the other, and the copy is not renamed into place before both finished.
    const [hashed, synced] = await Promise.allSettled([ctx.pool.hashFile(tmpPath, null, maxBytes, options.onProgress), syncReadOnly(tmpPath)]);
    if (hashed.status === 'rejected') throw hashed.reason;
    if (synced.status === 'rejected') throw storageError(synced.reason, 'Syncing an object');
    const result = hashed.value;
    if (result.kind === 'tooLarge') throw tooLarge(limits.maxBytes);
    checkExpected(limits, result.hash);
    staged = false;
    const created = await commitStaged(ctx, tmpPath, result.hash, result.size);
    return { hash: result.hash, size: result.size, created };
  } catch (error) {
    if (staged) await rm(tmpPath, { force: true });
    throw error;
  }
}

/** The source's own failures (gone, unreadable) keep their errno; the store's are STORAGE_ERROR. */
async function copySource(src: string, tmpPath: string): Promise<void> {
  try {
    await copyFile(src, tmpPath, constants.COPYFILE_EXCL);
  } catch (error) {
    const errno = error as NodeJS.ErrnoException;
    if (errno.path === src && (errno.code === 'ENOENT' || errno.code === 'EACCES' || errno.code === 'EISDIR')) throw error;
    throw storageError(error, 'Copying into the store');
  }
}

/** Objects are read-only; their bytes are durable before anything can point to them. */
async function syncReadOnly(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.chmod(0o444);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Commit a staged temp file; if the commit fails, make sure the temp file does not outlive it. */
async function commitStaged(ctx: IngestContext, tmpPath: string, hash: ContentHash, size: number): Promise<boolean> {
  try {
    return await ctx.loose.commit(tmpPath, hash, size, (path) => rehashFile(ctx.pool, path));
  } catch (error) {
    await rm(tmpPath, { force: true });
    throw storageError(error, 'Committing an object');
  }
}

export async function rehashFile(pool: HashWorkerPool, path: string): Promise<ContentHash> {
  const result = await pool.hashFile(path, null, null);
  if (result.kind !== 'hashed') throw new StrataError('INTERNAL', { message: 'A size-unlimited hash reported too large' });
  return result.hash;
}
