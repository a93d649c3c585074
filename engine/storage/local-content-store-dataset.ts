// Storing a local file as a dataset: chunk it in a worker (chunk-file.ts: content-defined cut points,
// one BLAKE3 per chunk and one of the whole file); only chunks the store does not hold yet are stored.
// A 1 MiB edit in a 2 GB dataset stores one to three shards.
//
// A store with shard packs (the local one) has the chunking worker append each new shard to one pack
// file from the very buffer it hashed (chunk-file.ts `stage`), then takes the pack in whole
// (local-content-store-shard-packs.ts): the dataset's bytes are read once and its new bytes written
// once, into one file with one fsync, like cp. Measured on 4 × 256 MiB in process: a temp file per
// shard, adopted one by one (a create, fsync, rename and directory fsync each), ran at 0.28× cp+fsync;
// reading each shard back and storing it with putBuffer before that, at 0.17×.
//
// Shards the worker did not stage (small tail chunks below the pack's minimum, or a store without
// packs) are read back by range and re-hashed as they are stored (putBuffer with expectedHash), so a
// file that changed between the chunking pass and the copy is caught (CONTENT_CORRUPT) instead of
// storing a shard under a name its bytes do not have.
import { type FileHandle, open, rm, stat } from 'node:fs/promises';
import type { ChunkerParams } from '../datasets/chunker-params.js';
import { StrataError } from '../errors.js';
import { hashBuffer } from '../hash.js';
import type { DatasetFileOptions, DatasetIngest, DatasetStreamOptions, FetchOutcome, FetchSource, PutOptions, PutResult } from '../ports/content-store.js';
import type { ContentHash } from '../types.js';
import { type ChunkStaging, chunkFile, type FileChunk } from './chunk-file.js';
import { ChunkSession } from './chunk-session.js';
import type { PackEntry } from './local-content-store-pack.js';

/** Unstaged shards stored concurrently (each a read-back and a put). */
const SHARDS_IN_FLIGHT = 4;

export interface ShardSink {
  has(hash: ContentHash): Promise<boolean>;
  putBuffer(data: Uint8Array, options?: Omit<PutOptions, 'onProgress'>): Promise<PutResult>;
  /** where the chunking worker may write new shards, and how that pack is then taken in */
  packs?: {
    staging(): ChunkStaging;
    /** created per entry, in order */
    commit(packPath: string, entries: PackEntry[]): Promise<boolean[]>;
    discard(packPath: string): Promise<void>;
  };
}

export async function putDatasetFile(sink: ShardSink, absolutePath: string, params: ChunkerParams, options: DatasetFileOptions = {}): Promise<DatasetIngest> {
  if (options.maxBytes !== undefined) {
    const { size } = await stat(absolutePath);
    if (size > options.maxBytes) {
      throw new StrataError('BODY_TOO_LARGE', { message: `The content is larger than the limit of ${options.maxBytes} bytes`, details: { maxBytes: options.maxBytes } });
    }
  }
  const staging = sink.packs?.staging();
  let newShards = 0;
  let newBytes = 0;
  let chunked: Awaited<ReturnType<typeof chunkFile>>;
  try {
    chunked = await chunkFile(absolutePath, params, staging === undefined ? {} : { stage: staging });
  } catch (error) {
    if (staging !== undefined) await sink.packs!.discard(staging.packPath);
    throw error;
  }
  if (staging !== undefined) {
    const entries = chunked.chunks.flatMap((c) => (c.packOffset === undefined ? [] : [{ hash: c.hash, offset: c.packOffset, size: c.size }]));
    const created = await sink.packs!.commit(staging.packPath, entries);
    for (const [i, entry] of entries.entries()) {
      if (created[i] !== true) continue;
      newShards += 1;
      newBytes += entry.size;
    }
  }
  // Distinct chunks the pack does not hold: a repeated chunk is stored (or found) once.
  const pending = new Map<ContentHash, FileChunk>();
  for (const chunk of chunked.chunks) if (chunk.packOffset === undefined && !pending.has(chunk.hash)) pending.set(chunk.hash, chunk);
  for (const chunk of chunked.chunks) if (chunk.packOffset !== undefined) pending.delete(chunk.hash);
  const queue = [...pending.entries()];
  const handle = queue.length === 0 ? null : await open(absolutePath, 'r');
  try {
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        const [hash, chunk] = next;
        if (await sink.has(hash)) continue;
        const stored = await sink.putBuffer(await readRange(handle!, chunk.offset, chunk.size), { expectedHash: hash });
        if (stored.created) {
          newShards += 1;
          newBytes += chunk.size;
        }
      }
    };
    await Promise.all(Array.from({ length: SHARDS_IN_FLIGHT }, worker));
  } finally {
    await handle?.close();
  }
  if (options.consume === true) await rm(absolutePath, { force: true });
  return {
    hash: chunked.hash,
    size: chunked.size,
    shards: chunked.chunks.map((c) => ({ hash: c.hash, size: c.size })),
    newShards,
    newBytes,
  };
}

