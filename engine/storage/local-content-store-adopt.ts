// Zero-copy ingest of a finished local file (the mount's staging files): instead of reading the file
// and writing a second copy (putFile), move the file itself into the store. On ext4 (no reflinks) a
// copy costs a full write of the file; a rename costs nothing, so a 2 GB file written through the
// mount is versioned in milliseconds once its bytes are on disk.
//
// Crash reasoning: the file is first renamed into the store's tmp/ directory under a name that carries
// our pid, so from that instant it belongs to the store — a crash leaves it there and the next start
// removes it (LooseObjects.removeLeftoverTemps) — and then committed exactly like a streamed put
// (fsynced bytes, rename into the shard, shard directory fsync). Until the first rename succeeds the
// caller's file is untouched, so a failure leaves the caller free to retry or fall back.
import { chmod, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { StrataError } from '../errors.js';
import { parseContentHash } from '../hash.js';
import type { AdoptOptions, PutResult } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { type IngestContext, ingestFile, rehashFile, storeSmall } from './local-content-store-ingest.js';
import { isNotFound, storageError } from './local-content-store-loose.js';

export async function adoptFile(ctx: IngestContext, absolutePath: string, options: AdoptOptions): Promise<PutResult> {
  const knownHash = options.knownHash === undefined ? undefined : parseContentHash(options.knownHash, 'knownHash');
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  if (!(maxBytes === Number.POSITIVE_INFINITY || (Number.isSafeInteger(maxBytes) && maxBytes >= 0))) {
    throw new TypeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  const info = await stat(absolutePath);
  if (!info.isFile()) throw new TypeError(`adoptFile needs a regular file: ${absolutePath}`);
  if (info.size > maxBytes) {
    throw new StrataError('BODY_TOO_LARGE', { message: `The content is larger than the limit of ${maxBytes} bytes`, details: { maxBytes } });
  }

  // Small files belong in the pack (one SQLite row, group-committed), not in a loose file of their own.
  if (info.size <= ctx.smallObjectMaxBytes) {
    const data = await readFile(absolutePath);
    if (data.length > ctx.smallObjectMaxBytes) return copyThenRemove(ctx, absolutePath, maxBytes);
    const limits = { maxBytes, expectedHash: knownHash };
    const result = await storeSmall(ctx, data, limits);
    await rm(absolutePath, { force: true });
    return result;
  }

  // Durable bytes first: the rename below must never install an object whose data is still only in
  // the page cache. (The mount's worker already fsynced; a second fsync of clean pages is cheap.)
  const handle = await open(absolutePath, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  // Objects are read-only on disk, like the ones the hash worker creates.
  await chmod(absolutePath, 0o444);

  const tmpPath = ctx.loose.newTempPath();
  try {
    await rename(absolutePath, tmpPath);
  } catch (error) {
    // Another filesystem (or a store that lives elsewhere): copy like putFile, then drop the source.
    if ((error as NodeJS.ErrnoException).code === 'EXDEV') return copyThenRemove(ctx, absolutePath, maxBytes);
    throw storageError(error, 'Moving a file into the store');
  }
  // From here on the temp file is the store's: every failure path removes it.
  try {
    const hash: ContentHash = knownHash ?? (await rehashFile(ctx.pool, tmpPath));
    const size = (await stat(tmpPath)).size;
    const created = await ctx.loose.commit(tmpPath, hash, size, (path) => rehashFile(ctx.pool, path));
    return { hash, size, created };
  } catch (error) {
    await rm(tmpPath, { force: true });
    throw storageError(error, 'Committing an adopted file');
  }
}

async function copyThenRemove(ctx: IngestContext, absolutePath: string, maxBytes: number): Promise<PutResult> {
  const result = await ingestFile(ctx, absolutePath, Number.isFinite(maxBytes) ? { maxBytes } : {});
  await rm(absolutePath, { force: true });
  return result;
}

/** The loose object's path, or null when the object is packed. CONTENT_NOT_FOUND when absent. */
export async function objectFile(ctx: IngestContext, hash: ContentHash): Promise<string | null> {
  if (ctx.pack.stat(hash) !== null || ctx.shardPacks.locate(hash) !== null) return null;
  const path = ctx.loose.pathOf(hash);
  try {
    await stat(path);
  } catch (error) {
    if (isNotFound(error)) throw new StrataError('CONTENT_NOT_FOUND', { details: { hash } });
    throw storageError(error, 'Locating an object');
  }
  return path;
}

