// Chunk and hash a file off the event loop: a chunking thread (chunk-threads.ts) reads the file in
// large blocks and returns the content-defined chunks (offset, size, BLAKE3) plus the whole file's
// BLAKE3 and size. Nothing holds the whole file in memory: the worker's block buffer is the only copy.
// chunk-session.ts does the same for a stream.
import { type ChunkerParams, chunkerParams, DEFAULT_CHUNKER_PARAMS } from '../datasets/chunker-params.js';
import { type ChunkerImplementation, jsChunkerModuleUrl, loadNativeChunker, nativeChunkerPath } from '../datasets/gear-chunker.js';
import { StrataError } from '../errors.js';
import type { ContentHash } from '../types.js';
import { acquireChunkThread, releaseChunkThread } from './chunk-threads.js';

/**
 * Read size inside the worker. bench/chunk-throughput.ts, 1 GiB file in page cache, quiet machine:
 * 1 MiB blocks 1.09 GB/s, 4 MiB 1.03 GB/s (1.08 vs 1.09 GB per CPU-second): the same within noise,
 * so the smaller buffer.
 */
export const CHUNK_FILE_BLOCK_BYTES = 1 << 20;

export interface FileChunk {
  /** byte offset of the chunk in the file */
  offset: number;
  size: number;
  hash: ContentHash;
  /** with `stage`: where this chunk's bytes were appended in the pack file */
  packOffset?: number;
}

export interface ChunkFileResult {
  params: ChunkerParams;
  chunks: FileChunk[];
  /** BLAKE3 of the whole file */
  hash: ContentHash;
  size: number;
  implementation: ChunkerImplementation;
  /** with `stage`: bytes written to the pack file (0: nothing new; the caller still removes it) */
  packBytes: number;
}

export interface ChunkFileOptions {
  /** force one implementation (tests, benchmarks); default: native when built */
  implementation?: ChunkerImplementation;
  blockBytes?: number;
  /**
   * Also append each new chunk of at least `minBytes` (no loose object under `objectsDir`, no row in the
   * object pack database `dbPath`) to the pack file `packPath`, from the buffer it was hashed from
   * (FileChunk.packOffset): storing a dataset then reads its file once and writes its new bytes once,
   * into one file. The caller owns the pack file (and fsyncs it before relying on it).
   */
  stage?: ChunkStaging;
}

export interface ChunkStaging {
  packPath: string;
  objectsDir: string;
  dbPath: string;
  minBytes: number;
  /** a stream session's bytes, all of them, also written here (created; closed, not fsynced, at the end) */
  copyPath?: string;
}

export interface WorkerFailure {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
}

export interface WorkerReply {
  chunks?: FileChunk[];
  hash?: ContentHash;
  size?: number;
  packBytes?: number;
  error?: WorkerFailure;
}

/**
 * Chunk `path` with `params` (validated: TypeError on misuse). A failure reading the file keeps its
 * errno shape (ENOENT, EACCES...), as HashWorkerPool.hashFile does.
 */
export async function chunkFile(path: string, params: ChunkerParams = DEFAULT_CHUNKER_PARAMS, options: ChunkFileOptions = {}): Promise<ChunkFileResult> {
  if (typeof path !== 'string' || path === '') throw new TypeError('chunkFile needs a file path');
  const checked = chunkerParams(params);
  const blockBytes = options.blockBytes ?? CHUNK_FILE_BLOCK_BYTES;
  if (!Number.isSafeInteger(blockBytes) || blockBytes < 4096 || blockBytes > 1 << 30) {
    throw new TypeError(`blockBytes must be an integer from 4096 to 2^30 (got ${blockBytes})`);
  }
  const addonPath = options.implementation === 'js' ? null : nativeChunkerPath();
  if (addonPath === null && options.implementation === 'native') throw new TypeError('the native chunker is not built; run scripts/env.sh');
  // Loaded here first so a stale or broken binary fails with a clear message before any thread starts.
  if (addonPath !== null) loadNativeChunker(addonPath);
  const reply = await runWorker({
    path,
    minSize: checked.minSize,
    avgSize: checked.avgSize,
    maxSize: checked.maxSize,
    addonPath,
    jsModuleUrl: jsChunkerModuleUrl(),
    blockBytes,
    stage: options.stage ?? null,
  });
  if (reply.error !== undefined) throw toError(reply.error);
  return {
    params: checked,
    chunks: reply.chunks ?? [],
    hash: reply.hash!,
    size: reply.size ?? 0,
    implementation: addonPath === null ? 'js' : 'native',
    packBytes: reply.packBytes ?? 0,
  };
}

async function runWorker(job: Record<string, unknown>): Promise<WorkerReply> {
  const thread = await acquireChunkThread();
  try {
    return (await thread.request({ op: 'file', ...job })) as WorkerReply;
  } finally {
    releaseChunkThread(thread);
  }
}

export function toError(failure: WorkerFailure): Error {
  if (failure.code !== undefined && failure.syscall !== undefined) {
    return Object.assign(new Error(failure.message), {
      code: failure.code,
      errno: failure.errno,
      syscall: failure.syscall,
      path: failure.path,
    });
  }
  return new StrataError('INTERNAL', { message: `Chunking failed: ${failure.message}`, details: { code: failure.code } });
}