/**
 * A stream (an upload) cut as it arrives (chunk-session.ts); every new chunk, however small, goes to
 * the pack, since there is no file to read a small one back from. BODY_TOO_LARGE past maxBytes, and
 * nothing is stored. `copyPath`: every byte is also written there (kept-copies.ts; the caller removes it).
 */
export async function putDatasetStream(
  packs: NonNullable<ShardSink['packs']>,
  source: AsyncIterable<Uint8Array>,
  params: ChunkerParams,
  maxBytes: number,
  expect?: DatasetStreamOptions['expect'],
  copyPath?: string,
): Promise<DatasetIngest> {
  return ingestSession(packs, params, expect, copyPath, async (session) => {
    let size = 0;
    for await (const piece of source) {
      size += piece.length;
      if (size > maxBytes) {
        throw new StrataError('BODY_TOO_LARGE', { message: `The content is larger than the limit of ${maxBytes} bytes`, details: { maxBytes } });
      }
      await session.write(piece);
    }
  });
}

/**
 * putDatasetStream of a GET's body, fetched by the chunking thread itself (ChunkSession.fetch). An
 * answer other than 2xx stores nothing (`ingest` null); a body cut midway keeps its whole shards.
 */
export async function putDatasetFetch(
  packs: NonNullable<ShardSink['packs']>,
  source: FetchSource,
  params: ChunkerParams,
  expect?: DatasetStreamOptions['expect'],
  copyPath?: string,
): Promise<{ ingest: DatasetIngest | null; fetched: FetchOutcome }> {
  let fetched: FetchOutcome | undefined;
  const refused = new Error('not a 2xx answer');
  try {
    const ingest = await ingestSession(packs, params, expect, copyPath, async (session) => {
      fetched = await session.fetch(source);
      // Nothing was fed: nothing to keep.
      if (fetched.kind === 'status') throw refused;
    });
    return { ingest, fetched: fetched! };
  } catch (error) {
    if (error === refused) return { ingest: null, fetched: fetched! };
    throw error;
  }
}

async function ingestSession(
  packs: NonNullable<ShardSink['packs']>,
  params: ChunkerParams,
  expect: DatasetStreamOptions['expect'] | undefined,
  copyPath: string | undefined,
  feed: (session: ChunkSession) => Promise<void>,
): Promise<DatasetIngest> {
  const staging = { ...packs.staging(), minBytes: 1, ...(copyPath === undefined ? {} : { copyPath }) };
  // Bytes that must be a known manifest are cut at its shards and each piece checked against its
  // shard: no cut search and one BLAKE3 pass instead of two (the whole-content hash would repeat what
  // the shard hashes and the manifest's own hash already prove). A pull of 500 MiB spent about half
  // its chunking thread's time on those.
  const session = await ChunkSession.open(params, expect === undefined ? { stage: staging } : { stage: staging, cuts: expect.shards.map((shard) => shard.size) });
  let chunked: Awaited<ReturnType<ChunkSession['end']>>;
  try {
    await feed(session);
    chunked = await session.end();
  } catch (error) {
    await session.abort();
    await packs.discard(staging.packPath);
    throw error;
  }
  const entries = chunked.chunks.flatMap((c) => (c.packOffset === undefined ? [] : [{ hash: c.hash, offset: c.packOffset, size: c.size }]));
  const created = await packs.commit(staging.packPath, entries);
  let newShards = 0;
  let newBytes = 0;
  for (const [i, entry] of entries.entries()) {
    if (created[i] !== true) continue;
    newShards += 1;
    newBytes += entry.size;
  }
  return { hash: chunked.hash ?? matched(chunked.chunks, expect!), size: chunked.size, shards: chunked.chunks.map((c) => ({ hash: c.hash, size: c.size })), newShards, newBytes };
}

/** `expect.hash` when the pieces are exactly its shards, else the hash of the first that is not. */
function matched(chunks: FileChunk[], expect: NonNullable<DatasetStreamOptions['expect']>): ContentHash {
  for (const [i, chunk] of chunks.entries()) {
    const shard = expect.shards[i];
    if (shard === undefined || shard.hash !== chunk.hash || shard.size !== chunk.size) return chunk.hash;
  }
  // Fewer pieces than shards: the bytes ended early (what is missing hashes as nothing at all; a
  // manifest with shards never describes empty content).
  return chunks.length === expect.shards.length ? expect.hash : hashBuffer(new Uint8Array(0));
}

async function readRange(handle: FileHandle, offset: number, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size);
  let done = 0;
  while (done < size) {
    const { bytesRead } = await handle.read(buffer, done, size - done, offset + done);
    if (bytesRead === 0) {
      throw new StrataError('CONTENT_CORRUPT', { message: 'The file shrank while it was stored as a dataset', details: { offset, size } });
    }
    done += bytesRead;
  }
  return buffer;
}
